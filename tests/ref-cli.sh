#!/bin/sh
# `recaudit ref`, `gradcheck` and `bench-ref` from the command line: files
# written, certificates, exit statuses, and one-line errors for bad cases.
. "${top_srcdir:-.}/tests/cli-lib.sh"

RECAUDIT_CACHE=$work/cache
export RECAUDIT_CACHE

# mkst FILE JSON: a .safetensors file with header JSON, followed by the raw
# bytes on stdin (8-byte little-endian header length, header, data).
mkst() {
    n=${#2}
    {
        i=0
        while test $i -lt 8; do
            printf "\\$(printf %o $(((n >> (8 * i)) & 255)))"
            i=$((i + 1))
        done
        printf '%s' "$2"
        cat
    } >"$1"
}

# f32 tensor entry: name shape begin end
ent() { printf '"%s":{"dtype":"F32","shape":[%s],"data_offsets":[%s,%s]}' "$1" "$2" "$3" "$4"; }
meta() { printf '"__metadata__":{"op":"%s","recaudit_format":"1"}' "$1"; }

# bad FILE PATTERN WHAT: `ref FILE` exits 2 with one line on stderr matching PATTERN.
bad() {
    if expect_status 2 ref "$1" --no-cache; then
        expect_grep err "$2" "$3"
        test "$(wc -l <err)" -eq 1 || fail "$3: more than one line on stderr"
    fi
}

# --- a generated case: reference, certificate, cache ------------------------------------
expect_status 0 gen --op gdn --shape B=1,T=12,Hk=1,Hv=2,K=8,V=4 --h0 --seed 3 -o c.safetensors
if expect_status 0 ref c.safetensors --threads 2; then
    expect_grep out '^dbeta ' "table row for dbeta"
    expect_grep out 'certified: yes' "certified"
    expect_grep out 'cache: miss' "first run computes"
    test -f c.ref.safetensors || fail "default output c.ref.safetensors not written"
fi
expect_status 0 inspect c.ref.safetensors && {
    expect_grep out '^certified: yes$' "certificate in the metadata"
    expect_grep out '^ref_prec: 128$' "working precision in the metadata"
    expect_grep out '^certified_bits.dh0: ' "bits of dh0"
    expect_grep out '^mpfr_version: ' "MPFR version"
}
expect_status 0 ref c.safetensors -o again.safetensors && expect_grep out 'cache: hit' "second run hits"
expect_status 0 ref c.safetensors --no-cache --no-certify -o unchecked.safetensors &&
    expect_grep out 'certified: unchecked' "no certification"
expect_status 0 ref c.safetensors --no-cache --no-grads --format csv -o fwd.safetensors && {
    expect_grep out '^tensor,shape,certified_bits,status$' "csv header"
    grep '^dq,' out >/dev/null && fail "--no-grads still wrote gradients"
}

# --- a case built to lose bits: a huge h0 row erased by the delta rule (T = 1, beta = 1,
# g = 0, k = q = e0, h0 row 0 = 2^80, v = (0.3, -0.7), all f64); about 47 of 128 bits
# survive (tests/t-certify.c derives it) ---------------------------------------------------
ent64() { printf '"%s":{"dtype":"F64","shape":[%s],"data_offsets":[%s,%s]}' "$1" "$2" "$3" "$4"; }
one='\000\000\000\000\000\000\360\077'
zero='\000\000\000\000\000\000\000\000'
{
    printf "$one$zero$one$zero"                                   # q, k = (1, 0)
    printf '\063\063\063\063\063\063\323\077\146\146\146\146\146\146\346\277' # v = (0.3, -0.7)
    printf "$zero$one"                                            # g = 0, beta = 1
    big='\000\000\000\000\000\000\360\104'                     # 2^80
    printf "$big$big$one"'\000\000\000\000\000\000\000\300'       # h0 = [[2^80, 2^80], [1, -2]]
    printf "$one"'\000\000\000\000\000\000\340\277'             # do = (1, -0.5)
    printf '\000\000\000\000\000\000\320\077\000\000\000\000\000\000\340\077' # dht row 0 = (0.25, 0.5)
    printf '\000\000\000\000\000\000\360\277\000\000\000\000\000\000\000\100' # dht row 1 = (-1, 2)
} | mkst lossy.safetensors "{$(meta gdn),$(ent64 q 1,1,1,2 0 16),$(ent64 k 1,1,1,2 16 32),$(ent64 v 1,1,1,2 32 48),$(ent64 g 1,1,1 48 56),$(ent64 beta 1,1,1 56 64),$(ent64 h0 1,1,2,2 64 96),$(ent64 do 1,1,1,2 96 112),$(ent64 dht 1,1,2,2 112 144)}"
if expect_status 1 ref lossy.safetensors --no-cache --prec-cap 128; then
    expect_grep out 'certified: no' "shortfall reported"
    expect_grep out 'SHORT' "short tensor marked"
    expect_grep err 'not certified' "shortfall on stderr"
fi
expect_status 0 ref lossy.safetensors --no-cache && expect_grep out 'rounds: 128/256:4[0-9],256/512:' "Ziv raised the precision"
# --prec-cap bounds the next working precision inclusively (256 allows the
# 256-bit round, 255 does not); a cap one bit below --prec is a usage error
expect_status 0 ref lossy.safetensors --no-cache --prec-cap 256 &&
    expect_grep out 'rounds: 128/256:4[0-9],256/512:' "cap 256 allows the 256-bit round"
expect_status 1 ref lossy.safetensors --no-cache --prec-cap 255 && expect_grep out 'certified: no' "cap 255 stops at 128"
expect_status 2 ref lossy.safetensors --no-cache --prec-cap 127 && expect_grep err '--prec-cap 127 is below --prec 128' "cap below prec"

# --- bad cases: exit 2, one line naming the file and the problem -----------------------------------
zeros() { head -c "$1" /dev/zero; }
zeros 208 | mkst hv.safetensors "{$(meta gdn),$(ent q 1,2,2,2 0 32),$(ent k 1,2,2,2 32 64),$(ent v 1,2,3,2 64 112),$(ent g 1,2,3 112 136),$(ent beta 1,2,3 136 160),$(ent do 1,2,3,2 160 208)}"
bad hv.safetensors 'hv.safetensors.*Hv=3.*Hk=2' "Hv not a multiple of Hk"
zeros 88 | mkst kdim.safetensors "{$(meta gdn),$(ent q 1,2,1,2 0 16),$(ent k 1,2,1,3 16 40),$(ent v 1,2,1,2 40 56),$(ent g 1,2,1 56 64),$(ent beta 1,2,1 64 72),$(ent do 1,2,1,2 72 88)}"
bad kdim.safetensors "tensor 'k' axis 3 (K)" "K mismatch"
zeros 56 | mkst nobeta.safetensors "{$(meta gdn),$(ent q 1,2,1,2 0 16),$(ent k 1,2,1,2 16 32),$(ent v 1,2,1,2 32 48),$(ent g 1,2,1 48 56)}"
bad nobeta.safetensors "nobeta.safetensors: missing tensor 'beta'" "missing tensor"
{ zeros 36; printf '\000\000\300\177'; zeros 24; } | mkst nan.safetensors "{$(meta gdn),$(ent q 1,2,1,2 0 16),$(ent k 1,2,1,2 16 32),$(ent v 1,2,1,2 32 48),$(ent g 1,2,1 48 56),$(ent beta 1,2,1 56 64)}"
bad nan.safetensors "tensor 'v' element \[0, 0, 0, 1\] is NaN" "NaN named"
zeros 64 | mkst noref.safetensors "{$(meta no-such-op),$(ent q 1,2,1,2 0 16),$(ent k 1,2,1,2 16 32),$(ent v 1,2,1,2 32 48),$(ent g 1,2,1 48 56),$(ent beta 1,2,1 56 64)}"
bad noref.safetensors "op 'no-such-op' has no MPFR reference" "op without a reference"
zeros 16 | mkst noop.safetensors "{\"__metadata__\":{\"x\":\"1\"},$(ent q 1,2,1,2 0 16)}"
bad noop.safetensors "noop.safetensors.*'op'" "file without an op"
expect_status 2 ref
expect_status 2 ref c.safetensors --prec 20
expect_status 2 ref c.safetensors --prec 128 --check-prec 128
expect_status 2 ref missing.safetensors --no-cache && expect_grep err 'missing.safetensors' "missing file named"

# --- gradcheck -------------------------------------------------------------------------------------------
if expect_status 0 gradcheck --op gdn --h0 --l2norm --threads 2; then
    expect_grep out '^h0 ' "row for h0"
    expect_grep out 'pass$' "verdict"
fi
expect_status 0 gradcheck c.safetensors --mode directional && expect_grep out '^all ' "directional row all"
# at 64 bits with a step of 2^-20 the differences keep about 13 digits: below 30
expect_status 1 gradcheck --op gdn --prec 64 --h-log2 20 && expect_grep out 'FAIL$' "honest failure"
# the f64 reference gradients agree to ~16 digits, not 30
expect_status 1 gradcheck c.safetensors --grads c.ref.safetensors
expect_status 0 gradcheck c.safetensors --grads c.ref.safetensors --min-digits 14
expect_status 2 gradcheck --op gdn --mode sideways
expect_status 2 gradcheck --op no-such-op
expect_status 2 gradcheck nobeta.safetensors

# --- regress_cache_code_version: the build's reference-code version is the cksum of the
# reference sources as they are now (a stale version would keep serving old cache entries) ---
code_version=$(cd "${top_srcdir:-.}" && LC_ALL=C && export LC_ALL &&
    cat src/ref/*.c src/ref/*.h src/core/*_case.c src/core/*_case.h | cksum | sed 's/ /-/')
expect_status 0 inspect c.ref.safetensors &&
    expect_grep out "^ref_code_version: $code_version\$" "regress_cache_code_version: version of the sources"

# --- bench-ref ----------------------------------------------------------------------------------------------
if expect_status 0 bench-ref --shape B=1,T=4,Hk=1,Hv=2,K=8,V=8 --threads 2; then
    expect_grep out '^bare mpfr_fma ' "fma baseline"
    expect_grep out '^gdn backward ' "backward rate"
    expect_grep out '^certified forward+backward ' "wall time"
fi
finish
