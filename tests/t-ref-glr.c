/* Tests of the glr MPFR reference and case code: closed forms, a naive transcription, FD, refusals.
 */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gen_glr.h"
#include "core/glr_case.h"
#include "core/kv.h"
#include "gradcheck/glr_gc.h"
#include "ref-testutil.h"
#include "ref/glr.h"

/*
 * Expected values come from (a) closed forms derived by hand for special
 * inputs (T = 1; g = 0, where alpha = 1 and every state is a prefix sum,
 * so each gradient is a double sum over time computed directly here; a
 * scalar state with constant gates, a geometric series), evaluated in
 * MPFR here; (b) a naive MPFR transcription of docs/glr.md (every state
 * stored, the adjoint walked over the stored states), written apart from
 * src/ref/glr.c's checkpoint-and-recompute; (c) finite differences of the
 * forward (the generic engine) for the gradients; (d) exact identities
 * (thread counts).  Tolerance: these cases compose fewer than 2^10
 * correctly rounded operations of order-one values at 256 bits, so the
 * normwise error of either side is below 2^-240; asked: 2^-220.
 */

#define P 256
#define TOL_LOG2 (-220.0)

static void glr_case(ra_case *c, const ra_glr_shape *s, ra_glr_decay decay, int with_do)
{
    tu_case_init(c, "glr");
    const int64_t vd[4] = {s->B, s->T, s->H, s->D}, bs[4] = {s->B, s->T, s->H, s->S},
                  gate[3] = {s->B, s->T, s->H}, aa[2] = {s->H, s->S};
    tu_add(&c->tensors, "v", RA_F64, 4, vd, NULL);
    tu_add(&c->tensors, "b", RA_F64, 4, bs, NULL);
    tu_add(&c->tensors, "c", RA_F64, 4, bs, NULL);
    tu_add(&c->tensors, "g", RA_F64, 3, gate, NULL);
    tu_add(&c->tensors, "A_log", RA_F64, 2, aa, NULL);
    if (with_do)
        tu_add(&c->tensors, "do", RA_F64, 4, vd, NULL);
    ck_assert_int_eq(ra_kv_set(&c->params, "decay", ra_glr_decay_name(decay)), RA_OK);
}

/* Values of order one; g in [0.05, 1), A_log in [-1, 1) (both decays
   stable for g A_log < 0 only with linear: there A_log in [-1, -0.1)). */
static void glr_fill(ra_case *c, uint64_t seed, ra_glr_decay decay)
{
    uint64_t s = seed;
    tu_fill(tu_t(c, "v"), &s, -1, 1);
    tu_fill(tu_t(c, "b"), &s, -1, 1);
    tu_fill(tu_t(c, "c"), &s, -1, 1);
    tu_fill(tu_t(c, "g"), &s, 0.05, 1);
    if (decay == RA_GLR_LINEAR)
        tu_fill(tu_t(c, "A_log"), &s, -1, -0.1);
    else
        tu_fill(tu_t(c, "A_log"), &s, -1, 1);
    ra_tensor *d = ra_tensors_find(&c->tensors, "do");
    if (d)
        tu_fill(d, &s, -1, 1);
}

typedef struct run {
    ra_glr_data d;
    ra_glr_out out;
} run;

static void run_ref(run *r, const ra_case *c, int grads, int64_t segment, int threads)
{
    ra_glr_problem p;
    ck_assert_int_eq(ra_glr_problem_init(&p, c, 0, "case"), RA_OK);
    ck_assert_int_eq(ra_glr_data_init(&r->d, &p), RA_OK);
    r->d.in.segment = segment;
    ck_assert_msg(ra_glr_run(&r->out, &r->d.in, P, grads, threads, NULL) == RA_OK, "%s",
                  ra_last_error());
}

static void run_clear(run *r)
{
    ra_glr_out_clear(&r->out);
    ra_glr_data_clear(&r->d);
}

#define X(c, name, i) ra_tensor_get(tu_t((c), (name)), (i))

static void expect_close(const ra_mparr *got, const ra_mparr *want, const char *what)
{
    ck_assert_uint_eq(got->n, want->n);
    double e = tu_normwise_log2(got->x, want->x, got->n);
    ck_assert_msg(e <= TOL_LOG2, "%s: normwise error 2^%.1f", what, e);
}

/* --- (a) closed forms ------------------------------------------------------------------- */

/* T = 1: h_1 = b v^T, o = (c . b) v, dv = (c . b) do, dc = b (v . do),
   db = c (v . do), and dg = dA_log = 0 exactly (h_0 = 0). */
START_TEST(special_t1)
{
    for (int dec = 0; dec < 2; dec++) {
        const ra_glr_shape s = {2, 1, 2, 3, 4};
        ra_case c;
        glr_case(&c, &s, (ra_glr_decay)dec, 1);
        glr_fill(&c, 11 + dec, (ra_glr_decay)dec);
        run r;
        run_ref(&r, &c, 1, 0, 1);
        ra_mparr want[4];
        ck_assert_int_eq(ra_mparr_init(&want[0], r.out.o.n, P), RA_OK);
        ck_assert_int_eq(ra_mparr_init(&want[1], r.out.dv.n, P), RA_OK);
        ck_assert_int_eq(ra_mparr_init(&want[2], r.out.dc.n, P), RA_OK);
        ck_assert_int_eq(ra_mparr_init(&want[3], r.out.db.n, P), RA_OK);
        mpfr_t cb, vdo, x;
        mpfr_inits2(P, cb, vdo, x, (mpfr_ptr)0);
        for (int64_t b = 0; b < s.B; b++)
            for (int64_t h = 0; h < s.H; h++) {
                mpfr_set_zero(cb, 1);
                mpfr_set_zero(vdo, 1);
                for (int64_t i = 0; i < s.S; i++) {
                    int64_t k = ra_glr_bs_index(&s, b, 0, h, i);
                    mpfr_set_d(x, X(&c, "c", k), MPFR_RNDN);
                    mpfr_mul_d(x, x, X(&c, "b", k), MPFR_RNDN);
                    mpfr_add(cb, cb, x, MPFR_RNDN);
                }
                for (int64_t d = 0; d < s.D; d++) {
                    int64_t k = ra_glr_vd_index(&s, b, 0, h, d);
                    mpfr_set_d(x, X(&c, "v", k), MPFR_RNDN);
                    mpfr_mul_d(x, x, X(&c, "do", k), MPFR_RNDN);
                    mpfr_add(vdo, vdo, x, MPFR_RNDN);
                    mpfr_mul_d(want[0].x + k, cb, X(&c, "v", k), MPFR_RNDN);
                    mpfr_mul_d(want[1].x + k, cb, X(&c, "do", k), MPFR_RNDN);
                }
                for (int64_t i = 0; i < s.S; i++) {
                    int64_t k = ra_glr_bs_index(&s, b, 0, h, i);
                    mpfr_mul_d(want[2].x + k, vdo, X(&c, "b", k), MPFR_RNDN);
                    mpfr_mul_d(want[3].x + k, vdo, X(&c, "c", k), MPFR_RNDN);
                }
            }
        expect_close(&r.out.o, &want[0], "o");
        expect_close(&r.out.dv, &want[1], "dv");
        expect_close(&r.out.dc, &want[2], "dc");
        expect_close(&r.out.db, &want[3], "db");
        for (size_t i = 0; i < r.out.dg.n; i++)
            ck_assert(mpfr_zero_p(r.out.dg.x + i));
        for (size_t i = 0; i < r.out.dA_log.n; i++)
            ck_assert(mpfr_zero_p(r.out.dA_log.x + i));
        mpfr_clears(cb, vdo, x, (mpfr_ptr)0);
        for (int i = 0; i < 4; i++)
            ra_mparr_free(&want[i]);
        run_clear(&r);
        ra_case_clear(&c);
    }
}
END_TEST

/* g = 0: alpha = 1 under both decays, h_t = sum_{u<=t} b_u v_u^T, so
     o_t[d]  = sum_s c_t[s] sum_{u<=t} b_u[s] v_u[d]
     dv_u[d] = sum_s b_u[s] sum_{t>=u} c_t[s] do_t[d]
     dg_t    = sum_s f_s sum_d (sum_{t'>=t} c_t'[s] do_t'[d]) (sum_{u<t} b_u[s] v_u[d])
   with f_s = dalpha/dg at g = 0: -exp(A_log[s]) (expneg) or A_log[s]
   (linear); dA_log = 0 exactly (its partial has the factor g).  Double
   sums over time, not the recursion. */
START_TEST(special_zero_decay)
{
    for (int dec = 0; dec < 2; dec++) {
        const ra_glr_shape s = {1, 6, 2, 3, 2};
        ra_case c;
        glr_case(&c, &s, (ra_glr_decay)dec, 1);
        glr_fill(&c, 21 + dec, (ra_glr_decay)dec);
        ra_tensor *g = tu_t(&c, "g");
        for (int64_t i = 0; i < g->numel; i++)
            ra_tensor_set(g, i, 0.0);
        run r;
        run_ref(&r, &c, 1, 2, 1);
        ra_mparr wo, wdv, wdg;
        ck_assert_int_eq(ra_mparr_init(&wo, r.out.o.n, P), RA_OK);
        ck_assert_int_eq(ra_mparr_init(&wdv, r.out.dv.n, P), RA_OK);
        ck_assert_int_eq(ra_mparr_init(&wdg, r.out.dg.n, P), RA_OK);
        mpfr_t x, y, f, lam, hp;
        mpfr_inits2(P, x, y, f, lam, hp, (mpfr_ptr)0);
        for (int64_t h = 0; h < s.H; h++)
            for (int64_t t = 0; t < s.T; t++) {
                for (int64_t d = 0; d < s.D; d++) {
                    mpfr_ptr o = wo.x + ra_glr_vd_index(&s, 0, t, h, d);
                    mpfr_ptr dv = wdv.x + ra_glr_vd_index(&s, 0, t, h, d);
                    for (int64_t i = 0; i < s.S; i++)
                        for (int64_t u = 0; u < s.T; u++) {
                            /* o: u <= t; dv: partner time u >= t */
                            if (u <= t) {
                                mpfr_set_d(x, X(&c, "c", ra_glr_bs_index(&s, 0, t, h, i)),
                                           MPFR_RNDN);
                                mpfr_mul_d(x, x, X(&c, "b", ra_glr_bs_index(&s, 0, u, h, i)),
                                           MPFR_RNDN);
                                mpfr_mul_d(x, x, X(&c, "v", ra_glr_vd_index(&s, 0, u, h, d)),
                                           MPFR_RNDN);
                                mpfr_add(o, o, x, MPFR_RNDN);
                            }
                            if (u >= t) {
                                mpfr_set_d(x, X(&c, "b", ra_glr_bs_index(&s, 0, t, h, i)),
                                           MPFR_RNDN);
                                mpfr_mul_d(x, x, X(&c, "c", ra_glr_bs_index(&s, 0, u, h, i)),
                                           MPFR_RNDN);
                                mpfr_mul_d(x, x, X(&c, "do", ra_glr_vd_index(&s, 0, u, h, d)),
                                           MPFR_RNDN);
                                mpfr_add(dv, dv, x, MPFR_RNDN);
                            }
                        }
                }
                mpfr_ptr dg = wdg.x + ra_glr_gate_index(&s, 0, t, h);
                for (int64_t i = 0; i < s.S; i++) {
                    mpfr_set_d(f, X(&c, "A_log", h * s.S + i), MPFR_RNDN);
                    if (dec == RA_GLR_EXPNEG) {
                        mpfr_exp(f, f, MPFR_RNDN);
                        mpfr_neg(f, f, MPFR_RNDN);
                    }
                    for (int64_t d = 0; d < s.D; d++) {
                        mpfr_set_zero(lam, 1);
                        mpfr_set_zero(hp, 1);
                        for (int64_t u = t; u < s.T; u++) {
                            mpfr_set_d(y, X(&c, "c", ra_glr_bs_index(&s, 0, u, h, i)), MPFR_RNDN);
                            mpfr_mul_d(y, y, X(&c, "do", ra_glr_vd_index(&s, 0, u, h, d)),
                                       MPFR_RNDN);
                            mpfr_add(lam, lam, y, MPFR_RNDN);
                        }
                        for (int64_t u = 0; u < t; u++) {
                            mpfr_set_d(y, X(&c, "b", ra_glr_bs_index(&s, 0, u, h, i)), MPFR_RNDN);
                            mpfr_mul_d(y, y, X(&c, "v", ra_glr_vd_index(&s, 0, u, h, d)),
                                       MPFR_RNDN);
                            mpfr_add(hp, hp, y, MPFR_RNDN);
                        }
                        mpfr_mul(y, lam, hp, MPFR_RNDN);
                        mpfr_mul(y, y, f, MPFR_RNDN);
                        mpfr_add(dg, dg, y, MPFR_RNDN);
                    }
                }
            }
        expect_close(&r.out.o, &wo, "o");
        expect_close(&r.out.dv, &wdv, "dv");
        expect_close(&r.out.dg, &wdg, "dg");
        for (size_t i = 0; i < r.out.dA_log.n; i++)
            ck_assert(mpfr_zero_p(r.out.dA_log.x + i));
        mpfr_clears(x, y, f, lam, hp, (mpfr_ptr)0);
        ra_mparr_free(&wo);
        ra_mparr_free(&wdv);
        ra_mparr_free(&wdg);
        run_clear(&r);
        ra_case_clear(&c);
    }
}
END_TEST

/* S = D = 1, b = c = v = do = 1, constant g and A_log: alpha = a for every
   step, o_t = (1 - a^t) / (1 - a) (t = 1..T), L = sum_t o_t and
   dL/da = sum_{t=1}^T sum_{k=1}^{t-1} k a^(k-1).  A common change of
   every g_t moves a by da/dg, so sum_t dg_t = dL/da da/dg, and
   dA_log = dL/da da/dA; by hand: expneg a = exp(-g e^A), da/dg = -e^A a,
   da/dA = -g e^A a; linear a = exp(g A), da/dg = A a, da/dA = g a. */
START_TEST(special_constant_gates)
{
    for (int dec = 0; dec < 2; dec++) {
        const ra_glr_shape s = {1, 9, 1, 1, 1};
        const double g0 = 0.375, A0 = dec == RA_GLR_LINEAR ? -0.75 : -0.5;
        ra_case c;
        glr_case(&c, &s, (ra_glr_decay)dec, 1);
        const char *ones[] = {"v", "b", "c", "do"};
        for (int n = 0; n < 4; n++)
            for (int64_t t = 0; t < s.T; t++)
                ra_tensor_set(tu_t(&c, ones[n]), t, 1.0);
        for (int64_t t = 0; t < s.T; t++)
            ra_tensor_set(tu_t(&c, "g"), t, g0);
        ra_tensor_set(tu_t(&c, "A_log"), 0, A0);
        run r;
        run_ref(&r, &c, 1, 4, 1);
        mpfr_t a, e, x, dLda, dadg, dadA, sum, p;
        mpfr_inits2(P, a, e, x, dLda, dadg, dadA, sum, p, (mpfr_ptr)0);
        mpfr_set_d(e, A0, MPFR_RNDN);
        if (dec == RA_GLR_EXPNEG) {
            mpfr_exp(e, e, MPFR_RNDN); /* e^A */
            mpfr_mul_d(a, e, -g0, MPFR_RNDN);
            mpfr_exp(a, a, MPFR_RNDN);
            mpfr_mul(dadg, e, a, MPFR_RNDN);
            mpfr_neg(dadg, dadg, MPFR_RNDN);
            mpfr_mul_d(dadA, dadg, g0, MPFR_RNDN);
        } else {
            mpfr_mul_d(a, e, g0, MPFR_RNDN);
            mpfr_exp(a, a, MPFR_RNDN);
            mpfr_mul_d(dadg, a, A0, MPFR_RNDN);
            mpfr_mul_d(dadA, a, g0, MPFR_RNDN);
        }
        ra_mparr wo;
        ck_assert_int_eq(ra_mparr_init(&wo, (size_t)s.T, P), RA_OK);
        mpfr_set_zero(dLda, 1);
        for (int64_t t = 1; t <= s.T; t++) {
            mpfr_pow_ui(x, a, (unsigned long)t, MPFR_RNDN);
            mpfr_ui_sub(x, 1, x, MPFR_RNDN);
            mpfr_ui_sub(p, 1, a, MPFR_RNDN);
            mpfr_div(wo.x + t - 1, x, p, MPFR_RNDN);
            for (int64_t k = 1; k < t; k++) {
                mpfr_pow_ui(x, a, (unsigned long)(k - 1), MPFR_RNDN);
                mpfr_mul_ui(x, x, (unsigned long)k, MPFR_RNDN);
                mpfr_add(dLda, dLda, x, MPFR_RNDN);
            }
        }
        expect_close(&r.out.o, &wo, "o");
        mpfr_set_zero(sum, 1);
        for (int64_t t = 0; t < s.T; t++)
            mpfr_add(sum, sum, r.out.dg.x + t, MPFR_RNDN);
        ra_mparr w1 = {0}, g1 = {0};
        ck_assert_int_eq(ra_mparr_init(&w1, 2, P), RA_OK);
        ck_assert_int_eq(ra_mparr_init(&g1, 2, P), RA_OK);
        mpfr_mul(w1.x, dLda, dadg, MPFR_RNDN);
        mpfr_mul(w1.x + 1, dLda, dadA, MPFR_RNDN);
        mpfr_set(g1.x, sum, MPFR_RNDN);
        mpfr_set(g1.x + 1, r.out.dA_log.x, MPFR_RNDN);
        expect_close(&g1, &w1, "sum dg, dA_log");
        ra_mparr_free(&w1);
        ra_mparr_free(&g1);
        ra_mparr_free(&wo);
        mpfr_clears(a, e, x, dLda, dadg, dadA, sum, p, (mpfr_ptr)0);
        run_clear(&r);
        ra_case_clear(&c);
    }
}
END_TEST

/* --- (b) a naive transcription ------------------------------------------------------------ */

/* docs/glr.md read literally: every state h_0..h_T stored, alpha from its
   definition, the adjoint walked over the stored states. */
static void naive(ra_glr_out *w, const ra_case *c, const ra_glr_shape *s, ra_glr_decay dec)
{
    const int64_t S = s->S, D = s->D, T = s->T;
    ck_assert_int_eq(ra_mparr_init(&w->o, (size_t)(s->B * T * s->H * D), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&w->dv, (size_t)(s->B * T * s->H * D), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&w->db, (size_t)(s->B * T * s->H * S), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&w->dc, (size_t)(s->B * T * s->H * S), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&w->dg, (size_t)(s->B * T * s->H), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&w->dA_log, (size_t)(s->H * S), P), RA_OK);
    ra_mparr hs, al, lam;
    ck_assert_int_eq(ra_mparr_init(&hs, (size_t)((T + 1) * S * D), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&al, (size_t)(T * S), P), RA_OK);
    ck_assert_int_eq(ra_mparr_init(&lam, (size_t)(S * D), P), RA_OK);
    mpfr_t x, y, z;
    mpfr_inits2(P, x, y, z, (mpfr_ptr)0);
#define HS(t, i, d) (hs.x + ((t)*S + (i)) * D + (d))
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t h = 0; h < s->H; h++) {
            ra_mp_zero(hs.x, hs.n);
            ra_mp_zero(lam.x, lam.n);
            for (int64_t t = 1; t <= T; t++)
                for (int64_t i = 0; i < S; i++) {
                    double gt = X(c, "g", ra_glr_gate_index(s, b, t - 1, h));
                    double A = X(c, "A_log", h * S + i);
                    mpfr_ptr a = al.x + (t - 1) * S + i;
                    mpfr_set_d(x, A, MPFR_RNDN);
                    if (dec == RA_GLR_EXPNEG) {
                        mpfr_exp(x, x, MPFR_RNDN);
                        mpfr_mul_d(x, x, -gt, MPFR_RNDN);
                    } else {
                        mpfr_mul_d(x, x, gt, MPFR_RNDN);
                    }
                    mpfr_exp(a, x, MPFR_RNDN);
                    for (int64_t d = 0; d < D; d++) {
                        mpfr_mul(HS(t, i, d), a, HS(t - 1, i, d), MPFR_RNDN);
                        mpfr_set_d(x, X(c, "b", ra_glr_bs_index(s, b, t - 1, h, i)), MPFR_RNDN);
                        mpfr_mul_d(x, x, X(c, "v", ra_glr_vd_index(s, b, t - 1, h, d)), MPFR_RNDN);
                        mpfr_add(HS(t, i, d), HS(t, i, d), x, MPFR_RNDN);
                    }
                }
            for (int64_t t = 1; t <= T; t++)
                for (int64_t d = 0; d < D; d++)
                    for (int64_t i = 0; i < S; i++) {
                        mpfr_ptr o = w->o.x + ra_glr_vd_index(s, b, t - 1, h, d);
                        mpfr_mul_d(x, HS(t, i, d), X(c, "c", ra_glr_bs_index(s, b, t - 1, h, i)),
                                   MPFR_RNDN);
                        mpfr_add(o, o, x, MPFR_RNDN);
                    }
            for (int64_t t = T; t >= 1; t--) {
                const int64_t tt = t - 1;
                for (int64_t i = 0; i < S; i++)
                    for (int64_t d = 0; d < D; d++) {
                        mpfr_ptr l = lam.x + i * D + d;
                        if (t < T)
                            mpfr_mul(l, l, al.x + t * S + i, MPFR_RNDN); /* alpha_{t+1} */
                        mpfr_set_d(x, X(c, "c", ra_glr_bs_index(s, b, tt, h, i)), MPFR_RNDN);
                        mpfr_mul_d(x, x, X(c, "do", ra_glr_vd_index(s, b, tt, h, d)), MPFR_RNDN);
                        mpfr_add(l, l, x, MPFR_RNDN);
                    }
                double gt = X(c, "g", ra_glr_gate_index(s, b, tt, h));
                for (int64_t i = 0; i < S; i++) {
                    double A = X(c, "A_log", h * S + i);
                    mpfr_ptr a = al.x + tt * S + i;
                    for (int64_t d = 0; d < D; d++) {
                        mpfr_ptr l = lam.x + i * D + d;
                        double vd = X(c, "v", ra_glr_vd_index(s, b, tt, h, d));
                        double dod = X(c, "do", ra_glr_vd_index(s, b, tt, h, d));
                        double bi = X(c, "b", ra_glr_bs_index(s, b, tt, h, i));
                        mpfr_mul_d(x, HS(t, i, d), dod, MPFR_RNDN);
                        mpfr_add(w->dc.x + ra_glr_bs_index(s, b, tt, h, i),
                                 w->dc.x + ra_glr_bs_index(s, b, tt, h, i), x, MPFR_RNDN);
                        mpfr_mul_d(x, l, vd, MPFR_RNDN);
                        mpfr_add(w->db.x + ra_glr_bs_index(s, b, tt, h, i),
                                 w->db.x + ra_glr_bs_index(s, b, tt, h, i), x, MPFR_RNDN);
                        mpfr_mul_d(x, l, bi, MPFR_RNDN);
                        mpfr_add(w->dv.x + ra_glr_vd_index(s, b, tt, h, d),
                                 w->dv.x + ra_glr_vd_index(s, b, tt, h, d), x, MPFR_RNDN);
                        /* dL/dalpha contribution l h_{t-1}, chained through alpha(g, A) */
                        mpfr_mul(y, l, HS(t - 1, i, d), MPFR_RNDN);
                        mpfr_mul(y, y, a, MPFR_RNDN);
                        if (dec == RA_GLR_EXPNEG) {
                            mpfr_set_d(z, A, MPFR_RNDN);
                            mpfr_exp(z, z, MPFR_RNDN);
                            mpfr_mul(x, y, z, MPFR_RNDN);
                            mpfr_sub(w->dg.x + ra_glr_gate_index(s, b, tt, h),
                                     w->dg.x + ra_glr_gate_index(s, b, tt, h), x, MPFR_RNDN);
                            mpfr_mul_d(x, x, gt, MPFR_RNDN);
                            mpfr_sub(w->dA_log.x + h * S + i, w->dA_log.x + h * S + i, x,
                                     MPFR_RNDN);
                        } else {
                            mpfr_mul_d(x, y, A, MPFR_RNDN);
                            mpfr_add(w->dg.x + ra_glr_gate_index(s, b, tt, h),
                                     w->dg.x + ra_glr_gate_index(s, b, tt, h), x, MPFR_RNDN);
                            mpfr_mul_d(x, y, gt, MPFR_RNDN);
                            mpfr_add(w->dA_log.x + h * S + i, w->dA_log.x + h * S + i, x,
                                     MPFR_RNDN);
                        }
                    }
                }
            }
        }
#undef HS
    mpfr_clears(x, y, z, (mpfr_ptr)0);
    ra_mparr_free(&hs);
    ra_mparr_free(&al);
    ra_mparr_free(&lam);
}

START_TEST(random_naive)
{
    const int64_t segments[] = {0, 1, 2, 7};
    for (int dec = 0; dec < 2; dec++) {
        const ra_glr_shape s = {2, 7, 2, 3, 2};
        ra_case c;
        glr_case(&c, &s, (ra_glr_decay)dec, 1);
        glr_fill(&c, tu_seed(31 + dec), (ra_glr_decay)dec);
        ra_glr_out w;
        memset(&w, 0, sizeof w);
        naive(&w, &c, &s, (ra_glr_decay)dec);
        for (size_t k = 0; k < sizeof segments / sizeof segments[0]; k++) {
            run r;
            run_ref(&r, &c, 1, segments[k], 1);
            expect_close(&r.out.o, &w.o, "o");
            expect_close(&r.out.dv, &w.dv, "dv");
            expect_close(&r.out.db, &w.db, "db");
            expect_close(&r.out.dc, &w.dc, "dc");
            expect_close(&r.out.dg, &w.dg, "dg");
            expect_close(&r.out.dA_log, &w.dA_log, "dA_log");
            run_clear(&r);
        }
        ra_glr_out_clear(&w);
        ra_case_clear(&c);
    }
}
END_TEST

/* --- (c) finite differences -------------------------------------------------------------- */

START_TEST(random_gradcheck)
{
    for (int dec = 0; dec < 2; dec++) {
        const ra_glr_shape s = {2, 5, 2, 3, 2};
        ra_case c;
        glr_case(&c, &s, (ra_glr_decay)dec, 1);
        glr_fill(&c, tu_seed(41 + dec), (ra_glr_decay)dec);
        ra_gc_opts o;
        ra_gc_opts_init(&o);
        o.threads = 1;
        ra_gc_result res;
        ck_assert_msg(ra_gradcheck(&res, &ra_gc_op_glr, &c, &o, NULL, "case") == RA_OK, "%s",
                      ra_last_error());
        ck_assert_uint_eq(res.n, 5);
        ck_assert_msg(ra_gc_min_digits(&res) >= 30, "%s decay: %.1f digits",
                      ra_glr_decay_name((ra_glr_decay)dec), ra_gc_min_digits(&res));
        o.mode = RA_GC_DOT;
        ck_assert_int_eq(ra_gradcheck(&res, &ra_gc_op_glr, &c, &o, NULL, "case"), RA_OK);
        ck_assert(ra_gc_min_digits(&res) >= 30);
        ra_case_clear(&c);
    }
}
END_TEST

/* --- (d) identities, refusals, the generator ------------------------------------------------- */

START_TEST(regress_threads)
{
    const ra_glr_shape s = {2, 9, 3, 3, 2};
    ra_case c;
    glr_case(&c, &s, RA_GLR_EXPNEG, 1);
    glr_fill(&c, 51, RA_GLR_EXPNEG);
    run r1, r2;
    run_ref(&r1, &c, 1, 0, 1);
    run_ref(&r2, &c, 1, 0, 2);
    ra_mparr *a[] = {&r1.out.o, &r1.out.dv, &r1.out.db, &r1.out.dc, &r1.out.dg, &r1.out.dA_log};
    ra_mparr *b[] = {&r2.out.o, &r2.out.dv, &r2.out.db, &r2.out.dc, &r2.out.dg, &r2.out.dA_log};
    for (int k = 0; k < 6; k++)
        for (size_t i = 0; i < a[k]->n; i++)
            ck_assert(mpfr_equal_p(a[k]->x + i, b[k]->x + i));
    run_clear(&r1);
    run_clear(&r2);
    ra_case_clear(&c);
}
END_TEST

START_TEST(data_bad_input)
{
    const ra_glr_shape s = {1, 3, 2, 3, 2};
    ra_glr_problem p;
    ra_case c;
    glr_case(&c, &s, RA_GLR_EXPNEG, 1);
    /* g [1, 3, 2]: element [0, 2, 1] is flat 2*2 + 1 = 5 */
    ra_tensor_set(tu_t(&c, "g"), 5, NAN);
    tu_expect_error(ra_glr_problem_init(&p, &c, 0, "x.st"), RA_EINVAL,
                    "x.st: tensor 'g' element [0, 2, 1] is NaN");
    ra_tensor_set(tu_t(&c, "g"), 5, 0.0);
    ra_tensor_set(tu_t(&c, "A_log"), 4, -INFINITY); /* [1, 1] of [2, 3] */
    tu_expect_error(ra_glr_problem_init(&p, &c, 0, "x.st"), RA_EINVAL,
                    "tensor 'A_log' element [1, 1] is -Inf");
    ra_case_clear(&c);

    glr_case(&c, &s, RA_GLR_EXPNEG, 0);
    tu_expect_error(ra_glr_problem_init(&p, &c, RA_GLR_NEED_COTANGENTS, "x.st"), RA_ENOTFOUND,
                    "missing tensor 'do'");
    ck_assert_int_eq(ra_kv_set(&c.params, "decay", "exp"), RA_OK);
    tu_expect_error(ra_glr_problem_init(&p, &c, 0, "x.st"), RA_EINVAL, "parameter 'decay'",
                    "'exp'");
    ra_case_clear(&c);

    /* c with S = 4 against b's S = 3: names the tensor and the axis */
    glr_case(&c, &s, RA_GLR_EXPNEG, 1);
    ra_tensors_clear(&c.tensors);
    const int64_t vd[4] = {1, 3, 2, 2}, bs[4] = {1, 3, 2, 3}, cs[4] = {1, 3, 2, 4},
                  gate[3] = {1, 3, 2}, aa[2] = {2, 3}, a2[2] = {3, 3};
    tu_add(&c.tensors, "v", RA_F64, 4, vd, NULL);
    tu_add(&c.tensors, "b", RA_F64, 4, bs, NULL);
    tu_add(&c.tensors, "c", RA_F64, 4, cs, NULL);
    tu_add(&c.tensors, "g", RA_F64, 3, gate, NULL);
    tu_add(&c.tensors, "A_log", RA_F64, 2, aa, NULL);
    tu_expect_error(ra_glr_problem_init(&p, &c, 0, "x.st"), RA_EINVAL,
                    "tensor 'c' axis 3 (S) is 4, expected 3");
    ra_tensors_clear(&c.tensors);
    tu_add(&c.tensors, "v", RA_F64, 4, vd, NULL);
    tu_add(&c.tensors, "b", RA_F64, 4, bs, NULL);
    tu_add(&c.tensors, "c", RA_F64, 4, bs, NULL);
    tu_add(&c.tensors, "g", RA_F64, 3, gate, NULL);
    tu_add(&c.tensors, "A_log", RA_F64, 2, a2, NULL);
    tu_expect_error(ra_glr_problem_init(&p, &c, 0, "x.st"), RA_EINVAL,
                    "tensor 'A_log' axis 0 (H) is 3, expected 2");
    ra_case_clear(&c);

    ra_glr_shape sh;
    tu_expect_error(ra_glr_shape_parse(&sh, "B=1,T=4,H=2,S=3"), RA_EINVAL, "missing D");
    tu_expect_error(ra_glr_shape_parse(&sh, "B=1,T=4,H=2,S=3,D=0"), RA_EINVAL,
                    "D must be a positive integer");
    tu_expect_error(ra_glr_shape_parse(&sh, "B=1,T=4,H=2,S=3,D=2,K=3"), RA_EINVAL,
                    "unknown key 'K'");
}
END_TEST

static void gen(ra_case *c, const char *regime, unsigned flags, const char *shape)
{
    ra_case_spec sp;
    ra_case_spec_init(&sp);
    strcpy(sp.op, "glr");
    snprintf(sp.shape, sizeof sp.shape, "%s", shape);
    snprintf(sp.regime, sizeof sp.regime, "%s", regime);
    strcpy(sp.dtype, "f32");
    sp.seed = 5;
    sp.flags = flags;
    ra_case_init(c);
    ck_assert_msg(ra_glr_generate(c, &sp) == RA_OK, "%s", ra_last_error());
}

/* Regimes draw what their docs say: hymo g = softplus(z) > 0 and
   exp(A_log) in [1, 16] (expneg) or A_log = -a in [-16, -1] (linear),
   the same rates a for one seed; zero-gate g = 0; long-memory's sample
   mean of g within 6 standard errors of 1e-3 (Exponential: sd = mean). */
START_TEST(data_generate)
{
    ra_case e, l, z, m;
    gen(&e, "hymo", 0, "B=2,T=64,H=4,S=8,D=4");
    gen(&l, "hymo", RA_GLR_FLAG_LINEAR, "B=2,T=64,H=4,S=8,D=4");
    ck_assert_str_eq(ra_case_param(&e, "decay"), "expneg");
    ck_assert_str_eq(ra_case_param(&l, "decay"), "linear");
    const ra_tensor *ae = tu_t(&e, "A_log"), *al = tu_t(&l, "A_log"), *g = tu_t(&e, "g");
    ck_assert_int_eq(ae->dtype, RA_F32);
    for (int64_t i = 0; i < ae->numel; i++) {
        double a = ra_tensor_get(al, i);
        ck_assert(a <= -1.0 && a >= -16.0);
        /* log(a) rounded to f32 against -A_log_linear (f32): within 2^-20 relative */
        ck_assert_double_eq_tol(exp(ra_tensor_get(ae, i)), -a, 16 * 0x1p-20);
    }
    for (int64_t i = 0; i < g->numel; i++)
        ck_assert(ra_tensor_get(g, i) > 0);
    gen(&z, "zero-gate", 0, "B=1,T=8,H=2,S=4,D=4");
    for (int64_t i = 0; i < tu_t(&z, "g")->numel; i++)
        ck_assert(ra_tensor_get(tu_t(&z, "g"), i) == 0.0);
    gen(&m, "long-memory", 0, "B=4,T=256,H=4,S=2,D=2");
    const ra_tensor *gm = tu_t(&m, "g");
    double sum = 0;
    for (int64_t i = 0; i < gm->numel; i++)
        sum += ra_tensor_get(gm, i);
    const double mean = sum / (double)gm->numel, se = 1e-3 / sqrt((double)gm->numel);
    ck_assert_msg(fabs(mean - 1e-3) < 6 * se, "mean %g", mean);
    ra_case again;
    gen(&again, "hymo", 0, "B=2,T=64,H=4,S=8,D=4");
    tu_assert_same_tensors(&e.tensors, &again.tensors);
    ra_case *all[] = {&e, &l, &z, &m, &again};
    for (int i = 0; i < 5; i++)
        ra_case_clear(all[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref-glr");
    tu_tcase(s, "special", tu_capture, NULL, special_t1, special_zero_decay,
             special_constant_gates);
    tu_tcase(s, "random", tu_capture, NULL, random_naive, random_gradcheck);
    tu_tcase(s, "data", tu_capture, NULL, data_bad_input, data_generate);
    tu_tcase(s, "regress", tu_capture, NULL, regress_threads);
    return s;
}

int main(void) { return tu_run(suite()); }
