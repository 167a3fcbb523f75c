/* Tests of the derivation checks: a wrong formula fails, its corrected form holds, the report says
 * so. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/glr_case.h"
#include "core/kv.h"
#include "core/op.h"
#include "gradcheck/derive.h"
#include "gradcheck/glr_gc.h"
#include "gradcheck/scan_gc.h"
#include "ref-testutil.h"
#include "ref/glr.h"

/*
 * A formula set built here around glr: "as written" every gradient is 0
 * (wrong: the finite differences are far from 0), "corrected" dv is the
 * reference backward's (right: proven by the engine against FD in
 * t-ref-glr) and the others stay 0.  So the verdicts are known
 * independently of the code under test: dv fails as written with about 0
 * digits and holds corrected with > 30; a formula without a corrected form
 * is not re-evaluated.  The report holds one row per (formula, case).
 */

static ra_status eval(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c, int corrected,
                      mpfr_prec_t prec)
{
    for (int a = 0; a < io->nin; a++)
        RA_TRY(ra_mparr_init(&grads[a], (size_t)io->in[a].n, prec));
    if (!corrected)
        return RA_OK;
    ra_glr_problem p;
    RA_TRY(ra_glr_problem_init(&p, c, RA_GLR_NEED_COTANGENTS, "test"));
    ra_glr_data d;
    RA_TRY(ra_glr_data_init(&d, &p));
    ra_glr_out out;
    ra_status st = ra_glr_run(&out, &d.in, prec, 1, 1, NULL);
    if (st == RA_OK) {
        ra_mparr_free(&grads[RA_GLR_V]);
        grads[RA_GLR_V] = out.dv;
        memset(&out.dv, 0, sizeof out.dv);
        ra_glr_out_clear(&out);
    }
    ra_glr_data_clear(&d);
    return st;
}

static const ra_derive_formula formulas[] = {
    {"v", "dv = 0", "dv = the reference backward"},
    {"b", "db = 0", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_case cases[] = {
    {"expneg", "B=1,T=4,H=1,S=2,D=2", "hymo", NULL},
    {"linear", "B=1,T=4,H=1,S=2,D=2", "long-memory", "linear"},
    {NULL, NULL, NULL, NULL},
};

static const ra_derive_set set = {
    "test set", "tests/t-derive.c", 1, &ra_gc_op_glr_state, formulas, cases, eval};

START_TEST(special_verdicts)
{
    ra_derive_row rows[8];
    size_t n = 0;
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.threads = 1;
    ck_assert_msg(ra_derive_check(rows, &n, 8, &set, &o, 30) == RA_OK, "%s", ra_last_error());
    ck_assert_uint_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(rows[i].holds, 0);
        ck_assert(rows[i].digits < 2);
        if (rows[i].f == &formulas[0])
            ck_assert_msg(rows[i].corr_digits >= 30, "corrected: %.1f", rows[i].corr_digits);
        else
            ck_assert(rows[i].corr_digits < 0); /* no corrected form: not evaluated */
    }
    ck_assert_ptr_eq(rows[0].cs, &cases[0]);
    ck_assert_ptr_eq(rows[3].cs, &cases[1]);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_int_eq(ra_derive_report(f, rows, n, "stamp", 30), RA_OK);
    fclose(f);
    tu_has(buf, "| `dv = 0` | tests/t-derive.c | shipped | expneg |", "**fails**",
           "`dv = the reference backward`", "stamp");
    free(buf);
    /* too small a row buffer is an error, not a silent truncation */
    n = 0;
    tu_expect_error(ra_derive_check(rows, &n, 1, &set, &o, 30), RA_EINTERNAL, "more than 1");
}
END_TEST

/*
 * Seed 002's reversed-scan backward (scan_derive.c), through the operation
 * rows as `recaudit derive` finds them: every formula of every scan set
 * holds at >= 30 digits (the finite differences of the MPFR forward are
 * the independent side).  Two slips written on purpose must fail with few
 * digits, so the check can tell: the reversed scan with A_{t+1} not
 * transposed (k = 2: A^T != A for the random and the rotation transitions)
 * and dA from the current states Abar_t, Bbar_t (every k, here the linear
 * scan).  A slip leaves the formula it does not touch right: dx of the
 * linear scan still holds with the states shifted.
 */

static unsigned scan_alter;

static ra_status scan_eval(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c, int corrected,
                           mpfr_prec_t prec)
{
    (void)corrected;
    return ra_scan_derive_eval(grads, io, c, scan_alter, prec);
}

static const ra_derive_formula scan_affine_f[] = {
    {"Bm", "dB_t = Gh^B_t, Gh^B_t = G^B_t + A_{t+1} Gh^B_{t+1}", NULL},
    {"A", "dA_t from the untransposed reversed scan", NULL},
    {NULL, NULL, NULL},
};
static const ra_derive_formula scan_linear_f[] = {
    {"x", "dx_t = Gh^h_t", NULL},
    {"a", "da_t = Gh^P_t P_t + Gh^h_t h_t", NULL},
    {NULL, NULL, NULL},
};
static const ra_derive_case scan_affine_c[] = {
    {"k=2, v=1", "B=1,T=6,N=1,k=2,v=1", "default", NULL},
    {"rotation", "B=1,T=6,N=1,k=2,v=1", "rotation", NULL},
    {NULL, NULL, NULL, NULL},
};
static const ra_derive_case scan_linear_c[] = {
    {"k=1", "B=1,T=6,D=2", "default", NULL},
    {NULL, NULL, NULL, NULL},
};

START_TEST(data_scan_seed002_holds)
{
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.threads = 1;
    const char *ops[] = {"scan.linear", "scan.affine", "scan.log"};
    size_t total = 0;
    for (size_t i = 0; i < 3; i++) {
        const ra_op *op = ra_op_find(ops[i]);
        ck_assert_ptr_nonnull(op);
        ck_assert_ptr_nonnull(op->derive);
        for (const ra_derive_set *const *s = op->derive; *s; s++) {
            ra_derive_row rows[16];
            size_t n = 0;
            ck_assert_msg(ra_derive_check(rows, &n, 16, *s, &o, 30) == RA_OK, "%s",
                          ra_last_error());
            ck_assert_uint_ge(n, 2);
            for (size_t r = 0; r < n; r++)
                ck_assert_msg(rows[r].holds && rows[r].digits >= 30, "%s %s (%s): %.1f digits",
                              (*s)->name, rows[r].f->input, rows[r].cs->label, rows[r].digits);
            total += n;
        }
    }
    /* linear: 2 formulas x 1 case; affine: 2 x 3 (k=2,v=1 twice, k=4,v=2); log: 2 x 1 */
    ck_assert_uint_eq(total, 10);
}
END_TEST

START_TEST(data_scan_slips_fail)
{
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.threads = 1;
    ra_derive_row rows[8];
    size_t n = 0;
    const ra_derive_set aff = {"no transpose", "tests/t-derive.c", 0,        &ra_gc_op_scan_affine,
                               scan_affine_f,  scan_affine_c,      scan_eval};
    scan_alter = RA_SCAN_DERIVE_NO_TRANSPOSE;
    ck_assert_msg(ra_derive_check(rows, &n, 8, &aff, &o, 30) == RA_OK, "%s", ra_last_error());
    ck_assert_uint_eq(n, 4);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(!rows[i].holds && rows[i].digits < 3, "%s (%s): %.1f digits",
                      rows[i].f->input, rows[i].cs->label, rows[i].digits);
    n = 0;
    const ra_derive_set lin = {"states at t", "tests/t-derive.c", 0,        &ra_gc_op_scan_linear,
                               scan_linear_f, scan_linear_c,      scan_eval};
    scan_alter = RA_SCAN_DERIVE_STATE_AT_T;
    ck_assert_msg(ra_derive_check(rows, &n, 8, &lin, &o, 30) == RA_OK, "%s", ra_last_error());
    ck_assert_uint_eq(n, 2);
    ck_assert_msg(rows[0].holds && rows[0].digits >= 30, "dx: %.1f", rows[0].digits);
    ck_assert_msg(!rows[1].holds && rows[1].digits < 3, "da: %.1f", rows[1].digits);
    scan_alter = 0;
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("derive");
    tu_tcase(s, "special", tu_capture, NULL, special_verdicts);
    tu_tcase(s, "data", tu_capture, NULL, data_scan_seed002_holds);
    tu_tcase(s, "data", tu_capture, NULL, data_scan_slips_fail);
    return s;
}

int main(void) { return tu_run(suite()); }
