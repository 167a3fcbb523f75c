#!/bin/sh
# `recaudit check` cannot be fooled: a result must hold every output and
# gradient its case calls for, and a --ref file must be the reference of
# this very case (its input hash), not of an edited one with equal metadata.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
so=$(plugin_so examples/plugin libgdnexample_misnamed) || exit $?

RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE

expect_status 0 gen --op gdn --shape B=1,T=8,Hk=1,Hv=2,K=4,V=4 --seed 5 -o c.safetensors

# --- regress_check_missing_output ----------------------------------------------------------
# A plugin that writes ht and dk under other names: run succeeds, check must
# fail both missing tensors by name, with and without gates.
expect_status 0 run --plugin "$so" --variant gdn.example.f64 c.safetensors -o miss.safetensors
if expect_status 1 check c.safetensors miss.safetensors --variant gdn.cpu.f64; then
    expect_grep out '^FAIL gdn.cpu.f64 .* ht: missing output ht$' "regress_check_missing_output: ht row"
    expect_grep out '^FAIL gdn.cpu.f64 .* dk: missing gradient dk$' "regress_check_missing_output: dk row"
    expect_grep out ' 2 failed' "regress_check_missing_output: summary counts both"
fi
expect_status 1 check c.safetensors miss.safetensors &&
    expect_grep out 'missing output ht' "regress_check_missing_output: without gates"
# A complete result of a backward-capable variant passes.
expect_status 0 run --variant gdn.cpu.f64 c.safetensors -o full.safetensors
expect_status 0 check c.safetensors full.safetensors
# A result declared forward-only (run --fwd-only) is checked on its outputs alone.
expect_status 0 run --variant gdn.cpu.f64 --fwd-only c.safetensors -o fwd.safetensors
expect_status 0 inspect fwd.safetensors && expect_grep out '^forward_only: true$' "fwd-only metadata"
expect_status 0 check c.safetensors fwd.safetensors && expect_grep out 'forward-only' "fwd-only said"

# --- regress_ref_input_hash ----------------------------------------------------------------
# e: c with one low mantissa byte changed, same metadata.  A reference and a
# result of e must not pass as the check of c.
cp c.safetensors e.safetensors
size=$(wc -c <c.safetensors)
printf U | dd of=e.safetensors bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null # a low byte of the last element
cmp -s c.safetensors e.safetensors && fail "regress_ref_input_hash: the edit changed nothing"
expect_status 0 ref e.safetensors -o e.ref.safetensors
expect_status 0 run --variant gdn.cpu.f64 e.safetensors -o re.safetensors
if expect_status 2 check c.safetensors re.safetensors --ref e.ref.safetensors; then
    expect_grep err 'e.ref.safetensors.*not the reference of c.safetensors' \
        "regress_ref_input_hash: mismatch named"
fi
expect_status 0 check e.safetensors re.safetensors --ref e.ref.safetensors
expect_status 0 inspect e.ref.safetensors && expect_grep out '^input_hash: [0-9a-f]\{16\}$' "hash kept"
# A reference without the hash (as written before it existed) is refused too:
# the key renamed in place, the header keeps its length.
LC_ALL=C sed 's/"input_hash"/"input_hasX"/' e.ref.safetensors >old.ref.safetensors
cmp -s e.ref.safetensors old.ref.safetensors && fail "regress_ref_input_hash: rename failed"
if expect_status 2 check e.safetensors re.safetensors --ref old.ref.safetensors; then
    expect_grep err 'old.ref.safetensors.*no input_hash.*recompute' \
        "regress_ref_input_hash: old reference refused"
fi
finish
