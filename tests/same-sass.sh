#!/bin/sh
# bench/same-sass.sh on a scratch repository: a whitespace edit keeps the
# kernel's machine code, a changed constant or a new kernel does not, and
# bad revisions and sources are refused; symbols renumbered by a kernel
# added before it do not count, and launch bounds do.
set -u
srcdir=${top_srcdir:-.}
script=$srcdir/bench/same-sass.sh
NVCC=${NVCC:-}
test -n "$NVCC" || NVCC=$(command -v nvcc 2>/dev/null) || true
test -n "$NVCC" && test -x "$NVCC" || { echo "no nvcc: skipped"; exit 77; }
command -v git >/dev/null 2>&1 || { echo "no git: skipped"; exit 77; }
export NVCC
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-t-sass.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
git init -q . && git config user.name test && git config user.email test@example.invalid
cat >k.cu <<'CU'
__global__ void scale(float *x) { x[threadIdx.x] = x[threadIdx.x] * 2.f + 1.f; }
CU
git add k.cu && git commit -q -m base || fail "commit"

# expect STATUS WORD: runs the script on k.cu against HEAD
expect() {
    out=$(sh "$script" HEAD k.cu 2>&1)
    rc=$?
    test "$rc" -eq "$1" || fail "exit $rc, expected $1: $out"
    echo "$out" | grep -q "$2" || fail "no '$2' in: $out"
}

cat >k.cu <<'CU'
__global__ void scale(float *x)
{
    x[threadIdx.x]   =   x[threadIdx.x] * 2.f + 1.f;   /* reformatted */
}
CU
expect 0 '^same .*scale'
cat >k.cu <<'CU'
__global__ void scale(float *x) { x[threadIdx.x] = x[threadIdx.x] * 3.f + 1.f; }
CU
expect 1 '^DIFFER (text.*) .*scale'
cat >k.cu <<'CU'
__global__ void scale(float *x) { x[threadIdx.x] = x[threadIdx.x] * 2.f + 1.f; }
__global__ void shift(float *x) { x[threadIdx.x] += 1.f; }
CU
expect 1 '^only in the tree .*shift'
# a kernel before it renumbers the symbols, which changes no code
cat >k.cu <<'CU'
__global__ void first(float *x) { x[threadIdx.x] -= 1.f; }
__global__ void scale(float *x) { x[threadIdx.x] = x[threadIdx.x] * 2.f + 1.f; }
CU
expect 1 '^same .*scale'
expect 1 '^only in the tree .*first'
# launch bounds are in the kernel's attributes
cat >k.cu <<'CU'
__global__ void __launch_bounds__(128) scale(float *x) { x[threadIdx.x] = x[threadIdx.x] * 2.f + 1.f; }
CU
expect 1 '^DIFFER (.*info.*) .*scale'
out=$(sh "$script" no-such-rev k.cu 2>&1)
test $? -eq 2 || fail "unknown revision accepted: $out"
echo "$out" | grep -q "unknown revision" || fail "no reason: $out"
echo '__global__ void broken(float *x) { x[0] = ; }' >k.cu
out=$(sh "$script" HEAD k.cu 2>&1)
test $? -eq 2 || fail "a source that does not compile accepted: $out"
echo "$out" | grep -q "does not compile in the tree" || fail "no reason: $out"
out=$(sh "$script" HEAD 2>&1)
test $? -eq 2 || fail "missing files accepted"
echo "same-sass: all checks passed"
