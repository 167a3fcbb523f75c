#!/bin/sh
# recaudit study storage --quick: f16 storage overflows on large states, f32 and bf16 do not.
#
# Independent expectations: the large-state regime with h0 starts the state
# at 2^17 N(0,1), beyond the f16 limit 65504, so an f16-stored chunk state
# is inf and o is non-finite, while f32 and bf16 (fp32 exponent range) stay
# finite; on the default regime (values O(1)) f16 storage must cost o about
# its unit roundoff 2^-11 (rel_rms within (2^-16, 2^-7)) and bf16 about
# 2^-8 (within (2^-12, 2^-4)).
. "${top_srcdir:-.}/tests/cli-lib.sh"

if expect_status 0 study storage --quick --quiet --out q; then
    test -s q/storage.md || fail "storage.md missing"
    expect_grep q/storage.md '^\*\*Headline\.\*\* f16 storage' "headline first"
    expect_grep q/storage.md 'wall time [0-9.]* s' "wall time"
    awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["tensor"] == "o" {
            k = $c["case"] "/" $c["storage"]; bad_n[k] += $c["nonfinite"]; seen[k] = 1
            if ($c["case"] == "default") rr[$c["storage"]] = $c["rel_rms"] + 0
        }
        END {
            if (!(bad_n["large-state+h0/f16"] > 0)) { print "f16 finite on large-state+h0"; bad = 1 }
            if (!seen["large-state+h0/f32"] || bad_n["large-state+h0/f32"] != 0) { print "f32 not finite"; bad = 1 }
            if (!seen["large-state+h0/bf16"] || bad_n["large-state+h0/bf16"] != 0) { print "bf16 not finite"; bad = 1 }
            if (!(rr["f16"] > 2^-16 && rr["f16"] < 2^-7)) { print "default f16 rel_rms " rr["f16"]; bad = 1 }
            if (!(rr["bf16"] > 2^-12 && rr["bf16"] < 2^-4)) { print "default bf16 rel_rms " rr["bf16"]; bad = 1 }
            exit bad
        }' q/storage.csv >check 2>&1 || { fail "storage:"; cat check >&2; }
fi

finish
