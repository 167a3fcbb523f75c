#!/bin/sh
# bench/ref-scaling.sh: thread scaling and production-shape time of the
# certified gdn MPFR reference (forward + backward, p = 128 and the 2p check).
#
# usage: bench/ref-scaling.sh RECAUDIT [THREADS...]
#   RECAUDIT  the recaudit binary (on a host without MPFR/GSL/jansson build it
#             with ./configure --enable-static-deps)
#   THREADS   thread counts for the scaling runs (default: 1 2 4 8 16)
# Environment: SCALING_SHAPE (default B=1,T=128,Hk=16,Hv=32,K=128,V=128: 32
#   independent heads, so 16 threads have work), PRODUCTION_SHAPE (default
#   B=1,T=4096,Hk=16,Hv=32,K=128,V=128; empty to skip), RUN_PRODUCTION=0 to skip.
# Prints one line per thread count (wall seconds, speedup over the first
# count) and the production run's wall time and peak memory.
set -eu

bin=${1:?usage: bench/ref-scaling.sh RECAUDIT [THREADS...]}
shift
threads=${*:-1 2 4 8 16}
scaling_shape=${SCALING_SHAPE:-B=1,T=128,Hk=16,Hv=32,K=128,V=128}
production_shape=${PRODUCTION_SHAPE-B=1,T=4096,Hk=16,Hv=32,K=128,V=128}
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export RECAUDIT_NO_PROGRESS=1

"$bin" --version
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"

# Wall seconds of `recaudit ref` on CASE with N threads (no cache: every run
# computes).
ref_seconds() {
    start=$(date +%s.%N)
    "$bin" ref "$1" -o "$work/ref.safetensors" --no-cache --threads "$2" >"$work/ref.out"
    end=$(date +%s.%N)
    echo "$start $end" | awk '{printf "%.2f", $2 - $1}'
}

"$bin" gen --op gdn --shape "$scaling_shape" --seed 1 -o "$work/scaling.safetensors"
echo "scaling: certified forward+backward, $scaling_shape"
printf '%8s %10s %8s\n' threads seconds speedup
base=
for n in $threads; do
    s=$(ref_seconds "$work/scaling.safetensors" "$n")
    base=${base:-$s}
    printf '%8s %10s %8s\n' "$n" "$s" "$(echo "$base $s" | awk '{printf "%.2f", $1 / $2}')"
done

if [ -n "$production_shape" ] && [ "${RUN_PRODUCTION:-1}" != 0 ]; then
    "$bin" gen --op gdn --shape "$production_shape" --dtype bf16 --seed 1 \
        -o "$work/production.safetensors"
    echo "production: certified forward+backward, $production_shape, all cores"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f 'wall %e s, peak memory %M KiB' \
            "$bin" ref "$work/production.safetensors" -o "$work/ref.safetensors" --no-cache
    else
        s=$(ref_seconds "$work/production.safetensors" "$(nproc)")
        cat "$work/ref.out"
        echo "wall $s s"
    fi
fi
