#!/bin/sh
# regress_tmp_symlink: the temporary a file is written to is made by mkstemp
# (O_EXCL, unpredictable name), so a symbolic link planted where the old
# predictable name "OUT.tmp.<pid>" would be cannot redirect the write into
# an unrelated file.  exec keeps the shell's pid, so $$ is recaudit's pid.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
echo precious >victim
RECAUDIT=$RECAUDIT sh -c 'ln -s victim out.safetensors.tmp.$$ &&
    exec "$RECAUDIT" gen --op gdn --shape B=1,T=8,Hk=1,Hv=1,K=4,V=4 -o out.safetensors' \
    >out 2>err || fail "gen with a planted link: $(cat err)"
test "$(cat victim)" = precious || fail "the file behind the planted link was overwritten"
expect_status 0 inspect out.safetensors
# Nothing but the inputs, the planted link and the output is left.
left=$(ls -A | grep -v -e '^victim$' -e '^out.safetensors' -e '^out$' -e '^err$')
test -z "$left" || fail "files left behind: $left"
finish
