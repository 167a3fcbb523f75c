#!/bin/sh
# Variant isolation: a plugin variant that writes into its inputs, exits,
# segfaults, aborts or hangs gets a FAIL row with the reason, the run goes
# on, the honest variant after it prints every row and passes, and the exit
# status is 1 (tests/plugin-rogue.c, src/audit/isolate.c).
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
honest_so=$(plugin_so examples/plugin libgdnexample) || exit $?
# In a sanitizer build, AddressSanitizer would catch the rogues' SIGSEGV,
# SIGBUS and SIGFPE itself and exit 1: let them kill the process, as they do
# in a normal build (a crash still fails any other test).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigfpe=0"
export ASAN_OPTIONS

# Two cases, so that the run is seen going on to the next case too.
tab=$(printf '\t')
{
    echo "op${tab}shape${tab}regime${tab}dtype${tab}direction${tab}seed${tab}flags"
    echo "gdn${tab}B=1,T=100,Hk=1,Hv=2,K=32,V=32${tab}default${tab}f32${tab}fwd+bwd${tab}1${tab}-"
    echo "gdn${tab}B=2,T=64,Hk=2,Hv=2,K=16,V=32${tab}default${tab}bf16${tab}fwd+bwd${tab}2${tab}h0"
} >two.tsv

# The honest variant alone: its rows are what every run below must print.
expect_status 0 validate --suite two.tsv --plugin "$honest_so" --variant 'gdn.example.*'
grep '^gdn.example.f64 ' out | tr -s ' ' >honest
npass=$(grep -c ' pass$' honest)
test "$npass" -gt 10 || fail "the honest variant alone printed $npass passing rows"

# rogue KIND REASON [OPTION...]: the rogue fails on both cases with REASON,
# nothing else fails, the honest rows are all there and unchanged.
rogue() {
    kind=$1 reason=$2
    shift 2
    so=$(plugin_so tests "librogue_$kind") || exit $?
    expect_status 1 validate --suite two.tsv --plugin "$so" --variant 'gdn.[er]*' "$@" || return
    n=$(grep -c "^FAIL gdn.rogue.f64 .* -: $reason\$" out)
    test "$n" -eq 2 || fail "$kind: $n rows blame the rogue with '$reason', want 2"
    expect_grep out "^$npass passed, 2 failed, 0 skipped\$" "$kind: summary"
    grep '^FAIL ' out | grep -v '^FAIL gdn.rogue.f64 ' >others
    test -s others && fail "$kind: other rows failed: $(cat others)"
    grep '^gdn.example.f64 ' out | tr -s ' ' >rows
    cmp -s honest rows || fail "$kind: the honest variant's rows differ: $(diff honest rows)"
}

rogue write "variant wrote into its input tensor 'q', which is read-only (SIGSEGV)"
rogue exit "variant exited with status 0 before returning a result"
rogue segv "variant crashed: SIGSEGV"
rogue abort "variant crashed: SIGABRT"
rogue hang "timeout after 1 s (killed with SIGKILL)" --timeout 1
# the reproduction command keeps a non-default time limit
expect_grep out '^  reproduce: .* --timeout 1$' "hang: --timeout in the reproduction command"

# audit and run are guarded the same way.
hang_so=$(plugin_so tests librogue_hang) || exit $?
if expect_status 1 audit --variant 'gdn.[er]*' --shape B=1,T=100,Hk=1,Hv=2,K=32,V=32 --seed 1 \
    --plugin "$hang_so" --timeout 1; then
    expect_grep out '^FAIL gdn.rogue.f64 .* timeout after 1 s' "audit: the rogue's row"
    expect_grep out '^gdn.example.f64  *o  *f64 .* pass$' "audit: the honest rows"
fi
expect_status 0 gen --op gdn --shape B=1,T=64,Hk=1,Hv=2,K=16,V=16 -o case.safetensors
segv_so=$(plugin_so tests librogue_segv) || exit $?
write_so=$(plugin_so tests librogue_write) || exit $?
expect_status 2 run --plugin "$segv_so" --variant gdn.rogue.f64 case.safetensors -o r.safetensors &&
    expect_grep err 'variant gdn.rogue.f64: variant crashed: SIGSEGV' "run: the crash"
expect_status 2 run --plugin "$write_so" --variant gdn.rogue.f64 case.safetensors -o r.safetensors &&
    expect_grep err "input tensor 'q', which is read-only" "run: the write"
expect_status 0 run --plugin "$write_so" --variant gdn.example.f64 case.safetensors -o r.safetensors
expect_status 2 validate --timeout 0
expect_grep err "timeout expects seconds in" "--timeout 0 refused"

# In process (for a debugger) the inputs are still read-only: the write
# stops the program at once.
"$RECAUDIT" validate --suite two.tsv --plugin "$write_so" --variant 'gdn.[er]*' --no-isolate \
    >out 2>err
got=$?
test "$got" -gt 128 || fail "--no-isolate: a write into the inputs exited $got, not by a signal"
RECAUDIT_NO_ISOLATE=1 "$RECAUDIT" validate --suite two.tsv --plugin "$write_so" \
    --variant 'gdn.[er]*' >out 2>err
got=$?
test "$got" -gt 128 || fail "RECAUDIT_NO_ISOLATE=1: a write into the inputs exited $got"

# OpenMP: a reference computed here (an empty cache) starts an OpenMP team
# in the parent before the children open their own parallel regions.
RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE
expect_status 0 audit --variant 'gdn.cpu.chunk64.ieee' --shape B=1,T=64,Hk=1,Hv=2,K=16,V=16 \
    --fwd-only --threads 2 --timeout 60
expect_grep out '^gdn.cpu.chunk64.ieee  *o  *ieee  *f32 .* pass$' "OpenMP variant after an OpenMP reference"
finish
