#!/bin/sh
# regress_gradcheck_blames_grads: when the --grads file is at fault (a
# gradient missing, a wrong size), gradcheck's message names that file, not
# the case it used to blame.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
tiny_case case.safetensors
expect_status 0 run --variant gdn.cpu.f64 --fwd-only case.safetensors -o fwd.safetensors
expect_status 2 gradcheck --prec 128 --h-log2 40 --grads fwd.safetensors case.safetensors &&
    expect_grep err "fwd.safetensors: .*'dq'" "missing gradient blamed on the --grads file"
if grep -q "case.safetensors" err; then
    fail "the case is blamed for the --grads file: $(cat err)"
fi
finish
