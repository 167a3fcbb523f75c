#!/bin/sh
# Plugin ABI: the example plugin built with a planted defect fails validate
# --suite quick, on dk, and the printed command reproduces the failure.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
so=$(plugin_so examples/plugin libgdnexample_defect) || exit $?

expect_status 1 validate --suite quick --plugin "$so" --variant 'gdn.example.*'
expect_grep out '^gdn.example.f64 .* dk .* FAIL$' "a failing dk row"
expect_grep out '^[0-9]* passed, [1-9][0-9]* failed, [0-9]* skipped$' "summary"
# The defect is in dk alone: outputs and the other gradients still pass.
expect_grep out '^gdn.example.f64 .* o  *rel_rms .* pass$' "o unaffected"
grep '^FAIL ' out | grep -v ' dk: ' >other
test -s other && fail "rows other than dk failed: $(cat other)"

# The first failure's reproduction command fails the same way.
cmd=$(sed -n 's/^  reproduce: recaudit //p' out | head -n 1)
case $cmd in
*"--plugin $so"*) ;;
*) fail "reproduction command lacks --plugin: $cmd" ;;
esac
# shellcheck disable=SC2086 # the command is a list of words without quoting needs
expect_status 1 $cmd && expect_grep out '^gdn.example.f64 *dk .* FAIL' "reproduced dk failure"
finish
