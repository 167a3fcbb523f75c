#!/bin/sh
# regress_output_is_input: `run -o` and `ref -o` naming the input case (the
# same path, a symbolic link to it or a hard link to it) are refused, exit 2,
# and the case is left untouched; they used to overwrite it without a word.
# Likewise validate --json naming its suite or gates file.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
tiny_case case.safetensors
cp case.safetensors orig.safetensors
ln -s case.safetensors sym.safetensors
ln case.safetensors hard.safetensors || fail "ln"
for out in case.safetensors sym.safetensors hard.safetensors ./case.safetensors; do
    expect_status 2 run --variant gdn.cpu.f64 case.safetensors -o "$out" &&
        expect_grep err "run: output '$out' is the input 'case.safetensors'" "run -o $out refused"
    cmp -s case.safetensors orig.safetensors || fail "run -o $out changed the case"
    expect_status 2 ref --no-cache case.safetensors -o "$out" &&
        expect_grep err "ref: output '$out' is the input 'case.safetensors'" "ref -o $out refused"
    cmp -s case.safetensors orig.safetensors || fail "ref -o $out changed the case"
done
test -L sym.safetensors || fail "the symbolic link was replaced"
# --json naming the suite or the gates file it reads.
printf 'op\tshape\tregime\tdtype\tdirection\tseed\tflags\ngdn\tB=1,T=8,Hk=1,Hv=1,K=4,V=4\tdefault\tf32\tfwd\t1\t-\n' >s.tsv
cp s.tsv s.orig
cp "${top_srcdir:-.}/data/gates.tsv" g.tsv
cp g.tsv g.orig
expect_status 2 validate --variant gdn.cpu.f64 --suite ./s.tsv --json s.tsv &&
    expect_grep err "--json 's.tsv' is the input './s.tsv'" "validate --json over the suite refused"
expect_status 2 validate --variant gdn.cpu.f64 --suite ./s.tsv --gates g.tsv --json g.tsv &&
    expect_grep err "--json 'g.tsv' is the input 'g.tsv'" "validate --json over the gates refused"
cmp -s s.tsv s.orig && cmp -s g.tsv g.orig || fail "validate --json changed an input"
# A distinct output is still written.
expect_status 0 run --variant gdn.cpu.f64 case.safetensors -o result.safetensors
finish
