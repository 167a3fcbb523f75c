/* Check suite for the gates and suite tables (src/audit/gates.c, suite.c, tsv.c). */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/gates.h"
#include "audit/suite.h"
#include "core/status.h"
#include "core/gen_gdn.h"
#include "core/op.h"
#include "testutil.h"

/*
 * Expected selections are worked out by hand from the rule in gates.h
 * (per metric the most specific class row: exact tensor, then exact
 * dtype; the strictest matching refinement replaces it, equally strict
 * ones told apart by glob literal characters, then tensor, then dtype),
 * with the literal counts written beside each row.  Expected refusals
 * name the file and line of the bad row; line numbers are counted by hand
 * in the literal texts.  The shipped tables are checked against lists
 * written from the documentation (the CPU variant names of the documented
 * naming scheme, the gdn tensors of docs/gdn.md, the seven regimes), not
 * against the code.
 */

#define HDR "op\tclass\trefine\tdtype\ttensor\tmetric\tthreshold\twhy\n"

/* Lines: 1 comment, 2 header, then rows 3..10.  Class rows of f32 (A, C,
   D, F, G) and tf32 (T); refinements of f32 (E: "gdn.cpu.*", 8 literals;
   B: "gdn.cpu.f32", 11), each stricter than every f32 class row of its
   metric. */
static const char *sel_text = "# test gates\n" HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\tA\n" /* 3 */
                              "gdn\tf32\t*\t*\tdk\trel_rms\t2e-3\tC\n"                     /* 4 */
                              "gdn\tf32\t*\tbf16\t*\trel_rms\t3e-3\tD\n"                   /* 5 */
                              "gdn\tf32\t*\t*\t*\tmax_rel\t1e-2\tF\n"                      /* 6 */
                              "gdn\tf32\tgdn.cpu.*\t*\t*\tmax_rel\t5e-3\tE\n"              /* 7 */
                              "gdn\tf32\t*\t*\t*\tcos\t0.999\tG\n"                         /* 8 */
                              "gdn\ttf32\t*\t*\t*\trel_rms\t4e-3\tT\n"                     /* 9 */
                              "gdn\tf32\tgdn.cpu.f32\t*\t*\trel_rms\t5e-4\tB\n";           /* 10 */

static void select_ok(const ra_gates *g, const char *pclass, const char *variant, const char *dtype,
                      const char *tensor, size_t n, const char *whys)
{
    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t got;
    ck_assert_int_eq(ra_gates_select(sel, &got, g, "gdn", pclass, variant, dtype, tensor), RA_OK);
    ck_assert_uint_eq(got, n);
    char buf[64] = "";
    for (size_t i = 0; i < got; i++)
        strcat(buf, sel[i]->why);
    ck_assert_str_eq(buf, whys);
}

START_TEST(special_selection)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g, sel_text, "sel.tsv"), RA_OK);
    ck_assert_uint_eq(g.n, 8);
    /* Order of the result is ra_metric_names(): max_abs, max_rel, rel_rms,
       cos, max_ulp, p99_ulp; so max_rel's row first, then rel_rms, cos. */
    select_ok(&g, "f32", "gdn.cpu.f32", "f32", "o", 3, "EBG");   /* refinements */
    select_ok(&g, "f32", "gdn.cpu.f32", "bf16", "dk", 3, "EBG"); /* B over C, D */
    select_ok(&g, "f32", "gdn.y", "f32", "o", 3, "FAG");         /* class rows */
    select_ok(&g, "f32", "gdn.y", "f32", "dk", 3, "FCG");        /* C: exact tensor */
    select_ok(&g, "f32", "gdn.y", "bf16", "dk", 3, "FCG");       /* tensor beats dtype */
    select_ok(&g, "f32", "gdn.y", "bf16", "o", 3, "FDG");        /* D: exact dtype */
    select_ok(&g, "f32", NULL, "f32", "o", 3, "FAG");            /* no name: class only */
    /* The class, not the name: a name that spells tf32 in class f32 gets
       f32's rows, and a name that spells f32 in class tf32 gets tf32's. */
    select_ok(&g, "f32", "gdn.x.chunk64.tf32", "f32", "o", 3, "FAG");
    select_ok(&g, "tf32", "gdn.cpu.f32", "f32", "o", 1, "T");
    select_ok(&g, "bf16", "gdn.cpu.f32", "f32", "o", 0, ""); /* no bf16 rows */
    select_ok(&g, NULL, "gdn.cpu.f32", "f32", "o", 0, "");   /* no class: no gate */
    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t n = 99;
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "glr", "f32", "gdn.cpu.f32", "f32", "o"), RA_OK);
    ck_assert_uint_eq(n, 0);
    ra_gates_clear(&g);
}
END_TEST

/* A refinement only tightens: one looser than the class gate, or one with
   no class gate under it, is an error naming the lines; an equal one is
   allowed.  For cos (higher is better) looser means lower. */
START_TEST(regress_refine_never_loosens)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\tclass\n"         /* 2 */
                                        "gdn\tf32\tgdn.cpu.*\t*\t*\trel_rms\t2e-3\tloose\n" /* 3 */
                                        "gdn\tf32\tgdn.eq.*\t*\t*\trel_rms\t1e-3\teq\n"     /* 4 */
                                        "gdn\tf32\t*\t*\t*\tcos\t0.999\tcos\n"              /* 5 */
                                        "gdn\tf32\tgdn.c?s.*\t*\t*\tcos\t0.99\tlcos\n"      /* 6 */
                                        "gdn\tf32\tgdn.orph*\t*\t*\tmax_rel\t1e-4\to\n",    /* 7 */
                                    "loose.tsv"),
                     RA_OK);
    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t n;
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cpu.x", "f32", "o"),
                     RA_EFORMAT);
    tu_has(ra_last_error(), "loose.tsv line 3", "loosen", "line 2");
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cos.x", "f32", "o"),
                     RA_EFORMAT);
    tu_has(ra_last_error(), "loose.tsv line 6", "loosen", "line 5", "cos");
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.orphan", "f32", "o"),
                     RA_EFORMAT);
    tu_has(ra_last_error(), "loose.tsv line 7", "no class gate");
    /* A loose refinement is refused even where a stricter one matches too
       (the stricter would be the gate): gdn.cpu.x matches lines 3 and 4.
       The loose key is the shorter (4 literals against 8), so a matcher
       that checked only the most specific row would let it pass. */
    ra_gates_clear(&g);
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR
                                    "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\tclass\n"           /* 2 */
                                    "gdn\tf32\tgdn.*\t*\t*\trel_rms\t2e-3\tloose\n"       /* 3 */
                                    "gdn\tf32\tgdn.cpu.*\t*\t*\trel_rms\t5e-4\tstrict\n", /* 4 */
                                    "both.tsv"),
                     RA_OK);
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cpu.x", "f32", "o"),
                     RA_EFORMAT);
    tu_has(ra_last_error(), "both.tsv line 3", "loosen", "line 2");
    ra_gates_clear(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\tclass\n"
                                        "gdn\tf32\t*\t*\t*\tcos\t0.999\tcos\n"
                                        "gdn\tf32\tgdn.eq.*\t*\t*\trel_rms\t1e-3\teq\n",
                                    "loose2.tsv"),
                     RA_OK);
    /* Equal is allowed; a name no refinement matches gets the class rows. */
    select_ok(&g, "f32", "gdn.eq.x", "f32", "o", 2, "eqcos");
    select_ok(&g, "f32", "gdn.other", "f32", "o", 2, "classcos");
    ra_gates_clear(&g);
}
END_TEST

/* Several matching refinements: the strictest applies, whatever the
   order of the rows and the lengths of their keys (each only tightens, so
   the strictest is what all of them ask for).  Only equally strict ones
   are told apart by specificity, which then names the gate. */
START_TEST(special_strictest)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tf32\t*\t*\t*\trel_rms\t1\tc\n"
                                        "gdn\tf32\tgdn.cpu.*\t*\t*\trel_rms\t2e-4\tx\n"
                                        "gdn\tf32\tgdn.*.f32\t*\t*\trel_rms\t1e-4\ty\n"
                                        "gdn\tf32\tgdn.cpu.f32\t*\t*\trel_rms\t3e-4\tz\n"
                                        "gdn\tf32\t*\t*\t*\tcos\t0.99\tcc\n"
                                        "gdn\tf32\tgdn.cpu.f32\t*\t*\tcos\t0.999\tlong\n"
                                        "gdn\tf32\tgdn.*\t*\t*\tcos\t0.9999\tshort\n",
                                    "strict.tsv"),
                     RA_OK);
    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t n;
    /* rel_rms: y (1e-4, 8 literals) over x (2e-4, 8) and z (3e-4, 11, the
       most specific); cos (higher is better): short (0.9999, 4) over long. */
    select_ok(&g, "f32", "gdn.cpu.f32", "f32", "o", 2, "yshort");
    select_ok(&g, "f32", "gdn.cpu.f64", "f32", "o", 2, "xshort"); /* only x of the three */
    select_ok(&g, "f32", "gdn.ref.f32", "f32", "o", 2, "yshort");
    ra_gates_clear(&g);

    /* Equally strict: the most specific names the gate.  A bracket
       expression counts as one literal: "gdn.[c]pu*" has 7 (g d n . [c] p
       u) and loses to "gdn.cpu.*" (8). */
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tf32\t*\t*\t*\trel_rms\t9\tc\n"
                                        "gdn\tf32\tgdn.[c]pu*\t*\t*\trel_rms\t1\tbracket\n"
                                        "gdn\tf32\tgdn.cpu.*\t*\t*\trel_rms\t1\tplain\n",
                                    "br.tsv"),
                     RA_OK);
    ck_assert_int_eq(g.rows[1].glob_literal, 8 - 1);
    ck_assert_int_eq(g.rows[0].refines, 0);
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cpu.f32", "f32", "o"), RA_OK);
    ck_assert_str_eq(sel[0]->why, "plain");
    ra_gates_clear(&g);

    /* '?' counts nothing: "gdn.cpu.f??" has 9 literals (g d n . c p u . f)
       and loses to "gdn.cpu.f3*" (10) at equal thresholds; counted as
       literals, the ?s would make it 11 and win.  Against "gdn.cpu.*" (8)
       it wins.  Equal thresholds and equal specificity: the earlier line. */
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tf32\t*\t*\t*\trel_rms\t9\tc1\n"
                                        "gdn\tf32\t*\t*\t*\tmax_rel\t9\tc2\n"
                                        "gdn\tf32\tgdn.cpu.f??\t*\t*\trel_rms\t2\tqq\n"
                                        "gdn\tf32\tgdn.cpu.f3*\t*\t*\trel_rms\t2\tf3\n"
                                        "gdn\tf32\tgdn.cpu.*\t*\t*\tmax_rel\t3\tcpu\n"
                                        "gdn\tf32\tgdn.cpu.f??\t*\t*\tmax_rel\t3\tqq2\n"
                                        "gdn\tf32\tgdn.*.f32\t*\t*\tmax_rel\t3\tlate\n",
                                    "q.tsv"),
                     RA_OK);
    ck_assert_int_eq(g.rows[2].glob_literal, 9);
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cpu.f32", "f32", "o"), RA_OK);
    ck_assert_uint_eq(n, 2); /* max_rel, then rel_rms */
    ck_assert_str_eq(sel[0]->why, "qq2");
    ck_assert_str_eq(sel[1]->why, "f3");
    /* gdn.cpu.f64 matches only the ?? row for rel_rms */
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cpu.f64", "f32", "o"), RA_OK);
    ck_assert_str_eq(sel[1]->why, "qq");
    /* gdn.x.f32: "gdn.*.f32" only (max_rel), the class row for rel_rms */
    select_ok(&g, "f32", "gdn.x.f32", "f32", "o", 2, "latec1");
    ra_gates_clear(&g);

    /* cpu (8) and late (8) tie in specificity at max_rel 3 for gdn.cpu.f32
       without qq2: the earlier line names the gate. */
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tf32\t*\t*\t*\tmax_rel\t9\tc\n"
                                        "gdn\tf32\tgdn.cpu.*\t*\t*\tmax_rel\t3\tfirst\n"
                                        "gdn\tf32\tgdn.*.f32\t*\t*\tmax_rel\t3\tsecond\n",
                                    "eq.tsv"),
                     RA_OK);
    select_ok(&g, "f32", "gdn.cpu.f32", "f32", "o", 1, "first");
    ra_gates_clear(&g);
}
END_TEST

START_TEST(special_pass)
{
    ra_gate le = {.metric = "rel_rms", .threshold = 1e-3};
    ra_gate ge = {.metric = "cos", .threshold = 0.999};
    ck_assert(ra_gate_pass(&le, 1e-3)); /* equal passes */
    ck_assert(ra_gate_pass(&le, 0.0));
    ck_assert(!ra_gate_pass(&le, 1.0000001e-3));
    ck_assert(!ra_gate_pass(&le, NAN));
    ck_assert(!ra_gate_pass(&le, INFINITY));
    ck_assert(ra_gate_pass(&ge, 0.999));
    ck_assert(ra_gate_pass(&ge, 1.0));
    ck_assert(!ra_gate_pass(&ge, 0.998));
    ck_assert(!ra_gate_pass(&ge, NAN));
}
END_TEST

/* Each bad text is refused with RA_EFORMAT naming "bad.tsv" and the line. */
static void refused(const char *text, const char *line, const char *what)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g, text, "bad.tsv"), RA_EFORMAT);
    tu_has(ra_last_error(), "bad.tsv", line, what);
    ra_gates_clear(&g);
}

START_TEST(data_refusals)
{
    refused("op\tclass\tvariant\tdtype\ttensor\tmetric\tthreshold\twhy\n", "line 1", "refine");
    refused(HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\n", "line 2", "7 tab-separated fields");
    refused(HDR "gdn\tfp32\t*\t*\t*\trel_rms\t1e-3\tw\n", "line 2", "class 'fp32'");
    refused(HDR "gdn\t*\t*\t*\t*\trel_rms\t1e-3\tw\n", "line 2", "class '*'");
    refused(HDR "gdn\tf32\t*\tfp32\t*\trel_rms\t1e-3\tw\n", "line 2", "dtype 'fp32'");
    refused(HDR "gdn\tf32\t*\t*\t*\trms\t1e-3\tw\n", "line 2", "unknown metric 'rms'");
    refused(HDR "gdn\tf32\t*\t*\t*\trel_rms\t-1\tw\n", "line 2", "threshold '-1'");
    refused(HDR "gdn\tf32\t*\t*\t*\trel_rms\tabc\tw\n", "line 2", "threshold 'abc'");
    refused(HDR "gdn\tf32\t*\t*\t*\trel_rms\tinf\tw\n", "line 2", "threshold 'inf'");
    refused(HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3x\tw\n", "line 2", "threshold '1e-3x'");
    refused(HDR "gdn\tf32\t*\t*\t*\tcos\t1.5\tw\n", "line 2", "can never pass");
    refused(HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\t\n", "line 2", "field 8 is empty");
    refused("# c\n\n" HDR "gdn\tf32\t*\t*\t*\trel_rms\t1e-3\tw\n"
            "gdn\tf32\t*\t*\t*\trel_rms\t2e-3\tw2\n",
            "line 5", "repeats the gate of line 4");
    refused("# only a comment\n" HDR, "bad.tsv", "no gate rows");
    refused("", "bad.tsv", "no header");
}
END_TEST

/* regress_old_layout: a gates file of the former layout (variant-glob,
   which picked gates by name) is refused with what replaced it. */
START_TEST(regress_old_layout)
{
    refused("# old\n\nop\tvariant-glob\tdtype\ttensor\tmetric\tthreshold\twhy\n"
            "gdn\tgdn.*.f32\t*\t*\trel_rms\t2e-5\tw\n",
            "variant-glob column is gone", "declared precision class");
}
END_TEST

START_TEST(data_crlf)
{
    /* CRLF line ends are accepted (a file edited on Windows). */
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    "op\tclass\trefine\tdtype\ttensor\tmetric\tthreshold\twhy\r\n"
                                    "gdn\tieee\t*\t*\t*\trel_rms\t0.5\twhy text\r\n",
                                    "crlf.tsv"),
                     RA_OK);
    ck_assert_uint_eq(g.n, 1);
    ck_assert_str_eq(g.rows[0].why, "why text");
    ck_assert_str_eq(g.rows[0].pclass, "ieee");
    ck_assert(g.rows[0].threshold == 0.5);
    ra_gates_clear(&g);
}
END_TEST

/* Every output and gradient of op, for every input dtype, has a rel_rms
   and a max_rel gate in class pclass under the name variant, and every
   reason carries what was measured. */
static void covered(const ra_gates *g, const char *op, const char *pclass, const char *variant)
{
    static const char *dtypes[] = {"f64", "f32", "bf16", "f16"};
    const ra_op *o = ra_op_find(op);
    ck_assert_ptr_nonnull(o);
    for (const ra_op_tensor *t = o->tensors; t->name; t++) {
        if (t->role != RA_ROLE_OUTPUT && t->role != RA_ROLE_GRADIENT)
            continue;
        for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
            const ra_gate *sel[RA_GATES_MAX_METRICS];
            size_t n;
            ck_assert_msg(ra_gates_select(sel, &n, g, op, pclass, variant, dtypes[d], t->name) ==
                              RA_OK,
                          "%s", ra_last_error());
            int rel_rms = 0, max_rel = 0;
            for (size_t i = 0; i < n; i++) {
                rel_rms |= strcmp(sel[i]->metric, "rel_rms") == 0;
                max_rel |= strcmp(sel[i]->metric, "max_rel") == 0;
                ck_assert_msg(strstr(sel[i]->why, "measured"), "line %d: why lacks 'measured'",
                              sel[i]->line);
            }
            ck_assert_msg(rel_rms && max_rel, "%s class %s %s %s %s: rel_rms %d max_rel %d", op,
                          pclass, variant, dtypes[d], t->name, rel_rms, max_rel);
        }
    }
}

/* The shipped gates cover every gdn class whatever the name (the CPU
   variants' documented names, the example plugin's, names that spell
   another class or none), and the scan and glr classes their variants
   declare (docs/scan.md, docs/glr.md). */
START_TEST(data_shipped_gates)
{
    static const char *classes[] = {"f64", "f32", "ieee", "tf32", "tf32x3", "bf16"};
    static const char *names[] = {"gdn.mykernel.fp32", "gdn.x.chunk64.tf32", "gdn.example.f64",
                                  "anything"};
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_load(&g, NULL), RA_OK);
    for (size_t c = 0; c < sizeof classes / sizeof *classes; c++) {
        for (const char *const *v = tu_cpu_variants; *v; v++)
            covered(&g, "gdn", classes[c], *v);
        for (size_t v = 0; v < sizeof names / sizeof *names; v++)
            covered(&g, "gdn", classes[c], names[v]);
    }
    for (const char *const *v = tu_cpu_scan_variants; *v; v++) {
        covered(&g, "scan.linear", "f32", *v);
        covered(&g, "scan.affine", "ieee", *v);
        covered(&g, "scan.affine", "tf32", *v);
        covered(&g, "scan.log", "f32", *v);
    }
    covered(&g, "scan.affine", "ieee", "scan.mine.affine");
    covered(&g, "glr", "f32", "glr.cpu.f32.store");
    covered(&g, "glr", "ieee", "glr.cpu.chunk64.f32.recompute");
    covered(&g, "glr", "f32", "glr.x.chunk64.f32");
    ra_gates_clear(&g);
}
END_TEST

/* The scan.affine ieee refinements keep store and recompute at the tight
   dA gate while the class row (what an unknown name or the reversal
   backward gets) is the class envelope: values from the shipped file's
   measured rows, written here from its documentation. */
START_TEST(data_shipped_scan_refinement)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_load(&g, NULL), RA_OK);
    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t n;
    const char *const want[][2] = {{"scan.cpu.affine.ieee.store", "2.5e-6"},
                                   {"scan.cpu.affine.ieee.recompute", "2.5e-6"},
                                   {"scan.cpu.affine.ieee.reversal", "2e-5"},
                                   {"scan.mine.affine", "2e-5"}};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(
            ra_gates_select(sel, &n, &g, "scan.affine", "ieee", want[i][0], "f32", "dA"), RA_OK);
        ck_assert_uint_eq(n, 2); /* max_rel, rel_rms */
        ck_assert_msg(sel[1]->threshold == strtod(want[i][1], NULL), "%s: %g", want[i][0],
                      sel[1]->threshold);
    }
    ra_gates_clear(&g);
}
END_TEST

/* A refinement keyed by the case's regime (GLOB@RGLOB, GLOB@!RGLOB)
   applies only where the regime matches (does not match), still only
   tightens, and is not applied when no regime is known; a refine field
   with an empty part is refused.  The shipped bf16 dg rows: 1.2e-1 in the
   default regime, the 0.3 envelope under strong decay over a large state;
   values from gates.tsv's documentation. */
START_TEST(special_regime_refinement)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tbf16\t*\t*\tdg\trel_rms\t0.3\tc\n"
                                        "gdn\tbf16\t*@!*harsh*\t*\tdg\trel_rms\t0.06\tmild\n"
                                        "gdn\tbf16\t*@raw-keys*\t*\tdg\trel_rms\t0.02\traw\n",
                                    "r.tsv"),
                     RA_OK);
    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t n;
    const char *const want[][2] = {
        {"default", "mild"}, {"a+harsh+b", "c"}, {"raw-keys", "raw"}, {"raw-keys+harsh", "raw"}};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(
            ra_gates_select_case(sel, &n, &g, "gdn", "bf16", "gdn.cpu.x", want[i][0], "f32", "dg"),
            RA_OK);
        ck_assert_uint_eq(n, 1);
        ck_assert_msg(strcmp(sel[0]->why, want[i][1]) == 0, "%s: %s", want[i][0], sel[0]->why);
    }
    /* no regime: the class row */
    ck_assert_int_eq(ra_gates_select(sel, &n, &g, "gdn", "bf16", "gdn.cpu.x", "f32", "dg"), RA_OK);
    ck_assert_str_eq(sel[0]->why, "c");
    ra_gates_clear(&g);

    /* a regime-keyed row that would loosen is an error */
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g,
                                    HDR "gdn\tbf16\t*\t*\tdg\trel_rms\t0.06\tc\n"
                                        "gdn\tbf16\t*@*harsh*\t*\tdg\trel_rms\t0.3\tloose\n",
                                    "l.tsv"),
                     RA_OK);
    ck_assert_int_eq(ra_gates_select_case(sel, &n, &g, "gdn", "bf16", "v", "x+harsh", "f32", "dg"),
                     RA_EFORMAT);
    tu_has(ra_last_error(), "l.tsv line 3", "loosen");
    ra_gates_clear(&g);

    static const char *const bad[] = {"@default", "*@", "*@!"};
    for (size_t i = 0; i < 3; i++) {
        char text[256];
        snprintf(text, sizeof text, HDR "gdn\tbf16\t%s\t*\tdg\trel_rms\t0.1\tx\n", bad[i]);
        ra_gates_init(&g);
        ck_assert_int_eq(ra_gates_parse(&g, text, "b.tsv"), RA_EFORMAT);
        tu_has(ra_last_error(), "b.tsv line 2", bad[i]);
        ra_gates_clear(&g);
    }

    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_load(&g, NULL), RA_OK);
    const char *const shipped[][2] = {{"default", "0.12"},
                                      {"strong-decay+large-state+big-beta+aligned-keys", "0.3"}};
    for (size_t i = 0; i < 2; i++) {
        ck_assert_int_eq(ra_gates_select_case(sel, &n, &g, "gdn", "bf16", "gdn.cpu.chunk64.bf16",
                                              shipped[i][0], "f16", "dg"),
                         RA_OK);
        ck_assert_uint_eq(n, 2); /* max_rel, rel_rms */
        ck_assert_msg(sel[1]->threshold == strtod(shipped[i][1], NULL), "%s: %g", shipped[i][0],
                      sel[1]->threshold);
    }
    ra_gates_clear(&g);
}
END_TEST

/* Raw-keys with big-beta (quick's third-phase row): the class rows are the
   envelope of that regime and refinements keyed by the regime keep every
   other regime at the thresholds it had before the pair was admitted.
   Expected thresholds written by hand from gates.tsv's rows and its
   selection rule (most literal characters, then exact tensor, then exact
   dtype): for each gated (class, tensor, metric), the threshold on raw
   keys with big beta, on raw keys without big beta, on big beta without
   raw keys, and on neither. */
START_TEST(data_shipped_raw_keys_big_beta)
{
    static const char *const regimes[4][3] = {
        {"raw-keys+big-beta", "zero-gate+raw-keys+big-beta",
         "near-unit+raw-keys+large-state+big-beta+aligned-keys"},
        {"raw-keys", "near-unit+raw-keys", "zero-gate+raw-keys+large-state+small-beta"},
        {"big-beta", "zero-gate+big-beta+aligned-keys", "near-unit+large-state+big-beta"},
        {"default", "near-unit", "strong-decay+small-beta"}};
    static const struct {
        const char *pclass, *tensor, *metric;
        double want[4]; /* raw-keys+big-beta, raw keys, big beta, neither */
    } rows[] = {
        {"tf32", "dbeta", "rel_rms", {1.4e-2, 6e-3, 6e-3, 6e-3}},
        {"tf32", "dk", "rel_rms", {7.5e-3, 6e-3, 6e-3, 6e-3}},
        {"tf32", "o", "rel_rms", {6e-3, 6e-3, 6e-3, 6e-3}},        /* never raised */
        {"tf32", "dg", "rel_rms", {1.25e-2, 6e-3, 1.25e-2, 6e-3}}, /* !*big-beta* */
        {"tf32", "dbeta", "max_rel", {1.5e-2, 1.5e-2, 1.5e-2, 1.5e-2}},
        {"bf16", "dk", "rel_rms", {6e-2, 4.5e-2, 4.5e-2, 4.5e-2}},
        {"bf16", "o", "rel_rms", {5e-2, 4.5e-2, 4.5e-2, 4.5e-2}},
        {"bf16", "dv", "rel_rms", {4.5e-2, 4.5e-2, 4.5e-2, 4.5e-2}},
        {"bf16", "dbeta", "rel_rms", {1e-1, 8e-2, 3e-2, 3e-2}}, /* !*raw-keys* inside */
        {"bf16", "dv", "max_rel", {1.6e-1, 8e-2, 8e-2, 8e-2}},
        {"bf16", "dk", "max_rel", {1.5e-1, 8e-2, 8e-2, 8e-2}},
        {"bf16", "dbeta", "max_rel", {1.1e-1, 8e-2, 8e-2, 8e-2}},
        {"bf16", "o", "max_rel", {8e-2, 8e-2, 8e-2, 8e-2}},
        {"bf16", "dg", "rel_rms", {1.2e-1, 1.2e-1, 1.2e-1, 1.2e-1}},
    };
    static const char *const dtypes[] = {"f32", "bf16", "f16", "f64"};
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_load(&g, NULL), RA_OK);
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 3; i++)
                for (int d = 0; d < 4; d++) {
                    const ra_gate *sel[RA_GATES_MAX_METRICS];
                    size_t n;
                    ck_assert_int_eq(ra_gates_select_case(sel, &n, &g, "gdn", rows[r].pclass,
                                                          "gdn.cpu.chunk64.x", regimes[k][i],
                                                          dtypes[d], rows[r].tensor),
                                     RA_OK);
                    const ra_gate *got = NULL;
                    for (size_t j = 0; j < n; j++)
                        if (strcmp(sel[j]->metric, rows[r].metric) == 0)
                            got = sel[j];
                    ck_assert_msg(got && got->threshold == rows[r].want[k],
                                  "%s %s %s, %s, %s: %g, want %g", rows[r].pclass, rows[r].tensor,
                                  rows[r].metric, regimes[k][i], dtypes[d],
                                  got ? got->threshold : -1, rows[r].want[k]);
                }
    ra_gates_clear(&g);
}
END_TEST

/* --- suites --------------------------------------------------------------------------- */

#define SHDR "op\tshape\tregime\tdtype\tdirection\tseed\tflags\n"

START_TEST(special_suite_parse)
{
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_int_eq(
        ra_suite_parse(&s,
                       "# tiny: a two-row suite\n" SHDR
                       "gdn\tT=100,B=1,Hk=1,Hv=2,K=8,V=4\ttail\tbf16\tfwd+bwd\t7\th0,l2norm\n"
                       "gdn\tB=2,T=64,H=2,D=16\tdefault\tf32\tfwd\t18446744073709551615\t-\n",
                       "tiny.tsv"),
        RA_OK);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.doc, "tiny: a two-row suite");
    /* The shape is kept in canonical order. */
    ck_assert_str_eq(s.rows[0].spec.shape, "B=1,T=100,Hk=1,Hv=2,K=8,V=4");
    ck_assert_str_eq(s.rows[0].spec.regime, "tail");
    ck_assert_str_eq(s.rows[0].spec.dtype, "bf16");
    ck_assert_int_eq(s.rows[0].spec.bwd, 1);
    ck_assert_uint_eq(s.rows[0].spec.seed, 7);
    ck_assert_uint_eq(s.rows[0].spec.flags, RA_GDN_FLAG_H0 | RA_GDN_FLAG_L2NORM);
    ck_assert_int_eq(s.rows[0].line, 3);
    ck_assert_str_eq(s.rows[1].spec.shape, "B=2,T=64,Hk=2,Hv=2,K=16,V=16");
    ck_assert_int_eq(s.rows[1].spec.bwd, 0);
    ck_assert(s.rows[1].spec.seed == 18446744073709551615ull);
    ck_assert_uint_eq(s.rows[1].spec.flags, 0);
    ck_assert_str_eq(s.rows[1].spec.params, "");
    ra_suite_clear(&s);
}
END_TEST

/* The flags column also carries case parameters (KEY=VALUE) and gdn's
   no-dht flag; the parameter reaches the generated case. */
START_TEST(special_suite_params)
{
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_msg(ra_suite_parse(&s,
                                 SHDR "gdn\tB=1,T=5,Hk=1,Hv=1,K=4,V=2\tdefault\tf32\tfwd+bwd\t3\t"
                                      "scale=0.3,no-dht,h0\n",
                                 "params.tsv") == RA_OK,
                  "%s", ra_last_error());
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.rows[0].spec.params, "scale=0.3");
    ck_assert_uint_eq(s.rows[0].spec.flags, RA_GDN_FLAG_NO_DHT | RA_GDN_FLAG_H0);
    ra_case c;
    ra_case_init(&c);
    ck_assert_int_eq(ra_case_spec_generate(&c, &s.rows[0].spec), RA_OK);
    ck_assert_str_eq(ra_case_param(&c, "scale"), "0.3");
    ck_assert_ptr_null(ra_tensors_find(&c.tensors, "dht"));
    ck_assert_ptr_nonnull(ra_tensors_find(&c.tensors, "do"));
    ck_assert_ptr_nonnull(ra_tensors_find(&c.tensors, "h0"));
    char flags[128];
    ra_case_spec_flags_format(flags, sizeof flags, &s.rows[0].spec, " --");
    ck_assert_str_eq(flags, " --h0 --no-dht --param scale=0.3");
    ra_case_clear(&c);
    ra_suite_clear(&s);
}
END_TEST

static void suite_refused(const char *row, const char *what)
{
    char text[512];
    snprintf(text, sizeof text, "%s%s", SHDR, row);
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_int_ne(ra_suite_parse(&s, text, "bad.tsv"), RA_OK);
    tu_has(ra_last_error(), "bad.tsv line 2", what);
    ra_suite_clear(&s);
}

START_TEST(data_suite_refusals)
{
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=3,K=8\tdefault\tf32\tfwd\t1\t-\n", "missing V");
    suite_refused("gdn\tB=1,T=10,Hk=2,Hv=3,K=8,V=8\tdefault\tf32\tfwd\t1\t-\n", "not a multiple");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tnormal\tf32\tfwd\t1\t-\n",
                  "unknown regime 'normal'");
    suite_refused("gdn\tB=1,T=128,Hk=1,Hv=1,K=8,V=8\ttail\tf32\tfwd\t1\t-\n", "T=128");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tfp8\tfwd\t1\t-\n", "dtype 'fp8'");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tbwd\t1\t-\n", "direction 'bwd'");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t-1\t-\n", "seed '-1'");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t1\th1\n", "flag 'h1'");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t1\th0,\n", "trailing comma");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t1\tscale=0\n",
                  "finite number > 0");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t1\tscale=inf\n",
                  "finite number > 0");
    suite_refused("gdn\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t1\tgamma=1\n",
                  "parameter 'gamma'");
    suite_refused("nope\tB=1,T=10,Hk=1,Hv=1,K=8,V=8\tdefault\tf32\tfwd\t1\t-\n",
                  "op 'nope' is not an operation");
}
END_TEST

/* quick's glr rows: every glr regime, both decays, gradients, T beyond one
   64-step chunk and not a multiple of it, small shapes. */
START_TEST(data_shipped_glr_rows)
{
    static const char *regimes[] = {"hymo", "long-memory", "zero-gate"};
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_int_eq(ra_suite_load(&s, "quick"), RA_OK);
    int seen[3] = {0}, linear = 0, expneg = 0, tail = 0, bwd = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (strcmp(s.rows[i].spec.op, "glr") != 0)
            continue;
        long long B, T, H, S, D;
        ck_assert_int_eq(
            sscanf(s.rows[i].spec.shape, "B=%lld,T=%lld,H=%lld,S=%lld,D=%lld", &B, &T, &H, &S, &D),
            5);
        for (int r = 0; r < 3; r++)
            seen[r] |= strcmp(s.rows[i].spec.regime, regimes[r]) == 0;
        linear |= s.rows[i].spec.flags != 0; /* glr's one flag: linear */
        expneg |= s.rows[i].spec.flags == 0;
        tail |= T > 64 && T % 64 != 0;
        bwd |= s.rows[i].spec.bwd;
        ck_assert_msg(B * T * H * S * D <= 4 * 256 * 64, "row %d is not small", s.rows[i].line);
    }
    ck_assert(seen[0] && seen[1] && seen[2] && linear && expneg && tail && bwd);
    ra_suite_clear(&s);
}
END_TEST

START_TEST(data_shipped_suites)
{
    /* quick: every regime, grouped heads, a partial last
       chunk, h0, bf16 inputs and gradients somewhere in the grid. */
    /* every gdn regime but tail as a row's regime or a component of one
       (composites A+B); tail's partial last chunk is on every gdn row */
    static const char *regimes[] = {"default",    "zero-gate", "strong-decay",
                                    "near-unit",  "raw-keys",  "large-state",
                                    "small-beta", "big-beta",  "aligned-keys"};
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_int_eq(ra_suite_load(&s, "quick"), RA_OK);
    for (size_t r = 0; r < sizeof regimes / sizeof *regimes; r++) {
        int seen = 0;
        for (size_t i = 0; i < s.n; i++) {
            char buf[RA_SPEC_REGIME_MAX + 2];
            char want[64];
            snprintf(buf, sizeof buf, "+%s+", s.rows[i].spec.regime);
            snprintf(want, sizeof want, "+%s+", regimes[r]);
            seen |= strcmp(s.rows[i].spec.op, "gdn") == 0 && strstr(buf, want) != NULL;
        }
        ck_assert_msg(seen, "quick suite lacks regime %s", regimes[r]);
    }
    int gqa = 0, tail = 1, h0 = 0, bf16 = 0, bwd = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (strcmp(s.rows[i].spec.op, "gdn") != 0)
            continue; /* other operations' rows: data_shipped_glr_rows */
        long long B, T, Hk, Hv, K, V;
        if (strcmp(s.rows[i].spec.op, "gdn") != 0) /* the scan rows: tests/t-cpu-scan.c */
            continue;
        ck_assert_int_eq(sscanf(s.rows[i].spec.shape, "B=%lld,T=%lld,Hk=%lld,Hv=%lld,K=%lld,V=%lld",
                                &B, &T, &Hk, &Hv, &K, &V),
                         6);
        gqa |= Hv > Hk && s.rows[i].spec.bwd;
        tail &= T % 64 != 0;
        h0 |= (s.rows[i].spec.flags & RA_GDN_FLAG_H0) != 0;
        bf16 |= strcmp(s.rows[i].spec.dtype, "bf16") == 0;
        bwd |= s.rows[i].spec.bwd;
        /* state updates of a row: quick's dearest rows cover its matrix's
           size x size pairs, K = V = 256 at T = 24 the largest (1.6e6) */
        ck_assert_msg(B * T * Hv * K * V <= 2000000, "row %d is not small", s.rows[i].line);
    }
    ck_assert(gqa && tail && h0 && bf16 && bwd);
    ra_suite_clear(&s);

    /* full: the production gdn shape of the source documents (B=1, Hk=16,
       Hv=32, K=V=128, T from 4096 to 32768) and NKI's T up to 2304, and seed
       003's bigdn layer (B=1, F=11, S=920, H=20, D=112). */
    ra_suite_init(&s);
    ck_assert_int_eq(ra_suite_load(&s, "full"), RA_OK);
    int t4096 = 0, t32768 = 0, nki = 0, sana = 0;
    for (size_t i = 0; i < s.n; i++) {
        t4096 |= strcmp(s.rows[i].spec.shape, "B=1,T=4096,Hk=16,Hv=32,K=128,V=128") == 0;
        t32768 |= strcmp(s.rows[i].spec.shape, "B=1,T=32768,Hk=16,Hv=32,K=128,V=128") == 0;
        nki |=
            strstr(s.rows[i].spec.shape, "T=2304,") && strstr(s.rows[i].spec.shape, "K=128,V=128");
        sana |= strcmp(s.rows[i].spec.op, "bigdn") == 0 &&
                strcmp(s.rows[i].spec.shape, "B=1,F=11,S=920,H=20,D=112") == 0;
    }
    ck_assert(t4096 && t32768 && nki && sana);
    ra_suite_clear(&s);

    /* A missing suite names what it looked for. */
    ra_suite_init(&s);
    ck_assert_int_eq(ra_suite_load(&s, "nosuch"), RA_ENOTFOUND);
    tu_has(ra_last_error(), "suites/nosuch.tsv");
    ra_suite_clear(&s);
}
END_TEST

static Suite *gates_suite(void)
{
    Suite *s = suite_create("gates");
    tu_tcase(s, "special", tu_capture, NULL, special_selection, special_strictest,
             special_regime_refinement, special_pass, special_suite_parse, special_suite_params);
    tu_tcase(s, "regress", tu_capture, NULL, regress_refine_never_loosens, regress_old_layout);
    tu_tcase(s, "data", tu_capture, NULL, data_refusals, data_crlf, data_shipped_gates,
             data_shipped_scan_refinement, data_shipped_raw_keys_big_beta, data_suite_refusals,
             data_shipped_suites, data_shipped_glr_rows);
    return s;
}

int main(void) { return tu_run(gates_suite()); }
