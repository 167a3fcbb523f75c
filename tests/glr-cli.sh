#!/bin/sh
# glr from the command line: gen (both decays, every regime), a certified
# reference, gradcheck at >= 30 digits under both decays, refusals.
. "${top_srcdir:-.}/tests/cli-lib.sh"

RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE

for regime in hymo long-memory zero-gate; do
    expect_status 0 gen --op glr --shape B=1,T=9,H=2,S=3,D=2 --regime $regime -o $regime.safetensors
done
expect_status 0 gen --op glr --shape B=1,T=9,H=2,S=3,D=2 --linear -o lin.safetensors
expect_status 0 inspect lin.safetensors && expect_grep out 'linear' "decay in the metadata"
if expect_status 0 ref hymo.safetensors; then
    expect_grep out '^dA_log ' "row for dA_log"
    expect_grep out 'certified: yes' "certified"
fi
for flag in "" --linear; do
    if expect_status 0 gradcheck --op glr $flag; then
        expect_grep out '^A_log ' "row for A_log"
        expect_grep out 'pass$' "verdict"
    fi
    expect_status 0 gradcheck --op glr $flag --mode directional --regime long-memory
done
expect_status 0 validate --suite quick --variant 'glr.*' && expect_grep out ' 0 failed, 0 skipped$' "glr quick rows pass"
expect_status 2 gen --op glr --shape B=1,T=9,H=2,S=3 -o x.safetensors && expect_grep err 'missing D' "shape field"
expect_status 2 gen --op glr --shape B=1,T=9,H=2,S=3,D=2 --regime default -o x.safetensors
expect_status 2 gen --op glr --shape B=1,T=9,H=2,S=3,D=2 --h0 -o x.safetensors
finish
