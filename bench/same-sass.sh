#!/bin/sh
# same-sass.sh: does a CUDA source compile to the same machine code as at a revision?
#
#   bench/same-sass.sh [-b BUILDDIR] [-r RETRIES] REV FILE.cu...
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
#
# nvcc does not always give one source one machine code.  Eleven compiles of
# one gdn_chunk_bwd.cu gave gdn_chunk_grads_ieee_kernel in four forms, and
# eight of gdn_chunk_fwd.cu three of its sixteen kernels in two; the PTX
# itself differed (one of three had a shared-memory load vectorised),
# while ptxas gave one PTX file one code in twelve runs, and turning
# address-space randomisation off (setarch -R) did not stop it.  So a
# kernel whose first two compiles differ is compiled again, both sides,
# up to RETRIES more times (-r, default 4), and counts as the same when
# some compile of the tree and some compile at REV agree in all four
# parts; its line then says how many forms each side gave.  A build can
# get any of a source's forms, so "same" means the same code is among
# what both sources compile to; a DIFFER whose sides each gave several
# forms may still be nvcc's variation, one form a side a real change.
# PTX is not compared: nvcc numbers PTX registers differently after edits
# that leave the SASS as it was.
#
# Prints a line per kernel (same, DIFFER with the parts that differ in the
# first compiles, only at REV, only in the tree) and exits 0 when every
# kernel of every file is the same, 1 otherwise, 2 on bad usage or a
# failed compile, 77 without nvcc or readelf.
set -u
usage() { echo "usage: bench/same-sass.sh [-b BUILDDIR] [-r RETRIES] REV FILE.cu..." >&2; exit 2; }
build=
retries=4
while getopts b:r: opt; do
    case $opt in
    b) build=$OPTARG ;;
    r) case $OPTARG in *[!0-9]* | "") usage ;; esac; retries=$OPTARG ;;
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
    test -f "$1.syms" ||
        readelf -s -W "$1" 2>/dev/null | sed -n 's/^ *\([0-9]*\): .* \([^ ]*\)$/S \1 \2/p' >"$1.syms"
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
    }' "$1.syms" -
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

# form SIDE N K: kernel K's four parts in compile N of SIDE (old or new),
# kept in $work/SIDE.N.K.form (each extracted once) and named in $form
form() {
    form=$work/$1.$2.$3.form
    test -f "$form" && return 0
    for p in text info resources relocations; do
        echo "== $p"
        part "$work/$1.$2.cubin" "$3" $p
    done >"$form"
}
# build SIDE N FILE: compile N of FILE on SIDE, or exit 2
build_side() {
    if test "$1" = new; then
        compile "$top" "$3" "$work/new.$2.cubin" ||
            { echo "$3: does not compile in the tree: $(tail -n 3 "$work/new.$2.cubin.log" 2>/dev/null)" >&2; exit 2; }
    else
        compile "$work/old" "$3" "$work/old.$2.cubin" ||
            { echo "$3: does not compile at $rev: $(tail -n 3 "$work/old.$2.cubin.log" 2>/dev/null)" >&2; exit 2; }
    fi
}
# agree K NEW OLD: does kernel K of some tree compile 1..NEW equal that
# of some compile 1..OLD at REV?
agree() {
    j=1
    while test $j -le "$3"; do
        form old $j "$1"
        old_form=$form
        i=1
        while test $i -le "$2"; do
            form new $i "$1"
            cmp -s "$old_form" "$form" && return 0
            i=$((i + 1))
        done
        j=$((j + 1))
    done
    return 1
}
# forms K SIDE N: how many distinct forms of K compiles 1..N of SIDE gave
forms() {
    c=1
    while test $c -le "$3"; do
        form "$2" $c "$1"
        md5sum <"$form"
        c=$((c + 1))
    done | sort -u | wc -l | tr -d ' '
}

status=0
for f in "$@"; do
    case $f in /*) f=${f#"$top"/} ;; esac
    build_side new 1 "$f"
    build_side old 1 "$f"
    kernels "$work/old.1.cubin" >"$work/old.k"
    kernels "$work/new.1.cubin" >"$work/new.k"
    : >"$work/pending"
    for k in $(sort -u "$work/old.k" "$work/new.k"); do
        grep -qx "$k" "$work/new.k" && grep -qx "$k" "$work/old.k" && ! agree "$k" 1 1 &&
            echo "$k" >>"$work/pending"
    done
    n=1
    while test -s "$work/pending" && test $n -le "$retries"; do
        n=$((n + 1))
        build_side new $n "$f"
        build_side old $n "$f"
        for k in $(cat "$work/pending"); do
            agree "$k" $n $n || echo "$k"
        done >"$work/still"
        mv "$work/still" "$work/pending"
    done
    for k in $(sort -u "$work/old.k" "$work/new.k"); do
        if ! grep -qx "$k" "$work/new.k"; then
            verdict="only at $rev"
        elif ! grep -qx "$k" "$work/old.k"; then
            verdict="only in the tree"
        elif grep -qx "$k" "$work/pending"; then
            differ=
            for p in text info resources relocations; do
                part "$work/old.1.cubin" "$k" $p >"$work/old.p"
                part "$work/new.1.cubin" "$k" $p >"$work/new.p"
                cmp -s "$work/old.p" "$work/new.p" || differ="$differ${differ:+,}$p"
            done
            verdict="DIFFER ($differ)"
            test $n -eq 1 ||
                verdict="DIFFER ($differ; in $n compiles each, forms: $(forms "$k" new $n) in the tree, $(forms "$k" old $n) at $rev)"
        else
            verdict=same
            if test $n -gt 1 && ! agree "$k" 1 1; then
                verdict="same (nvcc varies; in $n compiles each, forms: $(forms "$k" new $n) in the tree, $(forms "$k" old $n) at $rev)"
            fi
        fi
        case $verdict in same*) ;; *) status=1 ;; esac
        printf '%-8s %s %s\n' "$verdict" "$f" "$k"
    done
done
exit $status
