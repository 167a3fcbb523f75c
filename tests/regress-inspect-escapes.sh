#!/bin/sh
# regress_inspect_escapes: control characters in a file's metadata (a
# terminal escape sequence, a newline, a C1 control) are shown escaped by
# `inspect` (\x1b, \x0a, \u009b), never written raw to the terminal.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
st_write esc.safetensors '{"__metadata__":{"title":"a\u001b[31mred\u001b]0;pwned\u0007","two":"line1\nline2","csi":"x\u009by","k\u001bey":"v"},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
printf '\000\000\200\077' >>esc.safetensors
for fmt in text md; do
    expect_status 0 inspect --format $fmt esc.safetensors
    esc=$(printf '\033')
    bel=$(printf '\007')
    if grep -q -e "$esc" -e "$bel" out; then
        fail "$fmt: raw control characters in the output"
    fi
    expect_grep out 'a\\x1b\[31mred\\x1b\]0;pwned\\x07' "$fmt: ESC and BEL escaped"
    expect_grep out 'line1\\x0aline2' "$fmt: newline escaped"
    expect_grep out 'x\\u009by' "$fmt: C1 control escaped"
    expect_grep out 'k\\x1bey' "$fmt: key escaped"
done
# JSON keeps its own escapes (jansson).
expect_status 0 inspect --format json esc.safetensors
expect_grep out 'a\\u001[bB]\[31mred' "json escapes"
finish
