#!/bin/sh
# recaudit study: --list, usage errors, the quick reversal study's files and its fitted slope.
#
# The slope check is independent of the study's own fit: awk reads the CSV,
# takes the reversal rows of gamma = 0.5 whose error is at least 10x the
# store backward's, fits log10(max_rel) against L by the closed-form
# least-squares formulas, and compares with -log10(0.5) = 0.30103 (the
# sigma_min^-L model of the reversal backward) within 15 %.
. "${top_srcdir:-.}/tests/cli-lib.sh"

expect_status 0 study --list && expect_grep out '^reversal ' "--list names reversal" &&
    expect_grep out '^metric ' "--list names metric"
expect_status 2 study && expect_grep err 'which study' "a name is required"
expect_status 2 study nosuch && expect_grep err "unknown study 'nosuch'" "unknown study named"
expect_status 2 study --list reversal
expect_status 2 study reversal --bogus

if expect_status 0 study reversal --quick --quiet --out q; then
    for f in q/reversal.md q/reversal.csv; do
        test -s "$f" || fail "$f missing or empty"
    done
    expect_grep q/reversal.md '^\*\*Headline\.\*\* ' "headline first"
    expect_grep q/reversal.md '^- Commit ' "commit stamp"
    expect_grep q/reversal.md '^- MPFR [0-9]' "MPFR stamp"
    expect_grep q/reversal.md '^- Seeds: 1\.' "seed stamp"
    expect_grep q/reversal.md 'wall time [0-9.]* s' "wall time"
    # the CSV parses: every record has the header's field count (no field
    # of this table holds a comma or a quote)
    awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad || NR < 10 }' q/reversal.csv ||
        fail "reversal.csv: ragged or short"
    gp=${RECAUDIT_GNUPLOT:-gnuplot}
    if test "$gp" != none && command -v "$gp" >/dev/null 2>&1; then
        grep -q '<svg' q/reversal.svg 2>/dev/null || fail "gnuplot present but no SVG"
        expect_grep q/reversal.md '](reversal.svg)' "plot linked"
    fi
    awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["op"] == "scan.affine" && $c["gamma"] == 0.5 {
            if ($c["backward"] == "store") floor = $c["max_rel"]
            if ($c["backward"] == "reversal") { L[n] = $c["L"]; e[n] = $c["max_rel"]; n++ }
        }
        END {
            for (i = 0; i < n; i++) if (e[i] >= 10 * floor && e[i] + 0 == e[i] + 0) {
                x = L[i]; y = log(e[i]) / log(10)
                m++; sx += x; sy += y; sxx += x * x; sxy += x * y
            }
            if (m < 2) { print "fewer than 2 clean points"; exit 1 }
            slope = (m * sxy - sx * sy) / (m * sxx - sx * sx)
            want = -log(0.5) / log(10)
            r = slope / want
            printf "quick reversal slope %.4f vs -log10(0.5) %.4f over %d points\n", slope, want, m
            exit !(r > 0.85 && r < 1.15)
        }' q/reversal.csv >slope 2>&1 || { fail "reversal slope off:"; cat slope >&2; }
    cat slope >&2
fi

# metric: the control passes every rule; a relative bias of 2^-8 on o is
# invisible to cos (scale-invariant: cos(y, (1+e) y) = 1) and shows in
# rel_rms as 2^-8 = 0.00390625 (plus the kernel's own ~1e-7 and the f32
# rounding of the scaled values); TF32 in a kernel declared ieee fails the
# ieee class gates (10x above fp32 roundoff) while fla's loose 2e-2 misses it.
if expect_status 0 study metric --quick --quiet --out q; then
    expect_grep q/metric.md '^\*\*Headline\.\*\* ' "metric headline first"
    awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { k = $c["defect"] "|" $c["rule"]; caught[k] = $c["caught"]; val[k] = $c["value"]
          if ($c["defect"] == "control" && $c["caught"] != "no") { print "control caught by " $c["rule"]; bad = 1 } }
        END {
            if (caught["bias|cos >= 0.999 (Sana)"] != "no") { print "cos caught a bias"; bad = 1 }
            v = val["bias|rel_rms <= 2e-3 (fla tight)"]
            if (v < 0.00390625 - 1e-5 || v > 0.00390625 + 1e-5) { print "bias rel_rms " v; bad = 1 }
            if (caught["tf32-as-ieee|recaudit gates (class ieee)"] != "yes") { print "gates missed tf32"; bad = 1 }
            if (caught["tf32-as-ieee|rel_rms <= 2e-2 (fla loose)"] != "no") { print "loose fla caught tf32"; bad = 1 }
            if (caught["dropped-term|recaudit gates (class ieee)"] != "yes") { print "gates missed the dropped term"; bad = 1 }
            exit bad
        }' q/metric.csv >m.out 2>&1 || { fail "metric study:"; cat m.out >&2; }
fi

# Without gnuplot the report and the CSV still stand, and say so.
if expect_status 0 study reversal --quick --quiet --out nog --gnuplot none; then
    expect_grep nog/reversal.md '^_Plot skipped: plotting disabled' "skip said"
    test -s nog/reversal.csv || fail "CSV missing without gnuplot"
    test -e nog/reversal.svg && fail "an SVG without gnuplot"
fi
# The second run took its references (scan and gdn) from the cache.
expect_grep nog/reversal.md '^- References: 2 from the cache, 0 computed\.' "cache hit"
finish
