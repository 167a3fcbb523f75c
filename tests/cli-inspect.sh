#!/bin/sh
# CLI: recaudit inspect on hand-made, generated, truncated and missing files.
. "${top_srcdir:-.}/tests/cli-lib.sh"

# A .npy written byte by byte: magic, version 1.0, header length 118
# (0x76, octal 166) so that 10 + 118 = 128 is a multiple of 64, the dict
# padded with spaces to 117 bytes plus '\n', then four little-endian f32:
# 1.0 (3f800000), -2.5 (c0200000), NaN (7fc00000), +Inf (7f800000).
# min/max over non-NaN: -2.5, inf; mean |x| over finite: (1 + 2.5)/2 = 1.75.
{
    printf '\223NUMPY\001\000\166\000'
    printf '%-117s\n' "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
    printf '\000\000\200\077\000\000\040\300\000\000\300\177\000\000\200\177'
} >hand.npy
test "$(wc -c <hand.npy)" -eq 144 || fail "test setup: hand.npy should be 144 bytes"
expect_status 0 inspect --format csv hand.npy &&
    expect_grep out '^hand,f32,\[4\],-2.5,inf,1.75,1,1$' "hand-made npy summary"
expect_status 0 inspect --format json hand.npy &&
    expect_grep out '"format":"npy"' "json format" &&
    expect_grep out '{"name": "hand", "dtype": "f32", "shape": "\[4\]", "min": -2.5, "max": "inf", "mean_abs": 1.75, "nan": 1, "inf": 1}' "json row"
expect_status 0 inspect --format md hand.npy &&
    expect_grep out '^| hand | f32   | \[4\]   | -2.5 | inf |     1.75 |   1 |   1 |$' "md row"

# A generated case, then damaged copies: each refused with exit 2 and one
# line naming the file.
expect_status 0 gen --op gdn --shape B=1,T=8,H=1,D=4 -o case.safetensors
expect_status 0 inspect case.safetensors && expect_grep out '^op: gdn$' "op shown"
size=$(wc -c <case.safetensors)
head -c $((size - 1)) case.safetensors >short.safetensors
expect_status 2 inspect short.safetensors && expect_grep err 'short.safetensors' "truncated data named"
head -c 100 case.safetensors >cut.safetensors
expect_status 2 inspect cut.safetensors && expect_grep err 'cut.safetensors' "truncated header named"
test "$(wc -l <err)" -eq 1 || fail "truncated file: want one error line"
head -c 5 case.safetensors >tiny.safetensors
expect_status 2 inspect tiny.safetensors
head -c 20 hand.npy >cut.npy
expect_status 2 inspect cut.npy && expect_grep err 'cut.npy' "truncated npy named"
expect_status 2 inspect missing.safetensors && expect_grep err 'missing.safetensors' "missing file named"
expect_status 2 inspect --format yaml case.safetensors && expect_grep err "'yaml'" "bad format"
expect_status 2 inspect && expect_grep err 'missing FILE' "no file"

finish
