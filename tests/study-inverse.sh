#!/bin/sh
# recaudit study inverse --quick: the error of T by algorithm and precision, and the raw-keys growth.
#
# Independent expectations: forward substitution is scalar fp32 code with
# no operand rounding, so its T is the same for every precision (the tf32
# and bf16 rows equal the ieee row exactly) and, on unit keys (default
# regime, growth bounded), within 2^-16 of the MPFR inverse; the matmul
# inverses (neumann, schur) do round their operands, so their TF32 T must
# be worse than their IEEE T; positive raw keys make (I+A)^-1 larger than
# unit keys do (max |T_ref| of raw-keys above default's), and raw keys at
# their natural size |k|^2 = K/3 more than the regime's |k|^2 = 1.875.
. "${top_srcdir:-.}/tests/cli-lib.sh"

if expect_status 0 study inverse --quick --quiet --out q; then
    test -s q/inverse.md || fail "inverse.md missing"
    expect_grep q/inverse.md '^\*\*Headline\.\*\* .*stays O(1)' "headline first"
    expect_grep q/inverse.md 'wall time [0-9.]* s' "wall time"
    awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["quantity"] == "T" {
            k = $c["regime"] "/" $c["chunk"] "/" $c["inverse"] "/" $c["precision"]
            e[k] = $c["max_rel"]; g[$c["regime"]] = $c["ref_max_T"] + 0; n++
        }
        END {
            if (n < 36) { print "only " n " T rows"; bad = 1 }
            for (k in e) {
                split(k, a, "/")
                if (a[3] == "fwdsubst" && a[4] != "ieee" && e[k] != e[a[1] "/" a[2] "/fwdsubst/ieee"]) {
                    print "fwdsubst " k " differs from ieee"; bad = 1 }
                if (a[1] == "default" && a[3] == "fwdsubst" && !(e[k] + 0 < 2^-16)) {
                    print "fwdsubst default " k ": " e[k]; bad = 1 }
                if (a[3] != "fwdsubst" && a[4] == "tf32" &&
                    !(e[k] + 0 > e[a[1] "/" a[2] "/" a[3] "/ieee"] + 0)) {
                    print "tf32 not above ieee: " k; bad = 1 }
            }
            if (!(g["raw-keys"] > g["default"])) { print "raw-keys growth " g["raw-keys"] " <= default " g["default"]; bad = 1 }
            if (!(g["raw-keys-K/3"] > g["raw-keys"])) { print "natural keys growth " g["raw-keys-K/3"]; bad = 1 }
            exit bad
        }' q/inverse.csv >check 2>&1 || { fail "inverse:"; cat check >&2; }
fi

finish
