#!/bin/sh
# same-sass.sh: does a CUDA source compile to the same machine code as at a revision?
#
#   bench/same-sass.sh [-b BUILDDIR] REV FILE.cu...
#
# A refactor of a kernel (a helper pulled out, a loop reshaped, a file
# reformatted) that claims "same code" can be checked here, without a
# GPU, before bench/gpu-bits.sh checks its bits on one.  Each FILE (a
# path in the repository) is compiled twice with nvcc -cubin for $ARCH
# (default sm_90a): as it is in the working tree, and as it was at git
# revision REV (the whole tree at REV, from git archive, so its headers
# too).  Include paths are the tree's top, src and include, and BUILDDIR
# for config.h.  For every kernel the two cubins' .text (SASS) and
# .nv.info (registers, parameters, barriers) sections are compared byte
# for byte; PTX is not, since nvcc numbers PTX registers differently
# after edits that leave the SASS as it was.
#
# Prints a line per kernel (same, DIFFER, only at REV, only in the tree)
# and exits 0 when every kernel of every file is the same, 1 otherwise,
# 2 on bad usage or a failed compile, 77 without nvcc or readelf.
set -u
usage() { echo "usage: bench/same-sass.sh [-b BUILDDIR] REV FILE.cu..." >&2; exit 2; }
build=
while getopts b: opt; do
    case $opt in
    b) build=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
test $# -ge 2 || usage
rev=$1
shift
nvcc=${NVCC:-nvcc}
arch=${ARCH:-sm_90a}
command -v "$nvcc" >/dev/null 2>&1 || { echo "no nvcc: skipped"; exit 77; }
command -v readelf >/dev/null 2>&1 || { echo "no readelf: skipped"; exit 77; }
top=$(git rev-parse --show-toplevel 2>/dev/null) || { echo "not in a git repository" >&2; exit 2; }
git -C "$top" rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "unknown revision '$rev'" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-sass.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
mkdir "$work/old" && git -C "$top" archive "$rev" | tar -x -C "$work/old" || exit 2

# compile TREE FILE OUT: the cubin of FILE as TREE has it
compile() {
    test -f "$1/$2" || return 3
    "$nvcc" -cubin -O3 -std=c++17 -arch="$arch" -I"$1" -I"$1/src" -I"$1/include" \
        ${build:+-I"$build"} -o "$3" "$1/$2" >"$3.log" 2>&1
}
# kernels CUBIN: the mangled names of its kernels, from their .text sections
kernels() {
    readelf -S -W "$1" 2>/dev/null | sed -n 's/^ *\[ *[0-9]*\] \.text\.\([^ ]*\) .*/\1/p' | sort
}
# dump CUBIN SECTION: the section's bytes as readelf prints them
dump() { readelf -x "$2" "$1" 2>/dev/null | sed -n 's/^ *0x[0-9a-f]* //p'; }

status=0
for f in "$@"; do
    case $f in /*) f=${f#"$top"/} ;; esac
    compile "$top" "$f" "$work/new.cubin" ||
        { echo "$f: does not compile in the tree: $(tail -n 3 "$work/new.cubin.log" 2>/dev/null)" >&2; exit 2; }
    compile "$work/old" "$f" "$work/old.cubin" ||
        { echo "$f: does not compile at $rev: $(tail -n 3 "$work/old.cubin.log" 2>/dev/null)" >&2; exit 2; }
    kernels "$work/old.cubin" >"$work/old.k"
    kernels "$work/new.cubin" >"$work/new.k"
    for k in $(sort -u "$work/old.k" "$work/new.k"); do
        if ! grep -qx "$k" "$work/new.k"; then
            verdict="only at $rev"
        elif ! grep -qx "$k" "$work/old.k"; then
            verdict="only in the tree"
        else
            verdict=same
            for s in ".text.$k" ".nv.info.$k"; do
                test "$(dump "$work/old.cubin" "$s")" = "$(dump "$work/new.cubin" "$s")" ||
                    verdict=DIFFER
            done
        fi
        test "$verdict" = same || status=1
        printf '%-8s %s %s\n' "$verdict" "$f" "$k"
    done
done
exit $status
