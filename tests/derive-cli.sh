#!/bin/sh
# `recaudit derive`: every shipped formula holds (exit 0), the report is
# written with a row per formula and parameterisation, and seed 000's
# dg / dA_log hold under the linear decay and fail under expneg, where the
# factor -exp(A_log) enters (hand algebra: docs/glr.md); seed 002's reversed
# scan (scan.linear, scan.affine) and the log scan's chain rule hold.
. "${top_srcdir:-.}/tests/cli-lib.sh"

if expect_status 0 derive --out d.md --threads 2; then
    expect_grep out 'shipped formulas failing' "summary line"
    expect_grep d.md '^| `dg_t = <dS~, S~>` | SPEC.md' "gdn adjoint row"
    expect_grep d.md '^| `dg_t = sum_{s,d} dh_t \* A_log \* alpha_t \* h_{t-1}` .*decay=expneg.*\*\*fails\*\* | `dg_t = sum_{s,d} dh_t \* (-exp(A_log))' "seed dg fails under expneg, corrected"
    expect_grep d.md '^| `dA_log = sum_t dh_t \* g_t \* alpha_t \* h_{t-1}` .*decay=linear.*| holds |' "seed dA_log holds under linear"
    expect_grep d.md '^| `dh_t = c_t^T grad_out_t .*decay=expneg.*| holds |' "dh recursion holds"
    expect_grep d.md '^| `dB_t = Gh^B_t,  Gh^B_t = G^B_t + A_{t+1}^T Gh^B_{t+1}` | seed 002 .*| k=4, v=2 | .*| holds |' "seed 002 reversed scan holds at k=4, v=2"
    expect_grep d.md '^| `dA_t = Gh^A_t Abar_{t-1}^T + Gh^B_t Bbar_{t-1}^T .*| seed 002 .*| k=2, v=1 (matrix_scan) | .*| holds |' "seed 002 dA holds for scan.matrix"
    expect_grep d.md '^| `da_t = Gh^P_t P_{t-1} + Gh^h_t h_{t-1} .*| seed 002 .*| holds |' "seed 002 da holds for scan.linear"
    expect_grep d.md '^| `dlc_t = exp(lc_t) Gh_t h_{t-1} .*| shipped | .*| holds |' "log scan chain rule holds"
    if grep 'shipped' d.md | grep -q 'fails'; then
        fail "a shipped formula fails"
    fi
fi
expect_status 0 derive --op glr --out glr.md
if grep -q 'SPEC.md §1' glr.md; then
    fail "--op glr kept gdn's formulas"
fi
expect_status 0 derive --op scan.affine --out scan.md
if grep -q 'scan.linear\|glr' scan.md; then
    fail "--op scan.affine kept other operations' formulas"
fi
expect_status 2 derive --op no-such-op --out x.md
expect_status 2 derive --out no-such-dir/x.md && expect_grep err 'no-such-dir/x.md' "unwritable report named"
finish
