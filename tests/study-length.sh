#!/bin/sh
# recaudit study length --quick: every gdn CPU variant measured at every T, the fits reported.
#
# Independent expectations: the f64 sequential variant computes in double,
# so its o must stay below 1e-12 relative at every T whatever the growth;
# the fp32 rows must be above it and below 2^-16 (fp32 roundoff over short
# memories); the report must hold a fitted exponent for each variant in
# each regime (two regimes).
. "${top_srcdir:-.}/tests/cli-lib.sh"

if expect_status 0 study length --quick --quiet --out q; then
    test -s q/length.md || fail "length.md missing"
    expect_grep q/length.md '^\*\*Headline\.\*\* Error growth' "headline first"
    expect_grep q/length.md 'wall time [0-9.]* s' "wall time"
    nv=$("$RECAUDIT" list variants | awk '$2 == "gdn" && $3 == "cpu"' | wc -l)
    nfit=$(grep -c '^| \(default\|near-unit\) | gdn\.cpu\.[^ ]* | [a-z][a-z0-9]* | [-0-9.]* |' q/length.md)
    test "$nfit" -eq $((2 * nv)) || fail "fits: $nfit rows, want $((2 * nv))"
    awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["tensor"] == "o" && $c["device"] == "cpu" {
            e = $c["rel_rms"] + 0; n++
            if ($c["variant"] == "gdn.cpu.f64" && !(e < 1e-12)) { print "f64 at T=" $c["T"] ": " e; bad = 1 }
            if ($c["class"] == "ieee" || $c["class"] == "f32")
                if (!(e > 1e-12 && e < 2^-16)) { print $c["variant"] " T=" $c["T"] ": " e; bad = 1 }
        }
        END { if (n < 30) { print "only " n " rows"; bad = 1 } exit bad }' q/length.csv >check 2>&1 ||
        { fail "length:"; cat check >&2; }
fi

finish
