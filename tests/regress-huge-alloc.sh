#!/bin/sh
# regress_huge_alloc: sizes that come from a file or the command line and
# cannot fit in memory (a tiny case whose K*V state needs hundreds of GB,
# a --shape with a 64 GB tensor) are refused before malloc, exit 2.
# Sanitizer builds used to abort on the failed allocation instead.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
# q, k, v of 2^17 bf16 each (768 KiB of data); the state is 2^34 elements.
st_write big.safetensors '{"__metadata__":{"op":"gdn"},"q":{"dtype":"BF16","shape":[1,1,1,131072],"data_offsets":[0,262144]},"k":{"dtype":"BF16","shape":[1,1,1,131072],"data_offsets":[262144,524288]},"v":{"dtype":"BF16","shape":[1,1,1,131072],"data_offsets":[524288,786432]},"g":{"dtype":"F32","shape":[1,1,1],"data_offsets":[786432,786436]},"beta":{"dtype":"F32","shape":[1,1,1],"data_offsets":[786436,786440]}}'
head -c 786440 /dev/zero >>big.safetensors
expect_status 0 inspect big.safetensors
for v in gdn.cpu.f64 gdn.cpu.chunk64.tf32; do
    expect_status 2 run --variant $v big.safetensors -o r.safetensors &&
        expect_grep err "cannot allocate the working arrays" "$v refuses the state"
done
expect_status 2 ref --no-cache big.safetensors -o ref.safetensors &&
    expect_grep err "MPFR numbers .* exceed this machine's memory or limits" "ref refuses the state"
expect_status 2 gen --op gdn --shape B=1,T=1,Hk=1,Hv=1,K=131072,V=131072 --dtype bf16 -o g.safetensors &&
    expect_grep err "tensor '[a-z0-9]*': [0-9]* bytes exceed this machine's memory or limits" "gen refuses"
finish
