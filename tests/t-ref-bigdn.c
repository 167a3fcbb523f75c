/* Tests of the bigdn MPFR reference and case code: a hand case, special inputs, a double
 * transcription, FD, refusals. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigdn_case.h"
#include "core/kv.h"
#include "core/op.h"
#include "gradcheck/bigdn_gc.h"
#include "gradcheck/derive.h"
#include "ref-testutil.h"
#include "ref/bigdn.h"

/*
 * Expected values come from (a) a case small enough to differentiate by
 * hand (F = 1, S = 1, D = 2: no reverse stream, out = beta (Qr.Kr) V /
 * (beta Q.K + eps), every gradient a rational number worked out below);
 * (b) special inputs with exact consequences (beta = 0: every state is 0,
 * so out = 0 and ddecay = 0 exactly; decay = 0: M_f = A_f and M'_f =
 * A_{f+1}, computed here directly); (c) a plain double-precision
 * transcription of SPEC.md §4 written in this file (features, per-frame
 * products, both streams as explicit matrix loops), against which the
 * MPFR forward must agree to double rounding (relative 1e-11 normwise:
 * a few hundred operations of order-one values); (d) finite differences
 * of the forward (the generic engine) for every gradient; (e) exact
 * identities (thread counts).
 */

#define P 256

/* --- running the reference ------------------------------------------------------------ */

typedef struct run {
    ra_bigdn_data d;
    ra_bigdn_out out;
} run;

static void run_ref(run *r, const ra_case *c, int grads, int threads)
{
    ra_bigdn_problem p;
    ck_assert_msg(ra_bigdn_problem_init(&p, c, 0, "case") == RA_OK, "%s", ra_last_error());
    ck_assert_int_eq(ra_bigdn_data_init(&r->d, &p), RA_OK);
    ck_assert_msg(ra_bigdn_run(&r->out, &r->d.in, P, grads, threads, NULL) == RA_OK, "%s",
                  ra_last_error());
}

static void run_free(run *r)
{
    ra_bigdn_out_clear(&r->out);
    ra_bigdn_data_clear(&r->d);
}

static double at(const ra_mparr *a, int64_t i) { return mpfr_get_d(a->x + i, MPFR_RNDN); }

static void gen(ra_case *c, const char *op, const char *regime, const char *shape, const char *dt)
{
    tu_generate(c, op, shape, regime, dt, 7);
}

/* --- (a) the hand case ------------------------------------------------------------------- */

/* bigdn.core, B=F=S=H=1, D=2:
 *   Q = (1,2), K = (3,1), Qr = (2,-1), Kr = (1,1), V = (4,-2), beta = 1/2,
 *   decay = 0.7 (unused at F = 1), eps = 1/2, dout = (1,1).
 *   den = beta Q.K = 5/2, r = 3, Qr.Kr = 1, num = beta (Qr.Kr) V = (2,-1),
 *   out = (2/3, -1/3);  L = out.dout = 1/3.
 *   dV = beta (Qr.Kr) dout / r = (1/6, 1/6)
 *   dQr = beta (V.dout) Kr / r = (1/3, 1/3);  dKr = beta (V.dout) Qr / r = (2/3, -1/3)
 *   dQ = -(L/r) beta K = (-1/6, -1/18);  dK = -(L/r) beta Q = (-1/18, -1/9)
 *   dbeta = (Qr.Kr)(V.dout)/r - (L/r) Q.K = 2/3 - 5/9 = 1/9;  ddecay = 0 */
START_TEST(special_hand)
{
    ra_case c;
    tu_case_init(&c, "bigdn.core");
    const int64_t tok[4] = {1, 1, 1, 2}, b4[4] = {1, 1, 1, 1}, g3[3] = {1, 1, 1};
    tu_add(&c.tensors, "Q", RA_F64, 4, tok, (const double[]){1, 2});
    tu_add(&c.tensors, "K", RA_F64, 4, tok, (const double[]){3, 1});
    tu_add(&c.tensors, "Qr", RA_F64, 4, tok, (const double[]){2, -1});
    tu_add(&c.tensors, "Kr", RA_F64, 4, tok, (const double[]){1, 1});
    tu_add(&c.tensors, "V", RA_F64, 4, tok, (const double[]){4, -2});
    tu_add(&c.tensors, "beta", RA_F64, 4, b4, (const double[]){0.5});
    tu_add(&c.tensors, "decay", RA_F64, 3, g3, (const double[]){0.7});
    tu_add(&c.tensors, "dout", RA_F64, 4, tok, (const double[]){1, 1});
    ck_assert_int_eq(ra_kv_set(&c.params, "eps", "0.5"), RA_OK);
    run r;
    run_ref(&r, &c, 1, 1);
    const double want_out[] = {2.0 / 3, -1.0 / 3};
    const double want[7][2] = {{-1.0 / 6, -1.0 / 18},
                               {-1.0 / 18, -1.0 / 9},
                               {1.0 / 3, 1.0 / 3},
                               {2.0 / 3, -1.0 / 3},
                               {1.0 / 6, 1.0 / 6},
                               {1.0 / 9, 0},
                               {0, 0}};
    for (int e = 0; e < 2; e++)
        ck_assert_double_eq_tol(at(&r.out.out, e), want_out[e], 1e-15);
    for (int j = 0; j < 7; j++)
        for (int64_t i = 0; i < (int64_t)r.out.g[j].n; i++)
            ck_assert_msg(fabs(at(&r.out.g[j], i) - want[j][i]) < 1e-15, "d%s[%lld] = %.17g",
                          ra_bigdn_in_name(RA_BIGDN_CORE, j), (long long)i, at(&r.out.g[j], i));
    ck_assert(mpfr_zero_p(r.out.g[RA_BIGDN_CDECAY].x)); /* exactly: M_{-1} = 0 */
    run_free(&r);
    ra_case_clear(&c);
}
END_TEST

/* --- (c) the double transcription -------------------------------------------------------- */

/* Features of batch b, head h, token n in double: Q, K, Qr, Kr, V (D each). */
static void features(double *Q, double *K, double *Qr, double *Kr, double *V, const ra_case *c,
                     const ra_bigdn_shape *s, int full, double k_scale, int64_t b, int64_t h,
                     int64_t n)
{
    const int64_t D = s->D, H = s->H, N = s->F * s->S;
    if (!full) {
        const char *nm[5] = {"Q", "K", "Qr", "Kr", "V"};
        double *dst[5] = {Q, K, Qr, Kr, V};
        for (int j = 0; j < 5; j++)
            for (int64_t d = 0; d < D; d++)
                dst[j][d] = tu_at(&c->tensors, nm[j], ((b * N + n) * H + h) * D + d);
        return;
    }
    const ra_tensor *x = tu_t(c, "qkv");
    for (int j = 0; j < 2; j++) {
        double ss = 0;
        for (int64_t cc = 0; cc < H * D; cc++) {
            const double v = ra_tensor_get(x, ((b * N + n) * 3 + j) * H * D + cc);
            ss += v * v;
        }
        const double inv = 1 / sqrt(ss / (double)(H * D) + 1e-5);
        double *y = j ? K : Q, *yr = j ? Kr : Qr;
        for (int64_t d = 0; d < D; d++) {
            const double v = ra_tensor_get(x, ((b * N + n) * 3 + j) * H * D + h * D + d) * inv *
                             tu_at(&c->tensors, j ? "k_norm_w" : "q_norm_w", h * D + d);
            y[d] = (v > 0 ? v : 0) * (j ? k_scale : 1);
        }
        for (int64_t d = 0; d < D; d++)
            yr[d] = y[d] * tu_at(&c->tensors, "rope_cos", n * D + d) +
                    y[d ^ 1] * tu_at(&c->tensors, "rope_sin", n * D + d);
    }
    for (int64_t d = 0; d < D; d++)
        V[d] = ra_tensor_get(x, ((b * N + n) * 3 + 2) * H * D + h * D + d);
}

/* out [B,N,H,D] of SPEC.md §4 in double (eps 1e-6). */
static void naive(double *out, const ra_case *c, int full)
{
    ra_bigdn_problem p;
    ck_assert_int_eq(ra_bigdn_problem_init(&p, c, 0, "case"), RA_OK);
    const ra_bigdn_shape *s = &p.s;
    const int64_t D = s->D, F = s->F, S = s->S, H = s->H, N = F * S, DD = D * D;
    double *Pm = calloc((size_t)(F * DD), 8), *Am = calloc((size_t)(F * DD), 8),
           *Pz = calloc((size_t)(F * DD), 8), *Bz = calloc((size_t)(F * D), 8),
           *Mf = calloc((size_t)(F * DD), 8), *Mr = calloc((size_t)(F * DD), 8),
           *zf = calloc((size_t)(F * D), 8), *zr = calloc((size_t)(F * D), 8),
           *T = calloc((size_t)DD, 8), *f5 = calloc((size_t)(5 * D), 8);
    double *Q = f5, *K = f5 + D, *Qr = f5 + 2 * D, *Kr = f5 + 3 * D, *V = f5 + 4 * D;
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t h = 0; h < H; h++) {
            memset(Pm, 0, (size_t)(F * DD) * 8), memset(Am, 0, (size_t)(F * DD) * 8);
            memset(Pz, 0, (size_t)(F * DD) * 8), memset(Bz, 0, (size_t)(F * D) * 8);
            for (int64_t f = 0; f < F; f++)
                for (int64_t t = 0; t < S; t++) {
                    features(Q, K, Qr, Kr, V, c, s, full, p.k_scale, b, h, f * S + t);
                    const double be = tu_at(&c->tensors, "beta", ((b * H + h) * F + f) * S + t);
                    for (int64_t i = 0; i < D; i++) {
                        Bz[f * D + i] += be * K[i];
                        for (int64_t j = 0; j < D; j++) {
                            Pm[f * DD + i * D + j] += be * Kr[i] * Kr[j];
                            Am[f * DD + i * D + j] += be * Kr[i] * V[j];
                            Pz[f * DD + i * D + j] += be * K[i] * K[j];
                        }
                    }
                }
            /* M_f = g_f (I - P_f) M_{f-1} + A_f; M'_f = g_{f+1} (I - P_{f+1}) M'_{f+1} + A_{f+1} */
            for (int dir = 0; dir < 2; dir++)
                for (int64_t u = 0; u < F; u++) {
                    const int64_t f = dir ? F - 1 - u : u, src = dir ? f + 1 : f;
                    const int64_t prev = dir ? f + 1 : f - 1;
                    double *M = dir ? Mr : Mf, *z = dir ? zr : zf;
                    if (src >= F)
                        continue; /* M'_{F-1} = 0 */
                    const double g = tu_at(&c->tensors, "decay", (b * H + h) * F + src);
                    const int has_prev = prev >= 0 && prev < F;
                    for (int64_t i = 0; i < D; i++) {
                        for (int64_t j = 0; j < D; j++) {
                            double v = 0;
                            for (int64_t m = 0; has_prev && m < D; m++)
                                v += ((i == m) - Pm[src * DD + i * D + m]) *
                                     M[prev * DD + m * D + j];
                            T[i * D + j] = g * v + Am[src * DD + i * D + j];
                        }
                        double v = 0;
                        for (int64_t m = 0; has_prev && m < D; m++)
                            v += ((i == m) - Pz[src * DD + i * D + m]) * z[prev * D + m];
                        z[f * D + i] = g * v + Bz[src * D + i];
                    }
                    memcpy(M + f * DD, T, (size_t)DD * 8);
                }
            for (int64_t f = 0; f < F; f++)
                for (int64_t t = 0; t < S; t++) {
                    const int64_t n = f * S + t;
                    features(Q, K, Qr, Kr, V, c, s, full, p.k_scale, b, h, n);
                    double den = 0;
                    for (int64_t d = 0; d < D; d++)
                        den += Q[d] * (zf[f * D + d] + zr[f * D + d]);
                    for (int64_t e = 0; e < D; e++) {
                        double num = 0;
                        for (int64_t d = 0; d < D; d++)
                            num += Qr[d] * (Mf[f * DD + d * D + e] + Mr[f * DD + d * D + e]);
                        out[((b * N + n) * H + h) * D + e] = num / (den + 1e-6);
                    }
                }
        }
    double *all[] = {Pm, Am, Pz, Bz, Mf, Mr, zf, zr, T, f5};
    for (int i = 0; i < 10; i++)
        free(all[i]);
}

/* The reference against the transcription, normwise. */
static void against_naive(const char *op, const char *regime, const char *shape)
{
    ra_case c;
    gen(&c, op, regime, shape, "f64");
    run r;
    run_ref(&r, &c, 0, 2);
    double *want = malloc(r.out.out.n * 8);
    naive(want, &c, strcmp(op, "bigdn") == 0);
    double err = 0, scale = 0;
    for (size_t i = 0; i < r.out.out.n; i++) {
        err = fmax(err, fabs(at(&r.out.out, (int64_t)i) - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    ck_assert_msg(scale > 0 && err <= 1e-11 * scale, "%s %s %s: err %g scale %g", op, regime, shape,
                  err, scale);
    free(want);
    run_free(&r);
    ra_case_clear(&c);
}

START_TEST(random_naive)
{
    against_naive("bigdn", "default", "B=2,F=3,S=4,H=2,D=4");
    against_naive("bigdn", "sana", "B=1,F=4,S=8,H=3,D=6");
    against_naive("bigdn", "long-frame", "B=1,F=12,S=2,H=2,D=2");
    against_naive("bigdn", "default", "B=1,F=1,S=5,H=2,D=4"); /* F = 1: no reverse stream */
    against_naive("bigdn.core", "default", "B=2,F=3,S=4,H=2,D=4");
    against_naive("bigdn.core", "sana", "B=1,F=5,S=3,H=1,D=8");
}
END_TEST

/* --- (b) special inputs ----------------------------------------------------------------- */

static void set_all(ra_case *c, const char *name, double v)
{
    ra_tensor *t = tu_t(c, name);
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, v);
}

START_TEST(special_beta_zero)
{
    ra_case c;
    gen(&c, "bigdn", "default", "B=1,F=3,S=2,H=2,D=4", "f64");
    set_all(&c, "beta", 0);
    run r;
    run_ref(&r, &c, 1, 1);
    for (size_t i = 0; i < r.out.out.n; i++)
        ck_assert(mpfr_zero_p(r.out.out.x + i));
    for (size_t i = 0; i < r.out.g[RA_BIGDN_DECAY].n; i++)
        ck_assert(mpfr_zero_p(r.out.g[RA_BIGDN_DECAY].x + i));
    run_free(&r);
    ra_case_clear(&c);
}
END_TEST

/* decay = 0: M_f = A_f, M'_f = A_{f+1}, z likewise, so frame f reads
   exactly the products of frames f and f+1 (computed here directly). */
START_TEST(special_decay_zero)
{
    ra_case c;
    gen(&c, "bigdn.core", "default", "B=1,F=4,S=3,H=1,D=4", "f64");
    set_all(&c, "decay", 0);
    run r;
    run_ref(&r, &c, 0, 1);
    const int64_t D = 4, S = 3, F = 4;
    for (int64_t f = 0; f < F; f++)
        for (int64_t t = 0; t < S; t++) {
            const int64_t n = f * S + t;
            double den = 0, num[4] = {0};
            for (int64_t g = f; g <= f + 1 && g < F; g++)
                for (int64_t u = 0; u < S; u++) {
                    const int64_t m = g * S + u;
                    const double be = tu_at(&c.tensors, "beta", g * S + u);
                    double qk = 0, qrkr = 0;
                    for (int64_t d = 0; d < D; d++) {
                        qk += tu_at(&c.tensors, "Q", n * D + d) * tu_at(&c.tensors, "K", m * D + d);
                        qrkr +=
                            tu_at(&c.tensors, "Qr", n * D + d) * tu_at(&c.tensors, "Kr", m * D + d);
                    }
                    den += be * qk;
                    for (int64_t e = 0; e < D; e++)
                        num[e] += be * qrkr * tu_at(&c.tensors, "V", m * D + e);
                }
            for (int64_t e = 0; e < D; e++)
                ck_assert_double_eq_tol(at(&r.out.out, n * D + e), num[e] / (den + 1e-6),
                                        1e-12 * (1 + fabs(num[e] / (den + 1e-6))));
        }
    run_free(&r);
    ra_case_clear(&c);
}
END_TEST

/* --- (d) finite differences --------------------------------------------------------------- */

static void gradcheck(const ra_gc_op *op, const ra_case *c, ra_gc_mode mode, double min)
{
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.mode = mode;
    o.threads = 2;
    ra_gc_result res;
    ck_assert_msg(ra_gradcheck(&res, op, c, &o, NULL, "case") == RA_OK, "%s", ra_last_error());
    for (size_t i = 0; i < res.n; i++) {
        ck_assert_msg(res.rows[i].digits >= min, "%s %s: %.1f digits", op->name, res.rows[i].tensor,
                      res.rows[i].digits);
        ck_assert_int_eq(res.rows[i].excluded, 0);
    }
}

START_TEST(random_gradcheck)
{
    const char *regimes[] = {"default", "sana", "long-frame"};
    for (int k = 0; k < 2; k++) {
        const ra_op *op = ra_op_find(k ? "bigdn.core" : "bigdn");
        for (int rg = 0; rg < 3; rg++) {
            ra_case c;
            gen(&c, op->name, regimes[rg], "B=2,F=3,S=2,H=2,D=2", "f32");
            gradcheck(op->gradcheck, &c, RA_GC_ELEMENTWISE, 30);
            ra_case_clear(&c);
        }
        ra_case c;
        gen(&c, op->name, "default", "B=2,F=5,S=6,H=2,D=4", "bf16");
        gradcheck(op->gradcheck, &c, RA_GC_DIRECTIONAL, 30);
        gradcheck(op->gradcheck, &c, RA_GC_DOT, 30);
        ra_case_clear(&c);
    }
}
END_TEST

/* A q_raw element exactly 0 puts its pre-activation on the ReLU kink: the
   engine must leave that one element out (and say so), and the rest must
   still agree; without the exclusion the quotient straddles the kink. */
START_TEST(regress_kink)
{
    ra_case c;
    gen(&c, "bigdn", "default", "B=1,F=2,S=2,H=2,D=2", "f64");
    ra_tensor_set(tu_t(&c, "qkv"), 0, 0.0); /* q_raw[b=0, n=0, h=0, d=0] */
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    ra_gc_result res;
    ck_assert_int_eq(ra_gradcheck(&res, &ra_gc_op_bigdn, &c, &o, NULL, "case"), RA_OK);
    const ra_gc_row *q = ra_gc_row_find(&res, "qkv");
    ck_assert_int_eq(q->excluded, 1);
    ck_assert_msg(ra_gc_min_digits(&res) >= 30, "%.1f", ra_gc_min_digits(&res));
    for (size_t i = 0; i < res.n; i++)
        if (res.rows[i].excluded)
            ck_assert_str_eq(res.rows[i].tensor, "qkv");
    /* the same check without the hook fails on that element */
    ra_gc_op blind = ra_gc_op_bigdn;
    blind.near_kink = NULL;
    ck_assert_int_eq(ra_gradcheck(&res, &blind, &c, &o, NULL, "case"), RA_OK);
    q = ra_gc_row_find(&res, "qkv");
    ck_assert_int_eq(q->excluded, 0);
    ck_assert_int_eq(q->worst, 0);
    ck_assert_msg(q->digits < 5, "%.1f", q->digits);
    /* directional: the element is not moved, and counted */
    o.mode = RA_GC_DIRECTIONAL;
    ck_assert_int_eq(ra_gradcheck(&res, &ra_gc_op_bigdn, &c, &o, NULL, "case"), RA_OK);
    ck_assert_int_eq(ra_gc_row_find(&res, "qkv")->excluded, 1);
    ck_assert_int_eq(ra_gc_row_find(&res, "all")->excluded, 1);
    ck_assert(ra_gc_min_digits(&res) >= 30);
    ra_case_clear(&c);
}
END_TEST

/* --- (e) identities ------------------------------------------------------------------------ */

/* Seed 003's phase formulas as recaudit derive checks them: every row holds
   (20 core formulas under 2 cases, 7 of the layer under 1). */
START_TEST(random_derive)
{
    const ra_derive_set *const *sets[] = {ra_op_find("bigdn.core")->derive,
                                          ra_op_find("bigdn")->derive};
    ra_derive_row rows[64];
    size_t n = 0;
    ra_gc_opts o;
    ra_gc_opts_init(&o);
    o.threads = 2;
    for (int k = 0; k < 2; k++)
        for (const ra_derive_set *const *s = sets[k]; *s; s++)
            ck_assert_msg(ra_derive_check(rows, &n, 64, *s, &o, 30) == RA_OK, "%s",
                          ra_last_error());
    ck_assert_uint_eq(n, 47);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(rows[i].holds && rows[i].digits >= 45, "%s (%s): %.1f digits",
                      rows[i].f->written, rows[i].cs->label, rows[i].digits);
}
END_TEST

START_TEST(regress_threads)
{
    for (int k = 0; k < 2; k++) {
        ra_case c;
        gen(&c, k ? "bigdn.core" : "bigdn", "sana", "B=2,F=3,S=3,H=3,D=4", "bf16");
        run a, b;
        run_ref(&a, &c, 1, 1);
        run_ref(&b, &c, 1, 3);
        ck_assert_int_eq(mpfr_cmp(a.out.out.x, b.out.out.x), 0);
        for (size_t i = 0; i < a.out.out.n; i++)
            ck_assert(mpfr_equal_p(a.out.out.x + i, b.out.out.x + i));
        for (int j = 0; j < RA_BIGDN_NIN; j++)
            for (size_t i = 0; i < a.out.g[j].n; i++)
                ck_assert(mpfr_equal_p(a.out.g[j].x + i, b.out.g[j].x + i));
        run_free(&a);
        run_free(&b);
        ra_case_clear(&c);
    }
}
END_TEST

/* --- refusals ------------------------------------------------------------------------------ */

/* bad <- a bigdn case with c's tensor shapes (zeros, f64), axis `axis` of
   tensor `name` set to n. */
static void reshaped(ra_case *bad, const ra_case *c, const char *name, int axis, int64_t n)
{
    tu_case_init(bad, "bigdn");
    for (size_t i = 0; i < c->tensors.n; i++) {
        const ra_tensor *t = c->tensors.items[i];
        int64_t sh[RA_MAX_DIMS];
        memcpy(sh, t->shape, sizeof sh);
        if (strcmp(t->name, name) == 0)
            sh[axis] = n;
        tu_add(&bad->tensors, t->name, RA_F64, t->ndim, sh, NULL);
    }
}

START_TEST(data_bad_input)
{
    ra_bigdn_problem p;
    ra_case c;
    gen(&c, "bigdn", "default", "B=1,F=2,S=3,H=2,D=4", "f32");
    /* N != F*S: replace beta by one with S = 2 */
    ra_case bad;
    tu_case_init(&bad, "bigdn");
    for (size_t i = 0; i < c.tensors.n; i++) {
        const ra_tensor *t = c.tensors.items[i];
        int64_t sh[RA_MAX_DIMS];
        memcpy(sh, t->shape, sizeof sh);
        if (strcmp(t->name, "beta") == 0)
            sh[3] = 2;
        if (strcmp(t->name, "rope_cos") == 0)
            sh[0] = 5;
        tu_add(&bad.tensors, t->name, RA_F64, t->ndim, sh, NULL);
    }
    tu_expect_error(ra_bigdn_problem_init(&p, &bad, 0, "x.st"), RA_EINVAL, "x.st", "'qkv'", "N = 6",
                    "'beta'", "N must equal F*S");
    ra_case_clear(&bad);
    reshaped(&bad, &c, "rope_sin", 1, 2);
    tu_expect_error(ra_bigdn_problem_init(&p, &bad, 0, "x.st"), RA_EINVAL, "'rope_sin'", "D");
    ra_case_clear(&bad);
    /* norm weights of the wrong length */
    reshaped(&bad, &c, "k_norm_w", 0, 4);
    tu_expect_error(ra_bigdn_problem_init(&p, &bad, 0, "x.st"), RA_EINVAL, "'k_norm_w'", "H*D");
    ra_case_clear(&bad);
    /* D odd */
    tu_case_init(&bad, "bigdn");
    const int64_t q3[5] = {1, 6, 3, 2, 3}, b4[4] = {1, 2, 2, 3}, g3[3] = {1, 2, 2}, w1[1] = {6},
                  t2[2] = {6, 3}, o4[4] = {1, 6, 2, 3};
    tu_add(&bad.tensors, "qkv", RA_F64, 5, q3, NULL);
    tu_add(&bad.tensors, "beta", RA_F64, 4, b4, NULL);
    tu_add(&bad.tensors, "decay", RA_F64, 3, g3, NULL);
    tu_add(&bad.tensors, "q_norm_w", RA_F64, 1, w1, NULL);
    tu_add(&bad.tensors, "k_norm_w", RA_F64, 1, w1, NULL);
    tu_add(&bad.tensors, "rope_cos", RA_F64, 2, t2, NULL);
    tu_add(&bad.tensors, "rope_sin", RA_F64, 2, t2, NULL);
    tu_add(&bad.tensors, "dout", RA_F64, 4, o4, NULL);
    tu_expect_error(ra_bigdn_problem_init(&p, &bad, 0, "x.st"), RA_EINVAL, "'qkv'", "odd", "RoPE");
    ra_case_clear(&bad);
    ra_bigdn_shape sh;
    tu_expect_error(ra_bigdn_shape_parse(&sh, RA_BIGDN_FULL, "B=1,F=2,S=3,H=2,D=5"), RA_EINVAL,
                    "D=5 is odd");
    ck_assert_int_eq(ra_bigdn_shape_parse(&sh, RA_BIGDN_CORE, "B=1,F=2,S=3,H=2,D=5"), RA_OK);
    tu_expect_error(ra_bigdn_shape_parse(&sh, RA_BIGDN_FULL, "B=1,F=2,S=3,H=2"), RA_EINVAL,
                    "missing D");
    /* non-finite: tensor and index */
    ra_tensor_set(tu_t(&c, "decay"), 3, NAN);
    tu_expect_error(ra_bigdn_problem_init(&p, &c, 0, "x.st"), RA_EINVAL, "'decay'", "[0, 1, 1]");
    ra_tensor_set(tu_t(&c, "decay"), 3, 0.5);
    ra_tensor_set(tu_t(&c, "rope_sin"), 5, INFINITY);
    tu_expect_error(ra_bigdn_problem_init(&p, &c, 0, "x.st"), RA_EINVAL, "'rope_sin'", "[1, 1]");
    ra_tensor_set(tu_t(&c, "rope_sin"), 5, 0.5);
    /* parameters */
    ck_assert_int_eq(ra_kv_set(&c.params, "k_scale", "0"), RA_OK);
    tu_expect_error(ra_bigdn_problem_init(&p, &c, 0, "x.st"), RA_EINVAL, "'k_scale'", "> 0");
    ck_assert_int_eq(ra_kv_set(&c.params, "k_scale", "0.25"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "norm_eps", "-1"), RA_OK);
    tu_expect_error(ra_bigdn_problem_init(&p, &c, 0, "x.st"), RA_EINVAL, "'norm_eps'");
    ck_assert_int_eq(ra_kv_set(&c.params, "norm_eps", "1e-5"), RA_OK);
    ck_assert_int_eq(ra_bigdn_problem_init(&p, &c, 0, "x.st"), RA_OK);
    ck_assert_double_eq(p.k_scale, 0.25);
    /* dout missing when the backward needs it */
    ra_case nod;
    tu_case_init(&nod, "bigdn");
    for (size_t i = 0; i < c.tensors.n; i++)
        if (strcmp(c.tensors.items[i]->name, "dout") != 0)
            tu_add(&nod.tensors, c.tensors.items[i]->name, RA_F64, c.tensors.items[i]->ndim,
                   c.tensors.items[i]->shape, NULL);
    tu_expect_error(ra_bigdn_problem_init(&p, &nod, RA_BIGDN_NEED_COTANGENTS, "x.st"), RA_ENOTFOUND,
                    "'dout'");
    ra_case_clear(&nod);
    ra_case_clear(&c);
}
END_TEST

/* --- generator ----------------------------------------------------------------------------- */

START_TEST(data_generate)
{
    ra_case c;
    gen(&c, "bigdn", "sana", "B=2,F=4,S=16,H=2,D=8", "f32");
    const ra_tensor *q = tu_t(&c, "qkv");
    double ss = 0;
    for (int64_t i = 0; i < q->numel; i++) {
        const double v = ra_tensor_get(q, i);
        ck_assert(v == ra_round_to_dtype(v, RA_BF16)); /* the recipe's bf16 rounding */
        ss += v * v;
    }
    /* 0.1 randn: E x^2 = 0.01 (4096 draws: standard error of the mean square 2.2e-4) */
    ck_assert_msg(fabs(ss / (double)q->numel - 0.01) < 1.5e-3, "%g", ss / (double)q->numel);
    const ra_tensor *be = tu_t(&c, "beta"), *g = tu_t(&c, "decay");
    for (int64_t i = 0; i < be->numel; i++)
        ck_assert(ra_tensor_get(be, i) >= 0 && ra_tensor_get(be, i) <= 0.02);
    for (int64_t i = 0; i < g->numel; i++)
        ck_assert(ra_tensor_get(g, i) >= 0.9f && ra_tensor_get(g, i) <= 0.99f);
    const ra_tensor *cs = tu_t(&c, "rope_cos"), *sn = tu_t(&c, "rope_sin");
    for (int64_t i = 0; i < cs->numel; i += 2) {
        const double co = ra_tensor_get(cs, i), si = ra_tensor_get(sn, i + 1);
        ck_assert(co == ra_tensor_get(cs, i + 1) && ra_tensor_get(sn, i) == -si);
        ck_assert_double_eq_tol(co * co + si * si, 1, 1e-6);
    }
    double ks;
    ck_assert_int_eq(ra_case_param_double(&ks, &c, "k_scale", 0), RA_OK);
    ck_assert_double_eq(ks, 1 / sqrt(8.0 * 16.0));
    /* the core's features are the layer's: same seed, same tables */
    ra_case k;
    gen(&k, "bigdn.core", "sana", "B=2,F=4,S=16,H=2,D=8", "f32");
    double Q[8], K[8], Qr[8], Kr[8], V[8];
    const ra_bigdn_shape s = {2, 4, 16, 2, 8};
    for (int64_t n = 0; n < 64; n += 13)
        for (int64_t h = 0; h < 2; h++) {
            features(Q, K, Qr, Kr, V, &c, &s, 1, ks, 1, h, n);
            for (int64_t d = 0; d < 8; d++) {
                const int64_t o = ((64 + n) * 2 + h) * 8 + d;
                ck_assert_double_eq_tol(tu_at(&k.tensors, "Q", o), Q[d], 1e-6 * (1 + fabs(Q[d])));
                ck_assert_double_eq_tol(tu_at(&k.tensors, "Kr", o), Kr[d], 1e-6);
                ck_assert(tu_at(&k.tensors, "Q", o) >= 0 && tu_at(&k.tensors, "K", o) >= 0);
            }
        }
    ra_case_clear(&k);
    ra_case_clear(&c);
    gen(&c, "bigdn", "long-frame", "B=1,F=16,S=2,H=2,D=2", "f32");
    g = tu_t(&c, "decay");
    for (int64_t i = 0; i < g->numel; i++)
        ck_assert(ra_tensor_get(g, i) >= 0.995f && ra_tensor_get(g, i) <= 1);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref-bigdn");
    tu_tcase(s, "special", tu_capture, NULL, special_hand, special_beta_zero, special_decay_zero);
    tu_tcase(s, "random", tu_capture, NULL, random_naive, random_gradcheck, random_derive);
    tu_tcase(s, "data", tu_capture, NULL, data_bad_input, data_generate);
    tu_tcase(s, "regress", tu_capture, NULL, regress_kink, regress_threads);
    return s;
}

int main(void) { return tu_run(suite()); }
