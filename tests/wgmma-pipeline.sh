#!/bin/sh
# ptxas keeps the wgmma pipeline of every CUDA source that issues wgmma:
# no "Potential Performance Loss" serialisation (C7510: a wgmma pipeline
# crossing a function call; C7514: a register of a wgmma in flight read
# by another instruction) and no wait injected by the compiler (C7517).
# Either keeps the bits and silently costs the overlap the code was
# written for, so only ptxas -v says so.  Skips without nvcc.
set -u
srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
NVCC=${NVCC:-}
test -n "$NVCC" || NVCC=$(command -v nvcc 2>/dev/null) || true
test -n "$NVCC" && test -x "$NVCC" || { echo "no nvcc: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-t-wgmma.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

# The sources that reach wgmma: through x3w_mm (src/gpu/x3_wgmma.cuh).
files=$(grep -l -E 'x3w_mm[<(]' "$srcdir"/src/gpu/*.cu)
test -n "$files" || { echo "FAIL: no source calls x3w_mm"; exit 1; }
status=0
for f in $files; do
    out=$("$NVCC" -cubin -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
        -I"$srcdir" -I"$srcdir/src" -I"$srcdir/include" -I"$builddir" -Xptxas -v \
        -o "$work/k.cubin" "$f" 2>&1) || { echo "FAIL: $f does not compile:"; echo "$out"; exit 1; }
    bad=$(echo "$out" | grep -E '\((C7510|C7514|C7517)\)')
    if test -n "$bad"; then
        echo "FAIL: $f: ptxas serialises wgmma:"
        echo "$bad"
        status=1
    else
        echo "ok: $f ($(echo "$out" | grep -c 'Compiling entry function') kernels)"
    fi
done
exit $status
