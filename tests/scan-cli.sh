#!/bin/sh
# The scan family from the command line: gen for every regime, ref,
# gradcheck (>= 30 digits) with the default shapes, refusals naming the
# field, and validate --suite quick --variant 'scan.*'.
. "${top_srcdir:-.}/tests/cli-lib.sh"

RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE

for spec in scan.linear:B=1,T=5,D=2:default scan.linear:B=1,T=5,D=2:rotation \
    scan.linear:B=1,T=5,D=2:strong-decay scan.affine:B=1,T=5,N=1,k=2,v=1:default \
    scan.affine:B=1,T=5,N=1,k=4,v=2:rotation scan.affine:B=1,T=5,N=1,k=2,v=2:rotation:0.8 scan.affine:B=1,T=5,N=1,k=2,v=1:rotation-near-unit \
    scan.affine:B=1,T=5,N=1,k=1,v=8:strong-decay scan.log:B=1,T=5,D=2:default \
    scan.log:B=1,T=5,D=2:strong-decay; do
    op=${spec%%:*}
    rest=${spec#*:}
    shape=${rest%%:*}
    regime=${rest#*:}  # may carry a parameter: rotation:0.8
    expect_status 0 gen --op "$op" --shape "$shape" --regime "$regime" -o c.safetensors &&
        expect_status 0 ref c.safetensors -o r.safetensors &&
        expect_grep out 'certified: yes' "$op $regime certified"
done

for op in scan.linear scan.affine scan.log; do
    for mode in elementwise directional; do
        expect_status 0 gradcheck --op "$op" --mode $mode &&
            expect_grep out "min [3-6][0-9]\.[0-9] digits (threshold 30): pass" "$op $mode >= 30 digits"
    done
done

expect_status 2 gen --op scan.affine --shape B=1,T=4,N=1,k=3,v=1 -o x.safetensors &&
    expect_grep err "k=3 is outside the envelope" "k outside the envelope"
expect_status 2 gen --op scan.affine --shape B=1,T=4,N=1,k=2,v=32 -o x.safetensors &&
    expect_grep err "v=32 is outside the envelope" "v outside the envelope"
expect_status 2 gen --op scan.log --shape B=1,T=4,N=2 -o x.safetensors &&
    expect_grep err "unknown key 'N'" "log shapes take D"

expect_status 0 validate --suite quick --variant 'scan.*' &&
    expect_grep out '^[1-9][0-9]* passed, 0 failed, [0-9]* skipped$' "validate quick scan.*"
finish
