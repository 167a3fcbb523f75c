#!/bin/sh
# validate's reference prefetch (src/audit/validate.c) changes nothing but
# the time: the same verdict table and the same cache entries as without
# it.  The prefetching child computes the references of the last rows
# into the cache while validate runs the first ones; a child that computed
# the wrong reference, or left a partial or stray file, shows here.
. "${top_srcdir:-.}/tests/cli-lib.sh"

printf 'op\tshape\tregime\tdtype\tdirection\tseed\tflags\n' >s.tsv
printf 'gdn\tB=1,T=24,Hk=1,Hv=1,K=16,V=16\tdefault\tf32\tfwd+bwd\t1\t-\n' >>s.tsv
printf 'gdn\tB=1,T=72,Hk=1,Hv=2,K=16,V=32\tstrong-decay\tbf16\tfwd+bwd\t2\th0\n' >>s.tsv
printf 'scan.linear\tB=1,T=40,D=4\tdefault\tf32\tfwd+bwd\t3\t-\n' >>s.tsv
printf 'gdn\tB=1,T=136,Hk=1,Hv=1,K=32,V=16\tnear-unit\tf32\tfwd\t4\tno-dht\n' >>s.tsv
printf 'gdn\tB=2,T=40,Hk=1,Hv=1,K=16,V=16\tdefault\tf16\tfwd+bwd\t5\tl2norm\n' >>s.tsv

mkdir plain pre
RECAUDIT_CACHE=$work/plain RECAUDIT_NO_PREFETCH=1 \
    expect_status 0 validate --variant '*.cpu.*' --suite s.tsv || finish
mv out plain.out
RECAUDIT_CACHE=$work/pre expect_status 0 validate --variant '*.cpu.*' --suite s.tsv || finish
cmp -s plain.out out || fail "the verdicts differ with the prefetch: $(diff plain.out out | head -5)"
(cd plain && ls) >plain.ls
(cd pre && ls) >pre.ls
test "$(wc -l <plain.ls)" -ge 5 || fail "fewer than 5 cached references: $(cat plain.ls)"
cmp -s plain.ls pre.ls || fail "the cache entries differ: $(diff plain.ls pre.ls)"
for f in $(cat plain.ls); do
    cmp -s "plain/$f" "pre/$f" || fail "cache entry $f differs with the prefetch"
done
finish
