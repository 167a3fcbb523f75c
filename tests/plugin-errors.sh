#!/bin/sh
# Plugin ABI: the loader refuses broken plugins with one line naming the
# file and the problem, exit 2 (bad ABI version, an ABI 2 plugin, a plugin
# built for the next ABI, no ABI symbol, a bad variant row, a file that is
# not there or not a shared object).
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
bad_abi=$(plugin_so tests libbadabi) || exit $?
old_abi=$(plugin_so tests liboldabi) || exit $?
next_abi=$(plugin_so tests libnextabi) || exit $?
no_abi=$(plugin_so tests libnoabi) || exit $?
bad_row=$(plugin_so tests libbadrow) || exit $?

expect_status 2 list variants --plugin "$bad_abi" &&
    expect_grep err "plugin $bad_abi: ABI version 1004, this recaudit expects 3 to 4 (rebuild" "ABI mismatch"
# A plugin built for ABI 2 is told what changed.
expect_status 2 list variants --plugin "$old_abi" &&
    expect_grep err "plugin $old_abi: ABI version 2, this recaudit expects 3 to 4 .*: ABI 3 passes each function its own row (self) and a data pointer" "ABI 2 refused with the reason"
# ABI 3 still loads (tests/plugin-abi3.sh); the next one does not.
expect_status 2 list variants --plugin "$next_abi" &&
    expect_grep err "plugin $next_abi: ABI version 5, this recaudit expects 3 to 4 (rebuild" "ABI 5 refused"
expect_status 2 validate --plugin "$no_abi" &&
    expect_grep err "plugin $no_abi: no symbol 'ra_plugin_abi_version'" "missing ABI symbol"
expect_status 2 list variants --plugin "$bad_row" &&
    expect_grep err "plugin $bad_row: ra_plugin_register failed (bad input): variant name 'gdn.bad name'" "bad row"
expect_status 2 audit --variant '*' --shape B=1,T=8,Hk=1,Hv=1,K=2,V=2 --plugin ./nonexistent.so &&
    expect_grep err "plugin ./nonexistent.so: cannot load: " "missing file"
echo "not an object" >fake.so
expect_status 2 run --variant x --plugin fake.so -o r.safetensors c.safetensors &&
    expect_grep err "plugin fake.so: cannot load: " "not a shared object"
for f in err; do
    test "$(wc -l <$f)" -eq 1 || fail "expected one error line, got: $(cat $f)"
done
finish
