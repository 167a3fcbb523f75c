#!/bin/sh
# Plugin ABI: a plugin built for ABI 3, whose rows end before ABI 4's
# forward_backward (tests/plugin-abi3.c), still loads and runs: listed,
# benched with fwd+bwd the sum of its two calls (no fused call, whatever
# lies after its row), and audited with every row passing.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
so=$(plugin_so tests libabi3) || exit $?
shape=B=1,T=70,Hk=1,Hv=2,K=8,V=8

expect_status 0 list variants --plugin "$so" 'gdn.abi3.*'
expect_grep out "^gdn.abi3.f64 .* gdn .* cpu .* fwd,bwd,h0,gqa,tail .*$so\$" "listed with its plugin"

expect_status 0 bench --plugin "$so" --variant gdn.abi3.f64 --shape $shape --reps 2 --format csv
for d in fwd bwd fwd+bwd; do
    expect_grep out "^gdn\.abi3\.f64,cpu,$d,2,[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,[a-z]*,-\$" "row $d, no note"
done
grep -q 'forward_backward' out err && fail "bench called a forward_backward: $(cat out err)"

if expect_status 0 audit --plugin "$so" --variant gdn.abi3.f64 --shape $shape; then
    expect_grep out '^[1-9][0-9]* passed, 0 failed, 0 skipped$' "audit summary"
    expect_grep out '^gdn.abi3.f64 .* dk .* pass$' "a gradient gated and passed"
fi
finish
