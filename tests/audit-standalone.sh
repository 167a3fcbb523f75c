#!/bin/sh
# A copied binary stands alone: with no RECAUDIT_DATA, no installed data
# and no ./data, it audits with the gates and suites compiled into it, and
# says so; an explicit RECAUDIT_DATA that lacks a file still fails.
. "${top_srcdir:-.}/tests/cli-lib.sh"

cp "$RECAUDIT" ./recaudit-copy || exit 99
RECAUDIT=$(pwd)/recaudit-copy
data=$RECAUDIT_DATA
unset RECAUDIT_DATA
mkdir empty && cd empty || exit 99

expect_status 0 list suites &&
    expect_grep out '^quick .*built-in copy of data/suites/quick.tsv$' "built-in quick suite" &&
    expect_grep out '^full .*built-in copy of data/suites/full.tsv$' "built-in full suite"
# The compiled-in copies are the source tree's files: validate passes with
# them, and the suite has the rows of data/suites/quick.tsv.
rows=$(grep -c -v -e '^#' -e '^op' -e '^$' "$data/suites/quick.tsv")
if expect_status 0 validate --suite quick --variant 'gdn.cpu.f32' --json v.json; then
    expect_grep out ' passed, 0 failed, 0 skipped$' "validate passes from the built-in data"
    expect_grep out "^validate: suite built-in copy of data/suites/quick.tsv ($rows cases)" "same rows"
    expect_grep v.json 'built-in copy of data/gates.tsv:' "gate notes name the built-in copy"
fi

# An explicit data directory is used alone: no silent fallback.
RECAUDIT_DATA=$(pwd) expect_status 2 validate --suite quick --variant 'gdn.cpu.f32' &&
    expect_grep err "gates.tsv not found (RECAUDIT_DATA=" "explicit directory, no fallback"
finish
