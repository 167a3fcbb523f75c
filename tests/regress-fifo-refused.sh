#!/bin/sh
# regress_fifo_refused: a FIFO where a file is expected (inspect, --gates,
# --suite, a reference cache entry) is refused or passed over at once,
# naming the path; opening it for reading used to wait for a writer for
# ever.  Each command runs under a timeout so that a regression fails.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
mkfifo pipe.safetensors pipe.tsv 2>/dev/null || {
    echo "SKIP: mkfifo unavailable" >&2
    exit 77
}
run_t() {
    want=$1
    shift
    with_timeout 60 "$RECAUDIT" "$@" >out 2>err
    got=$?
    test "$got" -eq "$want" || fail "recaudit $* exited $got, want $want: $(cat err)"
}
run_t 2 inspect pipe.safetensors
expect_grep err "'pipe.safetensors' is not a regular file (a FIFO)" "inspect names the FIFO"
run_t 2 validate --variant gdn.cpu.f64 --gates pipe.tsv
expect_grep err "'pipe.tsv' is not a regular file (a FIFO)" "--gates names the FIFO"
run_t 2 validate --variant gdn.cpu.f64 --suite pipe.tsv
expect_grep err "'pipe.tsv' is not a regular file (a FIFO)" "--suite names the FIFO"
tiny_case case.safetensors
run_t 2 check case.safetensors pipe.safetensors
expect_grep err "'pipe.safetensors' is not a regular file (a FIFO)" "check names the FIFO"
# A cache entry replaced by a FIFO is unusable and recomputed.
RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE
run_t 0 ref case.safetensors -o ref1.safetensors
entry=$(ls cache/*.safetensors 2>/dev/null | head -n 1)
if test -n "$entry"; then
    rm -f "$entry" && mkfifo "$entry" || fail "mkfifo $entry"
    run_t 0 ref case.safetensors -o ref2.safetensors
    expect_grep err "is not a regular file (a FIFO)" "cache lookup names the FIFO"
    test -f "$entry" && ! test -p "$entry" || fail "the cache entry was not rewritten"
else
    fail "no cache entry under $RECAUDIT_CACHE"
fi
finish
