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
# for config.h.  For every kernel four parts of the two cubins are
# compared:
#   .text        the SASS, byte for byte;
#   .nv.info     its attributes (parameters, launch bounds, exit offsets),
#                decoded, with symbol indices replaced by symbol names;
#   resources    registers, frame and stack (the file's .nv.info entries
#                for the kernel) and the sizes of its static shared memory,
#                constant bank and local memory;
#   relocations  of its .text, by symbol name.
# Symbol indices are names here because a kernel added to or removed from
# the file renumbers every symbol after it without changing any code.
# PTX is not compared: nvcc numbers PTX registers differently after edits
# that leave the SASS as it was.
#
# Prints a line per kernel (same, DIFFER with the parts that differ,
# only at REV, only in the tree) and exits 0 when every kernel of every
# file is the same, 1 otherwise, 2 on bad usage or a failed compile, 77
# without nvcc or readelf.
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
# words CUBIN SECTION: the section's bytes as hex, without readelf's
# addresses and ASCII column
words() { readelf -x "$2" "$1" 2>/dev/null | sed -n 's/^ *0x[0-9a-f]* //p' | cut -c1-35; }
# attributes CUBIN SECTION [KERNEL]: the section's EIATTR entries, one a
# line (format byte, attribute byte, then a 16-bit value or the size of a
# payload that follows).  A per-kernel section's parameter bank names its
# constant section; in the file's .nv.info, only KERNEL's (symbol, value)
# entries are printed.
attributes() {
    readelf -s -W "$1" 2>/dev/null | sed -n 's/^ *\([0-9]*\): .* \([^ ]*\)$/S \1 \2/p' >"$work/syms"
    words "$1" "$2" | awk -v kernel="${3:-}" '
    function u32(i) { return b[i] + 256 * (b[i + 1] + 256 * (b[i + 2] + 256 * b[i + 3])) }
    FNR == NR { name[$2] = $3; next }
    { gsub(/ /, ""); hex = hex $0 }
    END {
        n = length(hex) / 2
        for (i = 0; i < n; i++)
            b[i] = (index("0123456789abcdef", substr(hex, 2 * i + 1, 1)) - 1) * 16 + \
                   index("0123456789abcdef", substr(hex, 2 * i + 2, 1)) - 1
        for (i = 0; i + 4 <= n; i += 4 + size) {
            fmt = b[i]; attr = b[i + 1]; val = b[i + 2] + 256 * b[i + 3]
            size = fmt == 4 ? val : 0
            pay = ""
            for (j = 0; j < size; j++) pay = pay sprintf("%02x", b[i + 4 + j])
            if (kernel != "") {
                if (size == 8 && name[u32(i + 4)] == kernel)
                    printf "attribute 0x%02x %d\n", attr, u32(i + 8)
                continue
            }
            if (attr == 10 && size >= 4) # EIATTR_PARAM_CBANK: symbol, offset, size
                pay = name[u32(i + 4)] " " substr(pay, 9)
            printf "0x%02x 0x%02x %s\n", fmt, attr, size ? pay : val
        }
    }' "$work/syms" -
}
# part CUBIN KERNEL PART: what PART (text, info, resources, relocations) of
# KERNEL is in CUBIN
part() {
    case $3 in
    text) words "$1" ".text.$2" ;;
    info) attributes "$1" ".nv.info.$2" ;;
    resources)
        attributes "$1" .nv.info "$2"
        readelf -S -W "$1" 2>/dev/null | awk -v k="$2" '
            $0 ~ /^ *\[/ { sub(/^ *\[ *[0-9]*\] */, "")
                           if ($1 == ".nv.shared." k || $1 == ".nv.constant0." k || $1 == ".nv.local." k)
                               print $1, $5 }' ;;
    relocations)
        readelf -r -W "$1" 2>/dev/null | awk -v s=".rela.text.$2" '
            /^Relocation section/ { p = index($0, "'"'"'" s "'"'"'") > 0; next }
            p && NF >= 3 && $1 ~ /^[0-9a-f]+$/ { $2 = ""; print }' ;;
    esac
}

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
            differ=
            for p in text info resources relocations; do
                part "$work/old.cubin" "$k" $p >"$work/old.p"
                part "$work/new.cubin" "$k" $p >"$work/new.p"
                cmp -s "$work/old.p" "$work/new.p" || differ="$differ${differ:+,}$p"
            done
            verdict=same
            test -z "$differ" || verdict="DIFFER ($differ)"
        fi
        test "$verdict" = same || status=1
        printf '%-8s %s %s\n' "$verdict" "$f" "$k"
    done
done
exit $status
