#!/bin/sh
# quick's gdn rows are `recaudit pairs`'s covering array, and quick covers
# every pair of the feature matrix but the one combination no row may have
# (raw-keys & big-beta, src/audit/gdn_matrix.c says why): the size x size
# pairs too (K>128 & T>256 and the like, the generator's second phase).
# Reproducible from the command, and a suite edited by hand that loses a
# pair fails here.  `list suites` shows the coverage.
. "${top_srcdir:-.}/tests/cli-lib.sh"

quick=${top_srcdir:-.}/data/suites/quick.tsv
expect_status 0 pairs || finish
grep '^gdn	' "$quick" >want
cmp -s out want || fail "quick's gdn rows differ from 'recaudit pairs' (regenerate them)"
test "$(wc -l <out)" -ge 30 || fail "fewer than 30 covering rows"

expect_status 1 pairs --suite quick
head -1 out >cover
grep -q '^quick: gdn pairs covered [0-9]* of [0-9]* ([0-9]* excluded' cover ||
    fail "coverage line: $(cat cover)"
set -- $(sed 's/.*covered \([0-9]*\) of \([0-9]*\) (\([0-9]*\) excluded.*/\1 \2 \3/' cover)
test "$1" -eq "$(($2 - $3))" || fail "quick covers $1 of $2 pairs with $3 excluded: some allowed pair is missing"
sed 1d out | grep -v '(excluded' >missing
test -s missing && fail "pairs quick misses that are not excluded: $(cat missing)"
# Nothing is excluded by cost: the one excluded pair is the one not allowed.
test "$3" -eq 1 || fail "quick excludes $3 pairs (only raw-keys & big-beta may be)"
sed 1d out >missed
printf 'raw-keys & big-beta (excluded: not allowed)\n' >want
cmp -s missed want || fail "quick misses: $(cat missed)"
# The dearest pairs are covered: a row with K > 128 and T > 256, one with
# Hv/Hk >= 8 and B >= 2.
grep '^gdn	' "$quick" | grep -q 'T=26[0-9],.*K=256' || fail "no quick row has K>128 and T>256"
grep '^gdn	' "$quick" | tr '=,' '  ' |
    awk '$3 >= 2 && $9 / $7 >= 8 { found = 1 } END { exit !found }' ||
    fail "no quick row has Hv/Hk>=8 and B>=2"

# A suite of one row covers that row's pairs: 15 features, C(15,2) = 105.
printf 'op\tshape\tregime\tdtype\tdirection\tseed\tflags\ngdn\tB=1,T=24,Hk=1,Hv=1,K=16,V=16\tdefault\tf32\tfwd+bwd\t1\t-\n' >one.tsv
expect_status 1 pairs --suite one.tsv
expect_grep out '^one.tsv: gdn pairs covered 105 of ' "one row covers 105 pairs"

expect_status 0 list suites
expect_grep out '^quick .*gdn [0-9]*/[0-9]* pairs' "list suites: quick's coverage"
expect_status 2 pairs --op scan.linear --suite quick
finish
