#!/bin/sh
# regress_class_picks_gates: the precision class a variant declares picks its
# gates, not its name.  The example plugin (f64 arithmetic, declaring f64)
# registered as gdn.mykernel.chunk64.tf32 is gated by the f64 rows, so its
# planted dk defect fails however the name reads; check takes the class
# from the registered variant or --class, and a named variant it cannot
# class fails ungated.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
so=$(plugin_so examples/plugin libgdnexample_tf32name) || exit $?
bad=$(plugin_so examples/plugin libgdnexample_tf32name_defect) || exit $?

RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE

expect_status 0 list variants --plugin "$so" 'gdn.mykernel.*'
expect_grep out '^gdn.mykernel.chunk64.tf32 .* f64 ' "listed with its declared class"

# validate: every row carries the class, the gates are the f64 rows (1e-12,
# 1e-11: data/gates.tsv), and the sound kernel passes them.
expect_status 0 validate --suite quick --plugin "$so" --variant 'gdn.mykernel.*' --format csv
expect_grep out '^variant,class,shape,' "csv header has the class"
expect_grep out '^gdn.mykernel.chunk64.tf32,f64,.*,dk,rel_rms,[^,]*,<= 1e-12,pass$' "dk gated by the f64 class"
grep '^gdn.mykernel' out | grep -v '^gdn.mykernel.chunk64.tf32,f64,' >other
test -s other && fail "rows without the f64 class: $(head -n 3 other)"

# The defect (dk off by a sign in one term: relative error far above 1e-12
# and below nothing the tf32 name could have bought) fails on dk.
expect_status 1 validate --suite quick --plugin "$bad" --variant 'gdn.mykernel.*'
expect_grep out '^gdn.mykernel.chunk64.tf32  *f64 .* dk .* FAIL$' "defect caught under the f64 class"

# check: a result whose metadata names the plugin's variant.
expect_status 0 gen --op gdn --shape B=1,T=8,Hk=1,Hv=2,K=4,V=4 --seed 5 -o c.safetensors
expect_status 0 run --plugin "$so" --variant gdn.mykernel.chunk64.tf32 c.safetensors -o r.safetensors
expect_status 0 check c.safetensors r.safetensors --plugin "$so"
expect_grep out '^gates of gdn.mykernel.chunk64.tf32 (class f64): [1-9][0-9]* passed, 0 failed' "class of the registered variant"
expect_grep out '^o  *f64 ' "metrics row shows the class"
# Not registered (no --plugin): no class, so no verdict but a FAIL per tensor.
expect_status 1 check c.safetensors r.safetensors
expect_grep out 'no gate in .* covers op gdn, class none (give --class), variant gdn.mykernel.chunk64.tf32' "unclassed fails"
# --class supplies it; one contradicting the registered declaration is refused.
expect_status 0 check c.safetensors r.safetensors --class f64
expect_status 2 check c.safetensors r.safetensors --plugin "$so" --class tf32 &&
    expect_grep err 'contradicts variant gdn.mykernel.chunk64.tf32, which declares precision class f64' "contradiction refused"
expect_status 2 check c.safetensors r.safetensors --class fp32 &&
    expect_grep err "'fp32' is not a precision class" "unknown class refused"
finish
