#!/bin/sh
# CLI: run, check, audit and validate on small cases; gates pass and fail
# as they should, bad usage and mismatched files exit 2.
. "${top_srcdir:-.}/tests/cli-lib.sh"

# list: the variant registry and the suites.
expect_status 0 list variants
for v in f64 f32 chunk64.ieee chunk64.tf32 chunk64.bf16 chunk64.ieee.neumann chunk128.bf16.schur; do
    expect_grep out "^gdn\.cpu\.$v " "list variants: gdn.cpu.$v"
done
expect_grep out '^gdn.cpu.chunk128.bf16.schur  *gdn  *cpu  *bf16  *fwd,bwd,h0,gqa,l2norm,tail,unit-keys  *chunked C=128' "a variant row"
expect_status 0 list --format csv variants 'gdn.cpu.f[0-9][0-9]'
expect_grep out '^name,op,device,class,caps,doc,from$' "csv header"
test "$(wc -l <out)" -eq 3 || fail "list variants 'gdn.cpu.f[0-9][0-9]': expected 2 rows"
expect_status 0 list suites
# the row count of the shipped file (lines that are neither comments nor the header)
nquick=$(grep -v '^#' "${top_srcdir:-.}/data/suites/quick.tsv" | grep -vc '^op	')
expect_grep out "^quick  *$nquick  *quick: " "quick suite listed"
expect_grep out '^full  *[0-9]*  *full: ' "full suite listed"

shape=B=1,T=70,Hk=1,Hv=2,K=8,V=8
expect_status 0 gen --op gdn --shape $shape --seed 4 --h0 -o case.safetensors

# run: outputs and gradients under the tensor names of docs/gdn.md, and the result metadata.
expect_status 0 run --variant gdn.cpu.f32 case.safetensors -o f32.safetensors
for t in o ht dq dk dv dg dbeta dh0; do
    expect_grep out "^  $t  *f32 " "run writes $t"
done
expect_status 0 inspect f32.safetensors
expect_grep out '^variant: gdn.cpu.f32$' "result metadata: variant"
expect_grep out '^seed: 4$' "result metadata: the case's parameters"
expect_status 0 run --variant gdn.cpu.f64 --fwd-only case.safetensors -o fwd.safetensors
grep -q '^  dq ' out && fail "--fwd-only wrote gradients"

# check: certified reference, metrics, the result's own gates pass.
expect_status 0 check case.safetensors f32.safetensors
expect_grep out '^reference: computed (cache [a-z]*), precision [0-9]* (checked at [0-9]*), certified yes; bits: o [0-9]' "reference line"
expect_grep out '^dk  *f32 ' "metrics row for dk"
expect_grep out '^gates of gdn.cpu.f32 (class f32): [0-9]* passed, 0 failed, 0 skipped$' "gates pass"
expect_status 0 check case.safetensors fwd.safetensors
expect_grep out '^o  *f64 ' "forward-only result checked"
grep -q '^dq ' out && fail "forward-only check reported gradients"
expect_status 0 check --format csv case.safetensors f32.safetensors
expect_grep out '^tensor,class,dtype,max_ulp,p99_ulp,max_ulp_rms,ulp_cls,rel_rms,max_rel,max_abs,cos,nan,inf,worst,value,ref,gates$' "csv header"
expect_grep err '^reference: ' "csv: the reference line goes to stderr"
# ulp_cls = max|err| / (2^-24 rms(ref)) for the f32 class and max_ulp_rms =
# max|err| / ulp_f32(rms(ref)) with ulp_f32(x) = 2^(e-23) for x = m 2^e,
# 1 <= m < 2: their ratio is 2/m, in (1, 2], on every row.
awk -F, 'NR > 1 && $2 == "f32" { r = $7 / $6; n++; if (!(r > 1 && r <= 2)) bad++ }
         END { exit !(n > 0 && !bad) }' out || fail "ulp_cls / max_ulp_rms outside (1, 2] for the f32 class"

# --ref: a reference file written by `recaudit ref` (when that command is
# built), checked against the case's metadata.
if "$RECAUDIT" ref --help >/dev/null 2>&1; then
    expect_status 0 ref case.safetensors -o ref.safetensors
    expect_status 0 check case.safetensors f32.safetensors --ref ref.safetensors
    expect_grep out '^reference: ref.safetensors, precision ' "reference from --ref"
    expect_status 0 gen --op gdn --shape $shape --seed 6 --h0 -o case6.safetensors
    expect_status 0 run --variant gdn.cpu.f32 case6.safetensors -o f32-6.safetensors
    expect_status 2 check case6.safetensors f32-6.safetensors --ref ref.safetensors &&
        expect_grep err 'ref.safetensors: metadata seed=4, but the case case6.safetensors has seed=6' "--ref mismatch"
fi

# A bf16 chunked result does not meet the f32 gates; the failure says how
# to reproduce it.
expect_status 0 run --variant gdn.cpu.chunk64.bf16 case.safetensors -o bf16.safetensors
expect_status 0 check case.safetensors bf16.safetensors
expect_status 1 check case.safetensors bf16.safetensors --variant gdn.cpu.f32
expect_grep out '^FAIL gdn.cpu.f32 B=1,T=70,Hk=1,Hv=2,K=8,V=8 default f32 o: rel_rms = ' "failing gate row"
expect_grep out '^  reproduce: recaudit check case.safetensors bf16.safetensors --variant gdn.cpu.f32$' "repro"
# A variant name that no gate covers fails: an ungated tensor is no pass.
expect_status 1 check case.safetensors bf16.safetensors --variant gdn.none
expect_grep out '^FAIL gdn.none .* o: no gate in .*gates.tsv covers op gdn, class none (give --class), variant gdn.none' "ungated"
# --class gates an unregistered name; it may not contradict a registered one
# (the metadata names gdn.cpu.chunk64.bf16, which declares bf16).
expect_status 0 check case.safetensors bf16.safetensors --variant gdn.none --class bf16
expect_grep out '^gates of gdn.none (class bf16): [1-9][0-9]* passed, 0 failed' "--class bf16"
expect_status 1 check case.safetensors bf16.safetensors --variant gdn.none --class f32
expect_status 2 check case.safetensors bf16.safetensors --class f32 &&
    expect_grep err 'contradicts variant gdn.cpu.chunk64.bf16' "--class contradiction"
# A result from another case is refused.
expect_status 0 gen --op gdn --shape $shape --seed 5 --h0 -o other.safetensors
expect_status 2 check other.safetensors f32.safetensors &&
    expect_grep err 'f32.safetensors: metadata seed=4, but the case other.safetensors has seed=5' "mismatch"

# Bad usage and bad input.
expect_status 2 run --variant gdn.nope case.safetensors -o x.safetensors &&
    expect_grep err "no variant 'gdn.nope'" "unknown variant"
expect_status 2 run --variant gdn.cpu.f64 case.safetensors -o x.npy
expect_status 2 run --variant gdn.cpu.f64 case.safetensors
expect_status 2 check case.safetensors
expect_status 2 check case.safetensors missing.safetensors
expect_status 2 audit --shape $shape
expect_status 2 audit --variant 'gdn.none.*' --shape $shape &&
    expect_grep err "no variant matches 'gdn.none.\*'" "no match"
expect_status 2 audit --op gdn --variant 'gdn.none.*' --shape $shape &&
    expect_grep err "no gdn variant matches 'gdn.none.\*'" "no match with --op"
expect_status 2 validate --suite nosuch &&
    expect_grep err "suites/nosuch.tsv" "unknown suite"

# audit: every CPU variant on one case, one table, all gates pass.
expect_status 0 audit --variant 'gdn.cpu.*' --shape $shape --seed 4 --h0 --json audit.json
expect_grep out '^audit: gdn B=1,T=70,Hk=1,Hv=2,K=8,V=8 regime=default dtype=f32 seed=4 h0$' "audit header"
# one table row per (variant, tensor): the 8 tensors of a case with h0;
# the study subject gdn.cpu.f32.reversal (requirement stable-steps: the
# default regime's steps are not) is skipped, one row saying why
nv=$("$RECAUDIT" list --format csv variants 'gdn.cpu.*' | tail -n +2 | grep -vc stable-steps)
test "$(grep -c '^gdn\.cpu\.' out)" -eq $((8 * nv + 1)) || fail "audit: expected $nv variants x 8 tensors rows + 1 skip"
expect_grep out '^gdn\.cpu\.f32\.reversal .* skip$' "the reversal subject skipped"
expect_grep out '^[1-9][0-9]* passed, 0 failed, 1 skipped$' "audit summary"
expect_grep audit.json '"command": "audit"' "audit JSON"

# validate on a two-row suite file: table, TAP 13 and JSON agree.
printf '# two rows\nop\tshape\tregime\tdtype\tdirection\tseed\tflags\n' >two.tsv
printf 'gdn\tB=1,T=9,Hk=1,Hv=2,K=4,V=4\tdefault\tbf16\tfwd+bwd\t1\t-\n' >>two.tsv
printf 'gdn\tB=1,T=70,Hk=1,Hv=1,K=4,V=4\ttail\tf32\tfwd\t2\th0\n' >>two.tsv
expect_status 0 validate --suite two.tsv --variant 'gdn.cpu.f[0-9][0-9]' --json v.json
expect_grep out '^variant  *class  *shape  *regime  *dtype  *tensor  *metric  *value  *gate  *pass$' "table header"
expect_grep out '^gdn.cpu.f64  *f64  *B=1,T=9,Hk=1,Hv=2,K=4,V=4  *default  *bf16  *dbeta  *rel_rms ' "a row"
expect_grep out '^[1-9][0-9]* passed, 0 failed, 0 skipped$' "validate summary"
passed=$(sed -n 's/^\([0-9]*\) passed.*/\1/p' out)
expect_status 0 validate --suite two.tsv --variant 'gdn.cpu.f[0-9][0-9]' --tap
head -n 1 out | grep -qx 'TAP version 13' || fail "TAP: first line"
plan=$(sed -n 2p out | sed -n 's/^1\.\.\([0-9]*\)$/\1/p')
points=$(grep -c '^ok [0-9]* - ' out)
test "$plan" = "$points" || fail "TAP: plan 1..$plan but $points test points"
test "$points" = "$passed" || fail "TAP: $points points, table passed $passed"
grep -q '^not ok' out && fail "TAP: unexpected failure"
expect_grep v.json "\"passed\": $passed," "JSON passed count"
finish
