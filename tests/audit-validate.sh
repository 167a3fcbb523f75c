#!/bin/sh
# The quick suite: every built-in CPU variant passes every gate (make check
# runs it with the MPFR references; they are cached in $RECAUDIT_CACHE).
. "${top_srcdir:-.}/tests/cli-lib.sh"

start=$(date +%s)
expect_status 0 validate --suite quick --json quick.json
end=$(date +%s)
expect_grep out '^[1-9][0-9]* passed, 0 failed, [0-9]* skipped$' "quick suite summary"
grep '^FAIL' out >&2
echo "validate --suite quick: $(tail -n 1 out) in $((end - start)) s" >&2
expect_grep quick.json '"failed": 0,' "JSON summary"
finish
