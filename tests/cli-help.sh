#!/bin/sh
# CLI: every command that `recaudit --help` lists has a help text, and every option it documents parses.
#
# The command list is read from `recaudit --help` itself, so a command added
# to the table without a help text (or with a help that fails) fails here.
# For each command: `CMD --help` and `help CMD` exit 0 with the same
# non-empty text opening with `usage: recaudit CMD`; every `--option`
# named in its options block is one the parser knows (run as
# `CMD --option=1 --help`, an option it does not know is "unknown option";
# a value it refuses or an option that takes none is not); every kind that
# `list --help` names lists at least one row.
. "${top_srcdir:-.}/tests/cli-lib.sh"

expect_status 0 --help || finish
sed -n '/^commands:$/,/^$/p' out | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' >commands
test -s commands || fail "recaudit --help lists no commands"
test "$(wc -l <commands)" -ge 14 || fail "recaudit --help lists $(wc -l <commands) commands, fewer than the 14 documented"

while read -r cmd; do
    if ! expect_status 0 "$cmd" --help; then
        continue
    fi
    test -s out || {
        fail "recaudit $cmd --help printed nothing"
        continue
    }
    head -n 1 out | grep -q "^usage: recaudit $cmd\( \|$\)" ||
        fail "recaudit $cmd --help does not open with 'usage: recaudit $cmd'"
    grep -q '^options:$' out || fail "recaudit $cmd --help has no options block"
    cp out help.txt
    expect_status 0 help "$cmd" && { cmp -s out help.txt || fail "'recaudit help $cmd' differs from '$cmd --help'"; }
    # The long options named at the start of the options block's lines.
    sed -n '/^options:$/,/^$/p' help.txt |
        sed -n 's/^  \(-[a-z], \)\{0,1\}\(--[a-z0-9][a-z0-9-]*\).*/\2/p' | sort -u >opts
    test -s opts || fail "recaudit $cmd --help documents no long option"
    grep -qx -e '--help' opts || fail "recaudit $cmd --help does not document --help"
    while read -r opt; do
        test "$opt" = --help && continue
        "$RECAUDIT" "$cmd" "$opt=1" --help >/dev/null 2>err
        if grep -q 'unknown option' err; then
            fail "recaudit $cmd --help documents $opt, which the parser does not know"
        fi
    done <opts
done <commands

# Every kind of `list` works.
expect_status 0 list --help &&
    sed -n '/^kinds:$/,/^$/p' out | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' >kinds
test "$(wc -l <kinds)" -ge 5 || fail "list --help names $(wc -l <kinds) kinds, fewer than 5"
while read -r kind; do
    expect_status 0 list "$kind" || continue
    test "$(wc -l <out)" -ge 3 || fail "recaudit list $kind printed no row"
done <kinds

finish
