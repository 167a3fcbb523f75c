#!/bin/sh
# recaudit study dot --quick: the files, the stamp, and the operand-precision model on the scan rows.
#
# Expected values are the unit roundoffs of the operand formats, not earlier
# outputs: a TF32 product rounds both operands to 10 fraction bits, so the
# scan's Bbar (sums of k such products) must sit within a factor 4 of
# u_tf32 = 2^-11 (between 2^-13 and 2^-9), bf16 ones within a factor 4 of
# u_bf16 = 2^-8 (between 2^-10 and 2^-6); IEEE and 3xTF32 rows keep
# fp32-level products and must stay below 16 u_fp32 = 2^-20.  awk reads the
# CSV by column name.
. "${top_srcdir:-.}/tests/cli-lib.sh"

if expect_status 0 study dot --quick --quiet --out q; then
    for f in q/dot.md q/dot.csv; do
        test -s "$f" || fail "$f missing or empty"
    done
    expect_grep q/dot.md '^\*\*Headline\.\*\* TF32' "headline first"
    expect_grep q/dot.md 'wall time [0-9.]* s' "wall time"
    expect_grep q/dot.md '^- Seeds: 2, 14' "seed stamp"
    awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad || NR < 20 }' q/dot.csv ||
        fail "dot.csv: ragged or short"
    awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["tensor"] == "Bbar" {
            e = $c["max_rel"] + 0; cl = $c["class"]
            if (cl == "tf32") { nt++; if (e < 2^-13 || e > 2^-9) { print "tf32 " $c["sweep"] " x=" $c["x"] ": " e; bad = 1 } }
            if (cl == "ieee" || cl == "tf32x3") { ni++; if (!(e > 0 && e < 2^-20)) { print cl " " $c["x"] ": " e; bad = 1 } }
            if (cl == "bf16") { nb++; if (e < 2^-10 || e > 2^-6) { print "bf16 " $c["x"] ": " e; bad = 1 } }
        }
        END { if (nt < 4 || ni < 8 || nb < 4) { print "rows: tf32 " nt " ieee/tf32x3 " ni " bf16 " nb; bad = 1 }
              exit bad }' q/dot.csv >model 2>&1 || { fail "dot: scan rows off the model:"; cat model >&2; }
fi

finish
