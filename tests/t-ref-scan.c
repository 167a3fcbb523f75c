/* Tests of the scan family's MPFR reference, gradient checks, case validation and generator. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/gen_scan.h"
#include "core/op.h"
#include "core/scan_case.h"
#include "gradcheck/gradcheck.h"
#include "gradcheck/scan_gc.h"
#include "ref-naive-scan.h"
#include "ref-testutil.h"
#include "ref/ref.h"
#include "ref/scan.h"

/*
 * Independent expected values: closed forms for special inputs (a = 0,
 * A = I, T = 1, constant log gates), exact integer arithmetic of the
 * explicit product/sum formula at T = 3, and a naive MPFR transcription
 * (ref-naive-scan.h: explicit sums for the backward, the kernels'
 * log-sum-exp formula for scan.log) compared to within 2^-200 normwise.
 * Gradients: finite differences of the MPFR forward agree to > 30 digits
 * (element-wise on small cases, directional on larger ones) for every
 * member and every (k, v) of the envelope.
 */

/* A case of op kind with shape s, f64 inputs filled from a uniform stream
   (in0 in [lo0, hi0), in1 and the cotangents in [-1, 1)); cotangent j
   only when bit j of cots is set. */
static void mkcase(ra_case *c, const ra_scan_shape *s, double lo0, double hi0, uint64_t seed,
                   unsigned cots)
{
    tu_case_init(c, ra_scan_op_name(s->kind));
    uint64_t st = seed;
    for (int slot = 0; slot < 4; slot++) {
        const int j = slot & 1, cot = slot >= 2;
        const char *name = cot ? ra_scan_cot_name(s->kind, j) : ra_scan_in_name(s->kind, j);
        if (!name || (cot && !(cots & (1u << j))))
            continue;
        int64_t d[5];
        int nd = cot ? ra_scan_out_shape(d, s, j) : ra_scan_in_shape(d, s, j);
        ra_tensor *t = tu_add(&c->tensors, name, RA_F64, nd, d, NULL);
        if (slot == 0)
            tu_fill(t, &st, lo0, hi0);
        else
            tu_fill(t, &st, -1, 1);
    }
}

/* The reference of c (f64 outputs, certified, gradients). */
static void reference(ra_case *ref, const ra_case *c)
{
    ra_ref_opts o = tu_ref_opts();
    ra_case_init(ref);
    ck_assert_int_eq(ra_ref_compute(ref, c, &o, "case"), RA_OK);
    ck_assert_str_eq(ra_case_param(ref, "certified"), "yes");
}

static double at(const ra_case *c, const char *name, int64_t i)
{
    return tu_at(&c->tensors, name, i);
}

START_TEST(special_a_zero)
{
    /* a = 0: P_t = 0, h_t = x_t; da_1 = dP_1 (P_0 = 1, h_0 = 0),
       da_t = dh_t x_{t-1} (t > 1), dx_t = dh_t. */
    const ra_scan_shape s = {RA_SCAN_LINEAR, 1, 4, 2, 1, 1};
    ra_case c, r;
    mkcase(&c, &s, 0, 0, 11, 3);
    for (int64_t i = 0; i < 8; i++)
        ra_tensor_set(tu_t(&c, "a"), i, 0.0);
    reference(&r, &c);
    for (int64_t t = 0; t < 4; t++)
        for (int64_t d = 0; d < 2; d++) {
            int64_t i = t * 2 + d;
            ck_assert(at(&r, "P", i) == 0);
            ck_assert(at(&r, "h", i) == at(&c, "x", i));
            ck_assert(at(&r, "dx", i) == at(&c, "dh", i));
            double want = t == 0 ? at(&c, "dP", i) : at(&c, "dh", i) * at(&c, "x", i - 2);
            ck_assert_msg(at(&r, "da", i) == want, "da[%lld] = %g, want %g", (long long)i,
                          at(&r, "da", i), want);
        }
    ra_case_clear(&c), ra_case_clear(&r);
}
END_TEST

START_TEST(special_identity)
{
    /* A = I: Abar_t = I, Bbar_t = sum_{s<=t} B_s, dBm_t = sum_{s>=t} dBbar_s,
       dA_t = sum_{s>=t} dAbar_s + (sum_{s>=t} dBbar_s) Bbar_{t-1}^T.
       Sums of at most 3 values of [-1,1) in double: compared to 1e-15. */
    const ra_scan_shape s = {RA_SCAN_AFFINE, 1, 3, 1, 2, 2};
    ra_case c, r;
    mkcase(&c, &s, 0, 0, 12, 3);
    for (int64_t t = 0; t < 3; t++)
        for (int64_t i = 0; i < 4; i++)
            ra_tensor_set(tu_t(&c, "A"), t * 4 + i, i == 0 || i == 3);
    reference(&r, &c);
    for (int64_t t = 0; t < 3; t++)
        for (int64_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < 2; j++) {
                ck_assert(at(&r, "Abar", t * 4 + i * 2 + j) == (i == j));
                double bb = 0, gb = 0, ga = 0, want = 0;
                for (int64_t q = 0; q <= t; q++)
                    bb += at(&c, "Bm", q * 4 + i * 2 + j);
                for (int64_t q = t; q < 3; q++)
                    gb += at(&c, "dBbar", q * 4 + i * 2 + j),
                        ga += at(&c, "dAbar", q * 4 + i * 2 + j);
                ck_assert(fabs(at(&r, "Bbar", t * 4 + i * 2 + j) - bb) <= 1e-15);
                ck_assert(fabs(at(&r, "dBm", t * 4 + i * 2 + j) - gb) <= 1e-15);
                /* dA_t[i][j] = sum_s dAbar_s[i][j] + sum_q HB[i][q] Bbar_{t-1}[j][q] */
                want = ga;
                for (int64_t q = 0; t > 0 && q < 2; q++) {
                    double h = 0;
                    for (int64_t u = t; u < 3; u++)
                        h += at(&c, "dBbar", u * 4 + i * 2 + q);
                    want += h * at(&r, "Bbar", (t - 1) * 4 + j * 2 + q);
                }
                ck_assert_msg(fabs(at(&r, "dA", t * 4 + i * 2 + j) - want) <= 1e-14,
                              "dA %g want %g", at(&r, "dA", t * 4 + i * 2 + j), want);
            }
    ra_case_clear(&c), ra_case_clear(&r);
}
END_TEST

START_TEST(special_t1)
{
    /* T = 1: Abar = A, Bbar = Bm, dA = dAbar (Abar_0 = I, Bbar_0 = 0), dBm = dBbar. */
    const ra_scan_shape s = {RA_SCAN_AFFINE, 2, 1, 2, 4, 8};
    ra_case c, r;
    mkcase(&c, &s, -1, 1, 13, 3);
    reference(&r, &c);
    const char *pairs[][2] = {{"Abar", "A"}, {"Bbar", "Bm"}, {"dA", "dAbar"}, {"dBm", "dBbar"}};
    for (int p = 0; p < 4; p++) {
        const ra_tensor *x = tu_t(&r, pairs[p][0]), *y = tu_t(&c, pairs[p][1]);
        ck_assert_int_eq(x->numel, y->numel);
        for (int64_t i = 0; i < x->numel; i++)
            ck_assert(ra_tensor_get(x, i) == ra_tensor_get(y, i));
    }
    ra_case_clear(&c), ra_case_clear(&r);
}
END_TEST

START_TEST(special_constant_log)
{
    /* log_coeffs = c, log_values = 0: h_t = sum_{m=0}^{t} e^{c(t-m)}
       = expm1(c (t+1)) / expm1(c); dlog_values_m = sum_{t>=max(m,1)} dh_t e^{c(t-m)}. */
    const ra_scan_shape s = {RA_SCAN_LOG, 1, 5, 1, 1, 1};
    const double cst = -0.375;
    ra_case c, r;
    mkcase(&c, &s, cst, cst, 14, 2);
    for (int64_t i = 0; i < 5; i++)
        ra_tensor_set(tu_t(&c, "log_coeffs"), i, cst);
    for (int64_t i = 0; i < 6; i++)
        ra_tensor_set(tu_t(&c, "log_values"), i, 0.0);
    reference(&r, &c);
    for (int64_t t = 1; t <= 5; t++) {
        double want = expm1(cst * (double)(t + 1)) / expm1(cst);
        ck_assert_msg(fabs(at(&r, "h", t - 1) - want) <= 1e-15 * want, "h_%lld = %.17g, want %.17g",
                      (long long)t, at(&r, "h", t - 1), want);
    }
    for (int64_t m = 0; m <= 5; m++) {
        double want = 0;
        for (int64_t t = m > 1 ? m : 1; t <= 5; t++)
            want += at(&c, "dh", t - 1) * exp(cst * (double)(t - m));
        ck_assert(fabs(at(&r, "dlog_values", m) - want) <= 1e-14);
    }
    ra_case_clear(&c), ra_case_clear(&r);
}
END_TEST

START_TEST(data_explicit_t3)
{
    /* Small integers: the explicit formulas are exact in double.
       Abar_3 = A3 A2 A1, Bbar_3 = A3 A2 B1 + A3 B2 + B3;
       dA_2 = (dAbar_2 + A3^T dAbar_3) A1^T + (dBbar_2 + A3^T dBbar_3) B1^T;
       dBm_1 = dBbar_1 + A2^T dBbar_2 + A2^T A3^T dBbar_3. */
    const ra_scan_shape s = {RA_SCAN_AFFINE, 1, 3, 1, 2, 1};
    ra_case c, r;
    mkcase(&c, &s, 0, 0, 15, 3);
    uint64_t st = 99;
    const char *names[] = {"A", "Bm", "dAbar", "dBbar"};
    for (int n = 0; n < 4; n++) {
        ra_tensor *t = tu_t(&c, names[n]);
        for (int64_t i = 0; i < t->numel; i++)
            ra_tensor_set(t, i, floor(tu_uniform(&st, -3, 4)));
    }
    reference(&r, &c);
    double A[3][2][2], Bv[3][2], GA[3][2][2], GB[3][2];
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 2; i++) {
            Bv[t][i] = at(&c, "Bm", t * 2 + i), GB[t][i] = at(&c, "dBbar", t * 2 + i);
            for (int j = 0; j < 2; j++)
                A[t][i][j] = at(&c, "A", t * 4 + i * 2 + j),
                GA[t][i][j] = at(&c, "dAbar", t * 4 + i * 2 + j);
        }
    for (int i = 0; i < 2; i++) {
        double b3 = Bv[2][i];
        for (int j = 0; j < 2; j++) {
            b3 += A[2][i][j] * Bv[1][j];
            for (int q = 0; q < 2; q++)
                b3 += A[2][i][j] * A[1][j][q] * Bv[0][q];
            double a3 = 0;
            for (int p = 0; p < 2; p++)
                for (int q = 0; q < 2; q++)
                    a3 += A[2][i][p] * A[1][p][q] * A[0][q][j];
            ck_assert(at(&r, "Abar", 2 * 4 + i * 2 + j) == a3);
            /* dA_2 (time index 1) */
            double ha[2] = {GA[1][i][0], GA[1][i][1]}, hb = GB[1][i], want = 0;
            for (int m = 0; m < 2; m++) {
                hb += A[2][m][i] * GB[2][m];
                for (int q = 0; q < 2; q++)
                    ha[q] += A[2][m][i] * GA[2][m][q];
            }
            for (int q = 0; q < 2; q++)
                want += ha[q] * A[0][j][q];
            want += hb * Bv[0][j];
            ck_assert_msg(at(&r, "dA", 1 * 4 + i * 2 + j) == want, "dA_2[%d][%d] %g want %g", i, j,
                          at(&r, "dA", 4 + i * 2 + j), want);
        }
        ck_assert(at(&r, "Bbar", 2 * 2 + i) == b3);
        double g1 = GB[0][i];
        for (int m = 0; m < 2; m++) {
            g1 += A[1][m][i] * GB[1][m];
            for (int q = 0; q < 2; q++)
                g1 += A[1][m][i] * A[2][q][m] * GB[2][q];
        }
        ck_assert(at(&r, "dBm", i) == g1);
    }
    ra_case_clear(&c), ra_case_clear(&r);
}
END_TEST

/* The optimised reference (ra_scan_run at NS bits) against the naive
   transcription: every output and gradient to 2^-200 normwise. */
static void against_naive(const ra_scan_shape *s, double lo0, double hi0, uint64_t seed)
{
    ra_case c;
    mkcase(&c, s, lo0, hi0, seed, 3);
    ra_scan_problem p;
    ck_assert_int_eq(ra_scan_problem_init(&p, &c, RA_SCAN_NEED_COTANGENTS, "case"), RA_OK);
    ra_scan_in in;
    double *buf[4];
    ck_assert_int_eq(ra_scan_in_init(&in, buf, &p), RA_OK);
    ra_scan_out o;
    ck_assert_int_eq(ra_scan_run(&o, &in, NS, 1, 2, NULL), RA_OK);
    nscan n = {s->B, s->T, s->N, s->k, s->v, s->kind == RA_SCAN_LOG, NULL, NULL, NULL, NULL};
    if (n.log)
        ns_log(&n, in.x[0], in.x[1], in.x[3]);
    else
        ns_affine(&n, in.x[0], in.x[1], in.x[2], in.x[3]);
    mpfr_t *mine[4] = {n.y0, n.y1, n.g0, n.g1};
    const ra_mparr *theirs[4] = {&o.y[0], &o.y[1], &o.g[0], &o.g[1]};
    for (int a = n.log ? 1 : 0; a < 4; a++) {
        double e = tu_normwise_log2(theirs[a]->x, (mpfr_srcptr)mine[a], theirs[a]->n);
        ck_assert_msg(e < -200, "%s k=%lld v=%lld array %d: 2^%.1f", ra_scan_op_name(s->kind),
                      (long long)s->k, (long long)s->v, a, e);
    }
    ns_free(&n);
    ra_scan_out_clear(&o);
    ra_scan_in_free(buf);
    ra_case_clear(&c);
}

START_TEST(random_naive)
{
    const ra_scan_shape lin = {RA_SCAN_LINEAR, 2, 7, 3, 1, 1};
    against_naive(&lin, -0.9, 0.9, 21);
    const ra_scan_shape lg = {RA_SCAN_LOG, 2, 6, 2, 1, 1};
    against_naive(&lg, -2, 0.5, 22);
    const int64_t kv[][2] = {{1, 1}, {2, 1}, {2, 4}, {4, 2}, {8, 1}, {16, 2}, {1, 16}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        const ra_scan_shape s = {RA_SCAN_AFFINE, 1, 5, 2, kv[i][0], kv[i][1]};
        const double r = 1.5 / sqrt((double)kv[i][0]);
        against_naive(&s, -r, r, 30 + i);
    }
}
END_TEST

/* Gradient checks: > 30 digits on every row. */
static void gradcheck(const ra_gc_op *op, const ra_case *c, ra_gc_mode mode)
{
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.mode = mode;
    o.seed = 7;
    ra_gc_result r;
    ck_assert_int_eq(ra_gradcheck(&r, op, c, &o, NULL, "case"), RA_OK);
    ck_assert_uint_ge(r.n, 2);
    for (size_t i = 0; i < r.n; i++)
        ck_assert_msg(r.rows[i].digits > 30, "%s %s: %.1f digits", op->name, r.rows[i].tensor,
                      r.rows[i].digits);
}

START_TEST(random_gradcheck)
{
    ra_case c;
    const ra_scan_shape lin = {RA_SCAN_LINEAR, 1, 6, 2, 1, 1};
    mkcase(&c, &lin, -0.9, 0.9, 41, 3);
    gradcheck(&ra_gc_op_scan_linear, &c, RA_GC_ELEMENTWISE);
    ra_case_clear(&c);
    const ra_scan_shape lg = {RA_SCAN_LOG, 1, 6, 2, 1, 1};
    mkcase(&c, &lg, -2, 0, 42, 3);
    gradcheck(&ra_gc_op_scan_log, &c, RA_GC_ELEMENTWISE);
    ra_case_clear(&c);
    const ra_scan_shape lgd = {RA_SCAN_LOG, 2, 40, 3, 1, 1};
    mkcase(&c, &lgd, -2, 0, 43, 3);
    gradcheck(&ra_gc_op_scan_log, &c, RA_GC_DIRECTIONAL);
    ra_case_clear(&c);
    const ra_scan_shape lind = {RA_SCAN_LINEAR, 2, 40, 3, 1, 1};
    mkcase(&c, &lind, -0.9, 0.9, 44, 3);
    gradcheck(&ra_gc_op_scan_linear, &c, RA_GC_DOT);
    ra_case_clear(&c);
    /* every (k, v) of the envelope: element-wise while k <= 4, else directional */
    const int64_t e[] = {1, 2, 4, 8, 16};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            const ra_scan_shape s = {RA_SCAN_AFFINE, 1, e[i] <= 4 ? 3 : 6, 1, e[i], e[j]};
            const double r = 1.2 / sqrt((double)e[i]);
            mkcase(&c, &s, -r, r, 50 + 5 * i + j, 3);
            gradcheck(&ra_gc_op_scan_affine, &c, e[i] <= 4 ? RA_GC_ELEMENTWISE : RA_GC_DIRECTIONAL);
            ra_case_clear(&c);
        }
}
END_TEST

START_TEST(data_bad_input)
{
    ra_case c, r;
    ra_ref_opts o = tu_ref_opts();
    /* k outside the envelope */
    const ra_scan_shape s = {RA_SCAN_AFFINE, 1, 3, 1, 3, 1};
    mkcase(&c, &s, -1, 1, 61, 3);
    ra_case_init(&r);
    tu_expect_error(ra_ref_compute(&r, &c, &o, "bad.safetensors"), RA_EINVAL, "bad.safetensors",
                    "'A'", "axis 3 (k) is 3", "{1,2,4,8,16}");
    ra_case_clear(&c), ra_case_clear(&r);
    /* v outside */
    const ra_scan_shape sv = {RA_SCAN_AFFINE, 1, 3, 1, 2, 32};
    mkcase(&c, &sv, -1, 1, 62, 3);
    ra_case_init(&r);
    tu_expect_error(ra_ref_compute(&r, &c, &o, "case"), RA_EINVAL, "'Bm'", "axis 4 (v) is 32");
    ra_case_clear(&c), ra_case_clear(&r);
    /* wrong length: log_values with T slots, not T+1 */
    const ra_scan_shape sl = {RA_SCAN_LOG, 1, 4, 2, 1, 1};
    mkcase(&c, &sl, -1, 0, 63, 3);
    const int64_t bad[3] = {1, 4, 2};
    tu_add(&c.tensors, "log_values", RA_F64, 3, bad, NULL);
    ra_case_init(&r);
    tu_expect_error(ra_ref_compute(&r, &c, &o, "case"), RA_EINVAL, "'log_values'", "axis 1 (T+1)",
                    "is 4, expected 5");
    ra_case_clear(&c), ra_case_clear(&r);
    /* a cotangent of the wrong length */
    const ra_scan_shape s2 = {RA_SCAN_LINEAR, 1, 4, 2, 1, 1};
    mkcase(&c, &s2, -1, 1, 64, 3);
    const int64_t bad2[3] = {1, 3, 2};
    tu_add(&c.tensors, "dh", RA_F64, 3, bad2, NULL);
    ra_case_init(&r);
    tu_expect_error(ra_ref_compute(&r, &c, &o, "case"), RA_EINVAL, "'dh'", "axis 1 (T) is 3");
    ra_case_clear(&c), ra_case_clear(&r);
    /* non-finite input, named with its index */
    mkcase(&c, &s2, -1, 1, 65, 3);
    ra_tensor_set(tu_t(&c, "x"), 5, NAN);
    ra_case_init(&r);
    tu_expect_error(ra_ref_compute(&r, &c, &o, "case"), RA_EINVAL, "'x'", "[0, 2, 1]", "NaN");
    ra_case_clear(&c), ra_case_clear(&r);
    mkcase(&c, &s2, -1, 1, 66, 3);
    ra_tensor_set(tu_t(&c, "a"), 0, -INFINITY);
    ra_gc_opts go;
    ra_gc_opts_init(&go);
    ra_gc_result gr;
    tu_expect_error(ra_gradcheck(&gr, &ra_gc_op_scan_linear, &c, &go, NULL, "case"), RA_EINVAL,
                    "'a'", "[0, 0, 0]", "-Inf");
    ra_case_clear(&c);
    /* gradient checks need the cotangent of h */
    mkcase(&c, &s2, -1, 1, 67, 1);
    tu_expect_error(ra_gradcheck(&gr, &ra_gc_op_scan_linear, &c, &go, NULL, "case"), RA_ENOTFOUND,
                    "'dh'");
    ra_case_clear(&c);
    /* shapes outside the envelope are refused when parsed */
    ra_scan_shape sh;
    tu_expect_error(ra_scan_shape_parse(&sh, RA_SCAN_AFFINE, "B=1,T=4,N=1,k=5,v=1"), RA_EINVAL,
                    "k=5", "envelope");
    tu_expect_error(ra_scan_shape_parse(&sh, RA_SCAN_LINEAR, "B=1,T=0,D=1"), RA_EINVAL, "T");
}
END_TEST

START_TEST(data_generator)
{
    /* rotation: A_t^T A_t = gamma^2 I to f32 rounding; seed recipe ranges. */
    ra_case_spec sp;
    ra_case_spec_init(&sp);
    strcpy(sp.op, "scan.affine");
    strcpy(sp.shape, "B=1,T=50,N=2,k=4,v=1");
    strcpy(sp.regime, "rotation");
    strcpy(sp.dtype, "f32");
    sp.seed = 3;
    ck_assert_int_eq(ra_case_spec_check(&sp, "spec"), RA_OK);
    ra_case c;
    ra_case_init(&c);
    ck_assert_int_eq(ra_case_spec_generate(&c, &sp), RA_OK);
    ck_assert_str_eq(ra_case_param(&c, "gamma"), "0.5");
    const ra_tensor *A = tu_t(&c, "A");
    for (int64_t m = 0; m < 100; m++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                double d = 0;
                for (int p = 0; p < 4; p++)
                    d +=
                        ra_tensor_get(A, m * 16 + p * 4 + i) * ra_tensor_get(A, m * 16 + p * 4 + j);
                ck_assert(fabs(d - (i == j ? 0.25 : 0)) < 1e-7);
            }
    ra_case_clear(&c);
    /* rotation:GAMMA sets gamma: A^T A = gamma^2 I; parameters elsewhere are refused */
    strcpy(sp.regime, "rotation:0.25");
    ck_assert_int_eq(ra_case_spec_check(&sp, "spec"), RA_OK);
    ra_case_init(&c);
    ck_assert_int_eq(ra_case_spec_generate(&c, &sp), RA_OK);
    ck_assert_str_eq(ra_case_param(&c, "gamma"), "0.25");
    ck_assert_str_eq(ra_case_param(&c, "regime"), "rotation:0.25");
    A = tu_t(&c, "A");
    for (int64_t m = 0; m < 100; m++)
        for (int i = 0; i < 4; i++) {
            double d = 0;
            for (int p = 0; p < 4; p++)
                d += ra_tensor_get(A, m * 16 + p * 4 + i) * ra_tensor_get(A, m * 16 + p * 4 + i);
            ck_assert(fabs(d - 0.0625) < 1e-8);
        }
    ra_case_clear(&c);
    strcpy(sp.regime, "rotation:0");
    tu_expect_error(ra_case_spec_check(&sp, "spec"), RA_EINVAL,
                    "gamma must be a finite number > 0");
    strcpy(sp.regime, "strong-decay:2");
    tu_expect_error(ra_case_spec_check(&sp, "spec"), RA_EINVAL, "takes no parameter");
    strcpy(sp.op, "gdn");
    strcpy(sp.shape, "B=1,T=4,H=1,D=2");
    strcpy(sp.regime, "default:2");
    tu_expect_error(ra_case_spec_check(&sp, "spec"), RA_EINVAL, "unknown regime 'default:2'");
    strcpy(sp.op, "scan.linear");
    strcpy(sp.shape, "B=2,T=300,D=4");
    strcpy(sp.regime, "default");
    ck_assert_int_eq(ra_case_spec_check(&sp, "spec"), RA_OK);
    ra_case_init(&c);
    ck_assert_int_eq(ra_case_spec_generate(&c, &sp), RA_OK);
    const ra_tensor *a = tu_t(&c, "a"), *x = tu_t(&c, "x");
    double sx2 = 0, amax = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        amax = fmax(amax, fabs(ra_tensor_get(a, i)));
        sx2 += ra_tensor_get(x, i) * ra_tensor_get(x, i);
    }
    ck_assert(amax < 0.9 && amax > 0.85);
    /* E x^2 = 0.01; 2400 draws: relative standard error sqrt(2/2400) = 0.029, 5 of them */
    ck_assert(fabs(sx2 / (double)x->numel / 0.01 - 1) < 5 * 0.029);
    ra_case_clear(&c);
    strcpy(sp.op, "scan.log");
    strcpy(sp.regime, "strong-decay");
    ck_assert_int_eq(ra_case_spec_check(&sp, "spec"), RA_OK);
    ra_case_init(&c);
    ck_assert_int_eq(ra_case_spec_generate(&c, &sp), RA_OK);
    const ra_tensor *lc = tu_t(&c, "log_coeffs");
    ck_assert_int_eq(tu_t(&c, "log_values")->shape[1], 301);
    double mean = 0;
    for (int64_t i = 0; i < lc->numel; i++) {
        ck_assert(ra_tensor_get(lc, i) <= 0);
        mean += ra_tensor_get(lc, i) / (double)lc->numel;
    }
    /* -Exponential(1.8): sd of the mean 1.8/sqrt(2400) = 0.037 */
    ck_assert(fabs(mean + 1.8) < 5 * 0.037);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref-scan");
    tu_tcase(s, "special", tu_capture, NULL, special_a_zero, special_identity, special_t1,
             special_constant_log);
    tu_tcase(s, "data", tu_capture, NULL, data_explicit_t3, data_bad_input, data_generator);
    tu_tcase(s, "random", tu_capture, NULL, random_naive, random_gradcheck);
    return s;
}

int main(void) { return tu_run(suite()); }
