#!/bin/sh
# quick's gdn rows are `recaudit pairs`'s covering array, and quick covers
# every pair of the feature matrix, nothing excluded: the size x size pairs
# too (K>128 & T>256 and the like, the generator's second phase) and
# raw-keys & big-beta (its third, src/audit/gdn_matrix.c says why).
# Reproducible from the command, and a suite edited by hand that loses a
# pair fails here.  `list suites` shows the coverage.
. "${top_srcdir:-.}/tests/cli-lib.sh"

quick=${top_srcdir:-.}/data/suites/quick.tsv
expect_status 0 pairs || finish
grep '^gdn	' "$quick" >want
cmp -s out want || fail "quick's gdn rows differ from 'recaudit pairs' (regenerate them)"
test "$(wc -l <out)" -ge 30 || fail "fewer than 30 covering rows"

expect_status 0 pairs --suite quick
head -1 out >cover
# 939 pairs, by hand from docs/gdn.md's table: value counts 4 (K, V, T,
# Hv/Hk, gate, dtype), 3 (parameters, keys, beta) and 2 (Hk, B, l2norm,
# h0, dht, magnitude); a pair of features contributes the product of
# their counts, so the total is ((sum n)^2 - sum n^2) / 2 = (45^2 - 147)
# / 2 = 939.  Every one is covered: nothing excluded.
grep -q '^quick: gdn pairs covered 939 of 939$' cover || fail "coverage line: $(cat cover)"
sed 1d out >missed
test -s missed && fail "quick misses: $(cat missed)"
# The pair admitted last is in a row of its own: raw-keys & big-beta.
grep '^gdn	' "$quick" | cut -f3 | grep -q 'raw-keys.*big-beta' || fail "no quick row has raw-keys & big-beta"
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
