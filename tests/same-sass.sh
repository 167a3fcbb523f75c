#!/bin/sh
# bench/same-sass.sh on a scratch repository: a whitespace edit keeps the
# kernel's machine code, a changed constant or a new kernel does not, and
# bad revisions and sources are refused; symbols renumbered by a kernel
# added before it do not count, and launch bounds do; a compile that gives
# other code is repeated until the sides agree.
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
expect 1 '^DIFFER (text; in 5 compiles each, forms: 1 in the tree, 1 at HEAD) .*scale'
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
# nvcc that gives one compile other code: the kernels are compiled again
# until the two sides agree
cat >k.cu <<'CU'
#ifdef FLAKY
#define SCALE 3.f
#else
#define SCALE 2.f
#endif
__global__ void scale(float *x) { x[threadIdx.x] = x[threadIdx.x] * SCALE + 1.f; }
CU
git commit -q -a -m flaky || fail "commit"
cat >"$work/flaky-nvcc" <<SH
#!/bin/sh
# compile number FLAKY_CALL (counted in $work/calls) gets -DFLAKY
n=\$(( \$(cat "$work/calls" 2>/dev/null || echo 0) + 1 ))
echo "\$n" >"$work/calls"
test "\$n" = "\$FLAKY_CALL" && exec "$NVCC" -DFLAKY "\$@"
exec "$NVCC" "\$@"
SH
chmod +x "$work/flaky-nvcc"
# flaky CALL STATUS WORD: the script with FLAKY_CALL=CALL
flaky() {
    rm -f "$work/calls"
    out=$(FLAKY_CALL=$1 NVCC="$work/flaky-nvcc" sh "$script" HEAD k.cu 2>&1)
    rc=$?
    test "$rc" -eq "$2" || fail "FLAKY_CALL=$1: exit $rc, expected $2: $out"
    echo "$out" | grep -q "$3" || fail "FLAKY_CALL=$1: no '$3' in: $out"
}
flaky 2 0 '^same (nvcc varies; in 2 compiles each, forms: 1 in the tree, 2 at HEAD) .*scale'
flaky 0 0 '^same  *k.cu'
test "$(cat "$work/calls")" = 2 || fail "agreeing compiles were repeated: $(cat "$work/calls") compiles"
rm -f "$work/calls"
out=$(FLAKY_CALL=2 NVCC="$work/flaky-nvcc" sh "$script" -r 0 HEAD k.cu 2>&1)
test $? -eq 1 || fail "-r 0 retried: $out"
echo "$out" | grep -q '^DIFFER (text) .*scale' || fail "-r 0: $out"
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
