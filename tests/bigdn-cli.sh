#!/bin/sh
# bigdn and bigdn.core from the command line: gen (every regime), a certified
# reference with every gradient, the check report's cos column for every
# tensor, gradcheck at >= 30 digits in both modes, seed 003's derivations,
# refusals, the registered CPU variants on the quick suite.
. "${top_srcdir:-.}/tests/cli-lib.sh"

RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE

for regime in default sana long-frame; do
    expect_status 0 gen --op bigdn --shape B=1,F=3,S=4,H=2,D=4 --regime $regime -o $regime.safetensors
    expect_status 0 gen --op bigdn.core --shape B=1,F=3,S=4,H=2,D=4 --regime $regime -o core-$regime.safetensors
done
expect_status 0 inspect sana.safetensors && expect_grep out 'k_scale' "k_scale in the metadata"
if expect_status 0 ref sana.safetensors; then
    expect_grep out 'certified: yes' "certified"
    for t in out dqkv dbeta ddecay dq_norm_w dk_norm_w; do
        expect_grep out "^$t " "row for $t"
    done
    # the reference judged against itself: every tensor has a cos column, 1
    if expect_status 0 check sana.safetensors sana.ref.safetensors --ref sana.ref.safetensors --format csv; then
        expect_grep out '^tensor,class,dtype,max_ulp,p99_ulp,max_ulp_rms,ulp_cls,rel_rms,max_rel,max_abs,cos,' "cos column"
        for t in out dqkv dbeta ddecay dq_norm_w dk_norm_w; do
            expect_grep out "^$t,-,f64,0,0,0,-,0,0,0,1," "$t: exact, cos 1"
        done
    fi
fi
expect_status 0 ref core-default.safetensors && expect_grep out '^dKr ' "row for dKr"
for op in bigdn bigdn.core; do
    if expect_status 0 gradcheck --op $op; then
        expect_grep out 'excluded$' "excluded column"
        expect_grep out 'pass$' "verdict"
    fi
    expect_status 0 gradcheck --op $op --mode directional --regime long-frame
done
expect_status 0 derive --op bigdn.core --out $work/d.md && expect_grep out 'total_dM_rev' "B-bar row"
expect_status 2 gen --op bigdn --shape B=1,F=3,S=4,H=2,D=3 -o x.safetensors && expect_grep err 'D=3 is odd' "odd D"
expect_status 2 gen --op bigdn --shape B=1,F=3,S=4,H=2 -o x.safetensors && expect_grep err 'missing D' "shape field"
expect_status 2 gen --op bigdn --shape B=1,F=3,S=4,H=2,D=4 --regime hymo -o x.safetensors
# The registered CPU variants: listed with their classes, and the quick
# suite's bigdn rows pass their gates (tests/t-bigdn-variants shows the gates
# failing a kernel that declares a finer class than its products have).
expect_status 0 list variants 'bigdn*' &&
    expect_grep out '^bigdn.core.cpu.f32.p2 .* bf16 ' "core p2 declares bf16"
expect_status 0 validate --suite quick --variant 'bigdn*' &&
    expect_grep out '^[1-9][0-9]* passed, 0 failed, 0 skipped$' "bigdn quick rows pass"
finish
