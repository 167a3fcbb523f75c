#!/bin/sh
# CLI: --help, --version, unknown commands and options, list.
. "${top_srcdir:-.}/tests/cli-lib.sh"

expect_status 0 --help && expect_grep out '^  gen ' "--help lists gen"
expect_status 0 --version && expect_grep out '^recaudit [0-9]' "--version" &&
    expect_grep out '^MPFR ' "--version names MPFR"
expect_status 2 && expect_grep err '^usage: recaudit' "no command: usage on stderr"
expect_status 2 frobnicate && expect_grep err "unknown command 'frobnicate'" "unknown command"

for cmd in gen inspect list; do
    expect_status 0 $cmd --help &&
        expect_grep out "^usage: recaudit $cmd" "$cmd --help: usage" &&
        expect_grep out '^example:' "$cmd --help: an example"
    expect_status 0 help $cmd && expect_grep out "^usage: recaudit $cmd" "help $cmd"
    expect_status 2 $cmd --no-such-option &&
        expect_grep err "unknown option '--no-such-option'" "$cmd: unknown option"
    expect_grep err "recaudit $cmd --help" "$cmd: usage hint"
done

# list: ops and regimes, any format, glob filter, bad kinds and formats.
expect_status 0 list ops && expect_grep out '^gdn ' "list ops names gdn"
expect_status 0 list regimes && expect_grep out '^default  *gdn ' "list regimes" &&
    expect_grep out '^raw-keys ' "list regimes has raw-keys"
expect_status 0 list --format csv regimes 'strong-*' &&
    expect_grep out '^regime,op,doc$' "csv header" &&
    expect_grep out '^strong-decay,gdn,' "glob keeps strong-decay"
test "$(grep -vc '^strong-' out)" -eq 1 || fail "list regimes 'strong-*' should give the header and strong-* rows only"
expect_status 0 list regimes --format=json && expect_grep out '^  {"regime": "default", "op": "gdn", ' "json rows"
expect_status 2 list
expect_status 2 list nothing && expect_grep err "unknown kind 'nothing'" "unknown kind"
expect_status 2 list --format xml ops && expect_grep err "'xml'" "bad format named"
expect_status 2 list --format && expect_grep err "'--format' needs a value" "missing value"

finish
