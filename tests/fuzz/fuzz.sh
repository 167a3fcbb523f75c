#!/bin/sh
# tests/fuzz/fuzz.sh: builds the libFuzzer harnesses with clang and runs each for a while (make fuzz).
#
# make fuzz calls it with the library's sources as arguments and its flags
# in the environment: every C and assembler source of librecaudit.a is
# compiled again with $FUZZ_CC and -fsanitize=fuzzer-no-link,address,undefined
# (so the coverage libFuzzer steers by reaches into the readers), each
# harness tests/fuzz/fuzz-NAME.c is linked against those objects with
# -fsanitize=fuzzer,address,undefined, and runs for $FUZZ_SECONDS seconds
# on a working copy of its seed corpus tests/fuzz/corpus/NAME (the seeds
# in the source tree are never modified).  CUDA sources are not rebuilt:
# their objects come from the normal build.  Objects are rebuilt only
# when their source is newer.  A crash, a sanitizer report, a leak or a
# timeout fails the run (non-zero exit); the input that caused it is kept
# as fuzz/NAME-crash-* (or -leak-, -timeout-) in the build directory, and
# the command to reproduce it is printed.
#
# Arguments: --cppflags FLAGS... --ccasflags FLAGS... --cflags FLAGS...
# --libs FLAGS... --sources FILES... (each list as make expands it, so
# quoted defines arrive intact).  Environment: FUZZ_CC (default clang),
# FUZZ_SECONDS (default 60; 0 only builds), FUZZ_TARGETS (default: every
# harness), srcdir.  Exit 77 when the compiler
# cannot build a libFuzzer program (make fuzz turns that into a clear
# failure; .ci/run into a skip).
set -eu

FUZZ_CC=${FUZZ_CC:-clang}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
srcdir=${srcdir:-.}
targets=${FUZZ_TARGETS:-"safetensors npy gates suite case"}
out=fuzz
san="address,undefined"
cflags="-g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined -std=gnu11 -ffp-contract=off"

# The argument lists, each word single-quoted for eval.
q() { printf "'%s' " "$(printf "%s" "$1" | sed "s/'/'\\\\''/g")"; }
cppflags='' ccasflags='' libs='' sources='' list=''
for a in "$@"; do
    case $a in
    --cppflags | --ccasflags | --cflags | --libs | --sources) list=${a#--}; continue ;;
    esac
    case $list in
    cppflags) cppflags="$cppflags$(q "$a")" ;;
    ccasflags) ccasflags="$ccasflags$(q "$a")" ;;
    cflags) cflags="$cflags $(q "$a")" ;;
    libs) libs="$libs$(q "$a")" ;;
    sources) sources="$sources $a" ;;
    *) echo "fuzz.sh: unexpected argument '$a'" >&2; exit 2 ;;
    esac
done

if ! command -v "$FUZZ_CC" >/dev/null 2>&1; then
    echo "fuzz: $FUZZ_CC not found; the harnesses need clang with libFuzzer (make fuzz FUZZ_CC=...)" >&2
    exit 77
fi
mkdir -p "$out/obj"
probe="$out/probe.c"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$FUZZ_CC" -fsanitize=fuzzer,$san -o "$out/probe" "$probe" >"$out/probe.log" 2>&1; then
    echo "fuzz: $FUZZ_CC cannot link -fsanitize=fuzzer,$san (see $out/probe.log)" >&2
    exit 77
fi

# The library, instrumented.
# A header newer than the last build, or a new data file for the
# assembler, rebuilds everything (objects have no dependency tracking).
if test -f "$out/obj/stamp" &&
    test -n "$(find "$srcdir/src" "$srcdir/include" "$srcdir/data" -newer "$out/obj/stamp" \
        \( -name "*.h" -o -name "*.tsv" \) 2>/dev/null | head -n 1)"; then
    rm -f "$out"/obj/*.o
fi
objs=
for src in $sources; do
    case $src in
    *.cu) objs="$objs ${src%.cu}.o"; continue ;; # from the normal build
    *.c | *.S) ;;
    *) continue ;;
    esac
    obj="$out/obj/$(echo "$src" | tr / _).o"
    objs="$objs $obj"
    if test -f "$obj" && test "$obj" -nt "$srcdir/$src"; then
        continue
    fi
    echo "  FUZZCC   $src"
    case $src in
    *.S)
        eval "\"\$FUZZ_CC\" $cppflags $ccasflags -c -o \"\$obj\" \"\$srcdir/\$src\""
        ;;
    *)
        eval "\"\$FUZZ_CC\" $cflags -fsanitize=fuzzer-no-link,$san $cppflags -c -o \"\$obj\" \"\$srcdir/\$src\""
        ;;
    esac
done

touch "$out/obj/stamp"

# The harnesses.
for t in $targets; do
    echo "  FUZZLD   tests/fuzz/fuzz-$t"
    eval "\"\$FUZZ_CC\" $cflags -fsanitize=fuzzer,$san $cppflags -o \"\$out/fuzz-\$t\" \\
        \"\$srcdir/tests/fuzz/fuzz-\$t.c\" \$objs $libs"
done
test "$FUZZ_SECONDS" -gt 0 || exit 0

# The runs: each harness on a working copy of its seeds.
failed=
for t in $targets; do
    work="$out/corpus-$t"
    mkdir -p "$work"
    echo "fuzz: $t for ${FUZZ_SECONDS}s (seeds: tests/fuzz/corpus/$t)"
    start=$(date +%s)
    if ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$out/fuzz-$t" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/$t-" \
        "$work" "$srcdir/tests/fuzz/corpus/$t" >"$out/$t.log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log")
        echo "fuzz: $t passed: ${runs:-?} inputs in $(($(date +%s) - start))s"
    else
        tail -n 40 "$out/$t.log" >&2
        echo "fuzz: $t FAILED (log $out/$t.log); reproduce: $out/fuzz-$t $out/$t-<artifact>" >&2
        failed="$failed $t"
    fi
done
if test -n "$failed"; then
    echo "fuzz: failed:$failed" >&2
    exit 1
fi
