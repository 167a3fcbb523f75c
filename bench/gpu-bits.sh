#!/bin/sh
# gpu-bits.sh: do two recaudit builds give the same bits?
#
#   bench/gpu-bits.sh OLD NEW [GLOB]
#
# Generates ten gdn cases chosen to reach the chunked kernels' edge paths,
# runs every variant matching GLOB (default 'gdn.cuda.chunk*') on each case
# with both binaries, and compares the output files byte for byte.  A
# kernel change that claims "same bits" (a faster schedule of the same
# arithmetic) is checked this way before it is benched.  The cases:
#
#   c1  B=2,T=300,Hk=2,Hv=4,K=64,V=48, bf16, h0: grouped heads, partial chunk
#   c2  B=1,T=200,K=V=128, raw keys with l2norm
#   c3  B=1,T=260,K=V=256, h0: chunk128's dstates reads Q and W in place
#   c4  B=1,T=150,Hk=2,Hv=4,K=50,V=37: 4-byte copies, off the full-tile path
#   c5  B=1,T=520,Hk=4,Hv=64,K=V=128, bf16, h0: 512 pass blocks, two per SM
#   c6  B=1,T=384,Hk=2,Hv=2,K=128,V=40, bf16, h0: a last column tile of 8
#   c7  B=1,T=129,K=V=128, bf16: a last chunk of one row in the production
#       head's shared-memory kernels
#   c8  B=1,T=150,Hk=2,Hv=6,K=50,V=37, raw keys with l2norm: the dq/dk
#       group sums' l2norm dot over a last partial warp of K
#   c9  B=1,T=300,Hk=1,Hv=2,K=V=128, bf16, h0: a last chunk of 44 rows,
#       which both token halves of the bf16 states pass take part in
#   c10 B=1,T=200,K=V=128, bf16, raw keys with l2norm: the bf16 kernels
#       must read the normalised q and k, not the stored bf16
#
# Prints a line per differing or failing run and a summary.  Exit status:
# 0 when every pair is identical, 1 otherwise, 77 when GLOB names CUDA
# variants and OLD sees no CUDA device.
set -u
test $# -ge 2 || { echo "usage: bench/gpu-bits.sh OLD NEW [GLOB]" >&2; exit 2; }
old=$1 new=$2 glob=${3:-'gdn.cuda.chunk*'}
case $glob in
*cuda*)
    "$old" --version | grep -q '1 device\|[0-9] devices' || { echo "no CUDA device: skipped"; exit 77; } ;;
esac
variants=$("$old" list --format csv variants "$glob" | sed -n '2,$s/,.*//p')
test -n "$variants" || { echo "no variant matches '$glob'" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-bits.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
runs=0 bad=0
while read -r name shape flags; do
    "$old" gen --op gdn --shape "$shape" $flags -o "$work/$name.safetensors" >/dev/null ||
        { echo "$name: gen failed"; exit 1; }
    for v in $variants; do
        runs=$((runs + 1))
        for side in old new; do
            eval bin=\$$side
            "$bin" run --variant "$v" "$work/$name.safetensors" -o "$work/$side.safetensors" \
                >"$work/$side.log" 2>&1 || { echo "$name $v: $side failed: $(tail -n 1 "$work/$side.log")"; }
        done
        cmp -s "$work/old.safetensors" "$work/new.safetensors" || { bad=$((bad + 1)); echo "$name $v: DIFFER"; }
        rm -f "$work/old.safetensors" "$work/new.safetensors"
    done
done <<EOF
c1 B=2,T=300,Hk=2,Hv=4,K=64,V=48 --dtype bf16 --h0 --seed 3
c2 B=1,T=200,Hk=1,Hv=2,K=128,V=128 --l2norm --regime raw-keys --seed 5
c3 B=1,T=260,Hk=1,Hv=2,K=256,V=256 --h0 --seed 7
c4 B=1,T=150,Hk=2,Hv=4,K=50,V=37 --seed 9
c5 B=1,T=520,Hk=4,Hv=64,K=128,V=128 --dtype bf16 --h0 --seed 11
c6 B=1,T=384,Hk=2,Hv=2,K=128,V=40 --dtype bf16 --h0 --seed 13
c7 B=1,T=129,Hk=1,Hv=2,K=128,V=128 --dtype bf16 --seed 15
c8 B=1,T=150,Hk=2,Hv=6,K=50,V=37 --l2norm --regime raw-keys --seed 21
c9 B=1,T=300,Hk=1,Hv=2,K=128,V=128 --dtype bf16 --h0 --seed 17
c10 B=1,T=200,Hk=1,Hv=2,K=128,V=128 --dtype bf16 --l2norm --regime raw-keys --seed 19
EOF
echo "bits: $runs runs, $bad differ"
test "$bad" -eq 0
