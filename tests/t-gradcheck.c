/* Tests of the finite-difference gradient checks on the gdn reference. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck/gdn_gc.h"
#include "gradcheck/gradcheck.h"
#include "ref-testutil.h"
#include "ref/ref.h"

/*
 * The reference backward must agree with finite differences of the
 * reference forward to > 30 digits (the analysis in gradcheck.h puts the
 * attainable agreement near 2^-(256 - 80 - a few) ~ 1e-48); a gradient with
 * a wrong term must show next to none.  The wrong gradients are deliberately
 * modified copies of correct ones, made here in the test:
 *   dbeta_t = du_t . v_t instead of du_t . r_t (the state term of
 *   r_t = v_t - S~^T k_t dropped), with du_t = dv_t / beta_t;
 *   dg_t = dL/da_t instead of dL/dg_t (the chain factor a_t = exp(g_t)
 *   forgotten), i.e. dg_t / a_t.
 * Correct gradients stored in f64 agree to about 16 digits (their rounding),
 * which sets the bar for the f64 comparisons.
 */

static ra_gc_opts gopts(ra_gc_mode mode)
{
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.mode = mode;
    o.seed = 5;
    return o;
}

static const ra_gc_row *row(const ra_gc_result *r, const char *name)
{
    const ra_gc_row *w = ra_gc_row_find(r, name);
    ck_assert_msg(w != NULL, "no row %s", name);
    return w;
}

static void expect_rows(const ra_gc_result *r, const char *const *names, size_t n, double min)
{
    ck_assert_uint_eq(r->n, n);
    for (size_t i = 0; i < n; i++) {
        const ra_gc_row *w = row(r, names[i]);
        ck_assert_msg(w->digits > min, "%s: %.1f digits (rel %g)", names[i], w->digits, w->rel);
    }
}

/* The reference backward of c against finite differences: exactly the
   rows named, each agreeing to more than 30 digits. */
static void reference_agrees(ra_gc_result *r, const ra_case *c, const ra_gc_opts *o,
                             const char *what, const char *const *names, size_t n)
{
    ck_assert_int_eq(ra_gradcheck(r, &ra_gc_op_gdn, c, o, NULL, what), RA_OK);
    expect_rows(r, names, n, 30);
}

static const char *const with_h0[] = {"q", "k", "v", "g", "beta", "h0"};
static const char *const with_h0_all[] = {"q", "k", "v", "g", "beta", "h0", "all"};
static const char *const no_h0[] = {"q", "k", "v", "g", "beta"};

START_TEST(random_elementwise)
{
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    /* h0 and dht, one head */
    const ra_gdn_shape s1 = {1, 5, 1, 1, 3, 2};
    ra_case c;
    tu_ref_case(&c, &s1, TU_H0 | TU_DO | TU_DHT, 201);
    reference_agrees(&r, &c, &o, "case 1", with_h0, 6);
    ck_assert_int_eq(row(&r, "q")->n, 15);
    ck_assert_int_eq(row(&r, "h0")->n, 6);
    ra_case_clear(&c);
    /* l2norm, grouped heads (Hv = 2 Hk), no h0 */
    const ra_gdn_shape s2 = {1, 6, 1, 2, 3, 3};
    tu_ref_case(&c, &s2, TU_DO | TU_DHT, 202);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "true"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2eps", "0.01"), RA_OK);
    reference_agrees(&r, &c, &o, "case 2", no_h0, 5);
    ra_case_clear(&c);
    /* everything at once, two batches, Hk = 2, Hv = 4, two segments */
    const ra_gdn_shape s3 = {2, 5, 2, 4, 2, 2};
    tu_ref_case(&c, &s3, TU_H0 | TU_DO | TU_DHT, 203);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "1"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.3"), RA_OK);
    reference_agrees(&r, &c, &o, "case 3", with_h0, 6);
    ra_case_clear(&c);
}
END_TEST

START_TEST(random_directional)
{
    const ra_gdn_shape s = {1, 40, 2, 4, 8, 8};
    ra_case c;
    tu_ref_case(&c, &s, TU_H0 | TU_DO | TU_DHT, 204);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "true"), RA_OK);
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_DIRECTIONAL);
    reference_agrees(&r, &c, &o, "directional", with_h0_all, 7);
    o.mode = RA_GC_DOT;
    reference_agrees(&r, &c, &o, "dot", with_h0_all, 7);
    ra_case_clear(&c);
}
END_TEST

/* Reference gradients rounded to f64, correct and deliberately wrong. */
START_TEST(data_wrong_gradient)
{
    const ra_gdn_shape s = {1, 6, 1, 2, 3, 4};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_H0 | TU_DO | TU_DHT, 205);
    ra_ref_opts ro = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &ro, "case"), RA_OK);
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &ref.tensors, "f64 grads"), RA_OK);
    expect_rows(&r, with_h0, 6, 14.5);
    for (size_t i = 0; i < r.n; i++) /* f64 rounding bounds them */
        ck_assert_msg(r.rows[i].digits < 17.5, "%s: %.1f digits from f64 data", r.rows[i].tensor,
                      r.rows[i].digits);

    /* dbeta without the state term: du . v, du = dv / beta */
    ra_tensor *db = tu_t(&ref, "dbeta");
    const ra_tensor *dv = tu_t(&ref, "dv"), *v = tu_t(&c, "v"), *beta = tu_t(&c, "beta");
    double *keep = malloc(db->nbytes);
    memcpy(keep, db->data, db->nbytes);
    for (int64_t gi = 0; gi < db->numel; gi++) {
        double acc = 0;
        for (int64_t j = 0; j < s.V; j++)
            acc += ra_tensor_get(dv, gi * s.V + j) / ra_tensor_get(beta, gi) *
                   ra_tensor_get(v, gi * s.V + j);
        ra_tensor_set(db, gi, acc);
    }
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &ref.tensors, "wrong dbeta"), RA_OK);
    ck_assert_msg(row(&r, "beta")->digits < 1.5, "dbeta without its state term: %.1f digits",
                  row(&r, "beta")->digits);
    ck_assert(row(&r, "q")->digits > 14.5 && row(&r, "g")->digits > 14.5);
    memcpy(db->data, keep, db->nbytes);
    free(keep);

    /* dg without the chain factor exp(g) */
    ra_tensor *dg = tu_t(&ref, "dg");
    const ra_tensor *g = tu_t(&c, "g");
    for (int64_t gi = 0; gi < dg->numel; gi++)
        ra_tensor_set(dg, gi, ra_tensor_get(dg, gi) / exp(ra_tensor_get(g, gi)));
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &ref.tensors, "wrong dg"), RA_OK);
    ck_assert_msg(row(&r, "g")->digits < 1.5, "dg without exp(g): %.1f digits",
                  row(&r, "g")->digits);
    ck_assert(row(&r, "beta")->digits > 14.5);
    ck_assert(ra_gc_min_digits(&r) < 1.5);
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

START_TEST(data_errors)
{
    const ra_gdn_shape s = {1, 3, 1, 1, 2, 2};
    ra_case c;
    tu_ref_case(&c, &s, 0, 206); /* no do */
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, NULL, "nodo.safetensors"),
                     RA_ENOTFOUND);
    ck_assert_msg(strstr(tu_msg, "'do'") && strstr(tu_msg, "nodo.safetensors"), "%s", tu_msg);
    ra_case_clear(&c);
    tu_ref_case(&c, &s, TU_DO, 207);
    ra_tensors gr;
    ra_tensors_init(&gr);
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &gr, "case"),
                     RA_ENOTFOUND); /* no dq */
    ck_assert_msg(strstr(tu_msg, "'dq'"), "%s", tu_msg);
    o.mode = RA_GC_DOT;
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &gr, "case"), RA_EINVAL);
    o = gopts(RA_GC_ELEMENTWISE);
    o.prec = 80; /* step 2^-80 does not fit */
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, NULL, "case"), RA_EINVAL);
    ra_gc_mode m;
    ck_assert_int_eq(ra_gc_mode_parse(&m, "directional"), RA_OK);
    ck_assert_int_eq(m, RA_GC_DIRECTIONAL);
    ck_assert_int_eq(ra_gc_mode_parse(&m, "sideways"), RA_EINVAL);
    ra_case_clear(&c);
}
END_TEST

/* A given gradient holding one NaN (or Inf) is refused, naming the
   tensor and element, whatever the other elements are: a NaN compares
   false with everything, so a check that let it in would score the row on
   the finite elements alone and pass it. */
START_TEST(regress_nonfinite_given_gradient)
{
    const ra_gdn_shape s = {1, 4, 1, 1, 2, 2};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_H0 | TU_DO | TU_DHT, 208);
    ra_ref_opts ro = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &ro, "case"), RA_OK);
    ra_gc_result r;
    ra_gc_opts o = gopts(RA_GC_ELEMENTWISE);
    ck_assert_int_eq(ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &ref.tensors, "grads"), RA_OK);
    ck_assert(ra_gc_min_digits(&r) > 14.5); /* the correct ones pass */
    const double bad[2] = {NAN, -INFINITY};
    static const char *const where[2] = {"dk", "dv"};
    const int64_t at[2] = {3, 5};
    for (int k = 0; k < 2; k++) {
        ra_tensor *d = tu_t(&ref, where[k]);
        const double keep = ra_tensor_get(d, at[k]);
        ra_tensor_set(d, at[k], bad[k]);
        for (int m = 0; m < 2; m++) {
            o = gopts(m ? RA_GC_DIRECTIONAL : RA_GC_ELEMENTWISE);
            tu_reset();
            char want[64];
            snprintf(want, sizeof want, "'%s' element %lld is not finite", where[k],
                     (long long)at[k]);
            tu_expect_error(
                ra_gradcheck(&r, &ra_gc_op_gdn, &c, &o, &ref.tensors, "nan.safetensors"), RA_EINVAL,
                "nan.safetensors", want);
        }
        ra_tensor_set(d, at[k], keep);
    }
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gradcheck");
    tu_tcase(s, "random", tu_capture, NULL, random_elementwise, random_directional);
    tu_tcase(s, "data", tu_capture, NULL, data_wrong_gradient, data_errors);
    tu_tcase(s, "regress", tu_capture, NULL, regress_nonfinite_given_gradient);
    return s;
}

int main(void) { return tu_run(suite()); }
