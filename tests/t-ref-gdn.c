/* Tests of the gdn MPFR reference: closed forms, an independent listing, threads. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "ref-testutil.h"
#define NP 256
#include "ref-naive.h"
#include "ref/gdn.h"
#include "ref/ref.h"

/*
 * Expected values come from (a) closed forms derived by hand for special
 * inputs, evaluated in MPFR here, (b) an independent, deliberately naive
 * MPFR transcription of the docs/gdn.md listing (every state stored, the
 * order of operations, mpfr_fma accumulation, the Frobenius dg) -- a
 * different algorithm from src/ref/gdn.c's scaled-state, raw-key,
 * recursion-for-dg one -- and (c) exact identities between runs (grouped
 * heads vs duplicated key heads, thread counts).
 *
 * Tolerances: at 256 bits every output of these small cases (T <= 12,
 * K, V <= 8, values of order 1, no catastrophic cancellation built in) is a
 * composition of fewer than 2^12 correctly rounded operations, so the two
 * computations agree to about 256 - 12 - a few bits in the normwise sense
 * (max |a - b| / max |b| over a tensor); the tests ask for 2^-220.
 */

#define P 256
#define TOL_LOG2 (-220.0)

/* --- running the reference at one precision ------------------------------------------------ */

typedef struct run {
    ra_gdn_problem p;
    ra_gdn_data d;
    ra_gdn_out out;
} run;

/* segment: checkpoint spacing of the backward (0: the default). */
static void run_case_seg(run *r, const ra_case *c, mpfr_prec_t prec, int grads, int threads,
                         int64_t segment)
{
    ck_assert_int_eq(ra_gdn_problem_init(&r->p, c, 0, "test case"), RA_OK);
    ck_assert_int_eq(ra_gdn_data_init(&r->d, &r->p), RA_OK);
    r->d.in.segment = segment;
    ck_assert_int_eq(ra_gdn_run(&r->out, &r->d.in, prec, grads, threads, NULL), RA_OK);
}

static void run_case(run *r, const ra_case *c, mpfr_prec_t prec, int grads, int threads)
{
    run_case_seg(r, c, prec, grads, threads, 0);
}

static void run_clear(run *r)
{
    ra_gdn_out_clear(&r->out);
    ra_gdn_data_clear(&r->d);
}

/* Expected values as a plain array of mpfr_t. */
typedef struct mpvec {
    size_t n;
    mpfr_t *x;
} mpvec;

static void mv_init(mpvec *v, size_t n)
{
    v->n = n;
    v->x = malloc(n * sizeof *v->x);
    for (size_t i = 0; i < n; i++)
        mpfr_init2(v->x[i], P), mpfr_set_zero(v->x[i], 1);
}

static void mv_clear(mpvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        mpfr_clear(v->x[i]);
    free(v->x);
}

/* Normwise agreement of a reference array with expected values. */
static double agree(const ra_mparr *got, const mpvec *want)
{
    ck_assert_uint_eq(got->n, want->n);
    ra_mparr w;
    ck_assert_int_eq(ra_mparr_init(&w, want->n, P), RA_OK);
    for (size_t i = 0; i < want->n; i++)
        mpfr_set(w.x + i, want->x[i], MPFR_RNDN);
    double e = tu_normwise_log2(got->x, w.x, got->n);
    ra_mparr_free(&w);
    return e;
}

#define CHECK_AGREE(got, want, name)                                                               \
    do {                                                                                           \
        double e_ = agree(got, want);                                                              \
        ck_assert_msg(e_ < TOL_LOG2, "%s: normwise error 2^%.1f", name, e_);                       \
    } while (0)

/* --- (a) closed forms ----------------------------------------------------------------------- */

/*
 * beta = 0: u_t = 0, so S_t = a_t S_{t-1} = E_t h0 with E_t = exp(G_t),
 * G_t = g_1 + ... + g_t.  Hence
 *   o_t = scale E_t h0^T q_t,   ht = E_T h0,
 * and for L = sum_t do_t . o_t + <dht, ht>:
 *   dq_t = scale E_t h0 do_t (summed over the group),  dk = 0,  dv = 0,
 *   dh0 = sum_t scale E_t q_t do_t^T + E_T dht,
 *   dg_s = sum_{t >= s} scale E_t q_t^T h0 do_t + E_T <dht, h0>  (dE_t/dg_s = E_t),
 *   dbeta_t = du_t . r_t with lambda_t = dL/dS_t = sum_{s >= t} (E_s/E_t) scale
 *   q_s do_s^T + (E_T/E_t) dht, du_t = lambda_t^T k_t, r_t = v_t - E_t h0^T k_t.
 */
START_TEST(special_beta0)
{
    const ra_gdn_shape s = {1, 5, 1, 2, 3, 4};
    ra_case c;
    tu_ref_case(&c, &s, TU_H0 | TU_DO | TU_DHT, 11);
    ra_tensor *beta = tu_t(&c, "beta");
    for (int64_t i = 0; i < beta->numel; i++)
        ra_tensor_set(beta, i, 0.0);
    run r;
    run_case(&r, &c, P, 1, 2);

    const int64_t T = s.T, K = s.K, V = s.V, Hv = s.Hv;
    mpvec o, ht, dq, dh0, dg, dbeta;
    mv_init(&o, (size_t)(T * Hv * V)), mv_init(&ht, (size_t)(Hv * K * V));
    mv_init(&dq, (size_t)(T * K)), mv_init(&dh0, (size_t)(Hv * K * V));
    mv_init(&dg, (size_t)(T * Hv)), mv_init(&dbeta, (size_t)(T * Hv));
    mpfr_t scale, E[8], t1, t2, du, lam;
    mpfr_inits2(P, scale, t1, t2, du, lam, (mpfr_ptr)0);
    mpfr_set_ui(scale, 3, MPFR_RNDN);
    mpfr_sqrt(scale, scale, MPFR_RNDN);
    mpfr_ui_div(scale, 1, scale, MPFR_RNDN); /* 1/sqrt(K), K = 3 */
    for (int t = 0; t < 8; t++)
        mpfr_init2(E[t], P);
    for (int64_t hv = 0; hv < Hv; hv++) {
        mpfr_set_zero(t1, 1);
        for (int64_t t = 0; t < T; t++) {
            mpfr_add_d(t1, t1, tu_at(&c.tensors, "g", t * Hv + hv), MPFR_RNDN);
            mpfr_exp(E[t], t1, MPFR_RNDN);
        }
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < V; j++) {
                mpfr_ptr x = o.x[(t * Hv + hv) * V + j];
                for (int64_t i = 0; i < K; i++) {
                    mpfr_set_d(t2, tu_at(&c.tensors, "h0", (hv * K + i) * V + j), MPFR_RNDN);
                    mpfr_mul_d(t2, t2, tu_at(&c.tensors, "q", t * K + i), MPFR_RNDN);
                    mpfr_add(x, x, t2, MPFR_RNDN);
                }
                mpfr_mul(x, x, E[t], MPFR_RNDN);
                mpfr_mul(x, x, scale, MPFR_RNDN);
            }
        for (int64_t e = 0; e < K * V; e++) {
            int64_t i = e / V, j = e % V;
            mpfr_mul_d(ht.x[hv * K * V + e], E[T - 1], tu_at(&c.tensors, "h0", hv * K * V + e),
                       MPFR_RNDN);
            mpfr_ptr d = dh0.x[hv * K * V + e];
            mpfr_mul_d(d, E[T - 1], tu_at(&c.tensors, "dht", hv * K * V + e), MPFR_RNDN);
            for (int64_t t = 0; t < T; t++) {
                mpfr_mul_d(t2, E[t], tu_at(&c.tensors, "q", t * K + i), MPFR_RNDN);
                mpfr_mul_d(t2, t2, tu_at(&c.tensors, "do", (t * Hv + hv) * V + j), MPFR_RNDN);
                mpfr_mul(t2, t2, scale, MPFR_RNDN);
                mpfr_add(d, d, t2, MPFR_RNDN);
            }
        }
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < V; j++) {
                    mpfr_mul_d(t2, E[t], tu_at(&c.tensors, "h0", (hv * K + i) * V + j), MPFR_RNDN);
                    mpfr_mul_d(t2, t2, tu_at(&c.tensors, "do", (t * Hv + hv) * V + j), MPFR_RNDN);
                    mpfr_mul(t2, t2, scale, MPFR_RNDN);
                    mpfr_add(dq.x[t * K + i], dq.x[t * K + i], t2, MPFR_RNDN);
                }
        /* dg_s */
        for (int64_t sidx = 0; sidx < T; sidx++) {
            mpfr_ptr x = dg.x[sidx * Hv + hv];
            for (int64_t e = 0; e < K * V; e++) {
                mpfr_mul_d(t2, E[T - 1], tu_at(&c.tensors, "dht", hv * K * V + e), MPFR_RNDN);
                mpfr_mul_d(t2, t2, tu_at(&c.tensors, "h0", hv * K * V + e), MPFR_RNDN);
                mpfr_add(x, x, t2, MPFR_RNDN);
            }
            for (int64_t t = sidx; t < T; t++)
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_mul_d(t2, E[t], tu_at(&c.tensors, "q", t * K + i), MPFR_RNDN);
                        mpfr_mul_d(t2, t2, tu_at(&c.tensors, "h0", (hv * K + i) * V + j),
                                   MPFR_RNDN);
                        mpfr_mul_d(t2, t2, tu_at(&c.tensors, "do", (t * Hv + hv) * V + j),
                                   MPFR_RNDN);
                        mpfr_mul(t2, t2, scale, MPFR_RNDN);
                        mpfr_add(x, x, t2, MPFR_RNDN);
                    }
        }
        /* dbeta_t = sum_j du_j r_j */
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < V; j++) {
                mpfr_set_zero(du, 1);
                for (int64_t i = 0; i < K; i++) {
                    mpfr_mul_d(lam, E[T - 1], tu_at(&c.tensors, "dht", (hv * K + i) * V + j),
                               MPFR_RNDN);
                    for (int64_t u = t; u < T; u++) {
                        mpfr_mul_d(t2, E[u], tu_at(&c.tensors, "q", u * K + i), MPFR_RNDN);
                        mpfr_mul_d(t2, t2, tu_at(&c.tensors, "do", (u * Hv + hv) * V + j),
                                   MPFR_RNDN);
                        mpfr_mul(t2, t2, scale, MPFR_RNDN);
                        mpfr_add(lam, lam, t2, MPFR_RNDN);
                    }
                    mpfr_div(lam, lam, E[t], MPFR_RNDN);
                    mpfr_mul_d(t2, lam, tu_at(&c.tensors, "k", t * K + i), MPFR_RNDN);
                    mpfr_add(du, du, t2, MPFR_RNDN);
                }
                mpfr_set_zero(t1, 1); /* h0^T k_t, component j */
                for (int64_t i = 0; i < K; i++) {
                    mpfr_set_d(t2, tu_at(&c.tensors, "h0", (hv * K + i) * V + j), MPFR_RNDN);
                    mpfr_mul_d(t2, t2, tu_at(&c.tensors, "k", t * K + i), MPFR_RNDN);
                    mpfr_add(t1, t1, t2, MPFR_RNDN);
                }
                mpfr_mul(t1, t1, E[t], MPFR_RNDN);
                mpfr_d_sub(t1, tu_at(&c.tensors, "v", (t * Hv + hv) * V + j), t1, MPFR_RNDN);
                mpfr_mul(t1, t1, du, MPFR_RNDN);
                mpfr_add(dbeta.x[t * Hv + hv], dbeta.x[t * Hv + hv], t1, MPFR_RNDN);
            }
    }
    CHECK_AGREE(&r.out.o, &o, "o");
    CHECK_AGREE(&r.out.ht, &ht, "ht");
    CHECK_AGREE(&r.out.dq, &dq, "dq");
    CHECK_AGREE(&r.out.dh0, &dh0, "dh0");
    CHECK_AGREE(&r.out.dg, &dg, "dg");
    CHECK_AGREE(&r.out.dbeta, &dbeta, "dbeta");
    for (size_t i = 0; i < r.out.dk.n; i++)
        ck_assert_msg(mpfr_zero_p(r.out.dk.x + i), "dk[%zu] is not exactly 0", i);
    for (size_t i = 0; i < r.out.dv.n; i++)
        ck_assert_msg(mpfr_zero_p(r.out.dv.x + i), "dv[%zu] is not exactly 0", i);
    mpfr_clears(scale, t1, t2, du, lam, (mpfr_ptr)0);
    for (int t = 0; t < 8; t++)
        mpfr_clear(E[t]);
    mv_clear(&o), mv_clear(&ht), mv_clear(&dq), mv_clear(&dh0), mv_clear(&dg), mv_clear(&dbeta);
    run_clear(&r);
    ra_case_clear(&c);
}
END_TEST

/*
 * g = 0, beta = 1: S_t = (I - k k^T) S_{t-1} + k v_t^T.  With keys taken
 * from an orthonormal set (rows of the 4 x 4 Hadamard matrix / 2, exact in
 * binary), writing v under k sets S^T k = v and leaves every other key's
 * value alone, so after any sequence of writes
 *   S = sum over the distinct keys written so far of k v_latest^T,
 *   o_t = scale sum_keys (k . q_t) v_latest.
 * The key sequence repeats keys, so the overwrite is exercised.  In this
 * case every intermediate of the state is a sum of +-v/2 terms: the state
 * (and ht) is exact at 256 bits and must match bit for bit.
 */
START_TEST(special_overwrite)
{
    const ra_gdn_shape s = {1, 6, 1, 1, 4, 3};
    static const double H[4][4] = {{0.5, 0.5, 0.5, 0.5},
                                   {0.5, -0.5, 0.5, -0.5},
                                   {0.5, 0.5, -0.5, -0.5},
                                   {0.5, -0.5, -0.5, 0.5}};
    static const int seq[6] = {0, 1, 2, 0, 3, 1};
    ra_case c;
    tu_ref_case(&c, &s, TU_DO, 12);
    for (int64_t t = 0; t < s.T; t++) {
        ra_tensor_set(tu_t(&c, "g"), t, 0.0);
        ra_tensor_set(tu_t(&c, "beta"), t, 1.0);
        for (int i = 0; i < 4; i++)
            ra_tensor_set(tu_t(&c, "k"), t * 4 + i, H[seq[t]][i]);
    }
    run r;
    run_case(&r, &c, P, 0, 1);
    mpvec o, ht;
    mv_init(&o, (size_t)(s.T * s.V)), mv_init(&ht, (size_t)(s.K * s.V));
    mpfr_t scale, t1;
    mpfr_inits2(P, scale, t1, (mpfr_ptr)0);
    mpfr_set_ui(scale, 2, MPFR_RNDN); /* 1/sqrt(4) = 1/2 */
    mpfr_ui_div(scale, 1, scale, MPFR_RNDN);
    int latest[4] = {-1, -1, -1, -1};
    for (int t = 0; t < s.T; t++) {
        latest[seq[t]] = t;
        for (int j = 0; j < s.V; j++)
            for (int key = 0; key < 4; key++) {
                if (latest[key] < 0)
                    continue;
                mpfr_set_zero(t1, 1); /* k . q_t */
                for (int i = 0; i < 4; i++) {
                    mpfr_t x;
                    mpfr_init2(x, P);
                    mpfr_set_d(x, H[key][i], MPFR_RNDN);
                    mpfr_mul_d(x, x, tu_at(&c.tensors, "q", t * 4 + i), MPFR_RNDN);
                    mpfr_add(t1, t1, x, MPFR_RNDN);
                    mpfr_clear(x);
                }
                mpfr_mul_d(t1, t1, tu_at(&c.tensors, "v", latest[key] * s.V + j), MPFR_RNDN);
                mpfr_mul(t1, t1, scale, MPFR_RNDN);
                mpfr_add(o.x[t * s.V + j], o.x[t * s.V + j], t1, MPFR_RNDN);
            }
    }
    for (int key = 0; key < 4; key++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < s.V && latest[key] >= 0; j++) {
                mpfr_set_d(t1, H[key][i], MPFR_RNDN);
                mpfr_mul_d(t1, t1, tu_at(&c.tensors, "v", latest[key] * s.V + j), MPFR_RNDN);
                mpfr_add(ht.x[i * s.V + j], ht.x[i * s.V + j], t1, MPFR_RNDN);
            }
    CHECK_AGREE(&r.out.o, &o, "o");
    for (size_t e = 0; e < ht.n; e++)
        ck_assert_msg(mpfr_equal_p(r.out.ht.x + e, ht.x[e]) ||
                          (mpfr_zero_p(r.out.ht.x + e) && mpfr_zero_p(ht.x[e])),
                      "ht[%zu] differs from the exact overwrite state", e);
    mpfr_clears(scale, t1, (mpfr_ptr)0);
    mv_clear(&o), mv_clear(&ht);
    run_clear(&r);
    ra_case_clear(&c);
}
END_TEST

/*
 * T = 1 by hand.  S~ = a h0 (a = e^g), w = S~^T k, u = beta (v - w),
 * S1 = S~ + k u^T, o = scale S1^T q, ht = S1.  With Lam = dL/dS1 = dht +
 * scale q do^T:
 *   dq = scale S1 do;   du = Lam^T k;   dk = Lam u - beta S~ du  (u depends on
 *   k through w);   dv = beta du;   dbeta = du . (v - w);
 *   dS~ = Lam - beta k du^T;   dg = <dS~, S~>;   dh0 = a dS~.
 */
static void t1_expected(const ra_case *c, int h0, mpvec *e /* o, ht, dq, dk, dv, dg, dbeta, dh0 */)
{
    const int K = 3, V = 2;
    mpfr_t a, St[3][2], S1[3][2], Lam[3][2], u[2], du[2], scale, x, y;
    mpfr_inits2(P, a, scale, x, y, (mpfr_ptr)0);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < V; j++)
            mpfr_inits2(P, St[i][j], S1[i][j], Lam[i][j], (mpfr_ptr)0);
    for (int j = 0; j < V; j++)
        mpfr_inits2(P, u[j], du[j], (mpfr_ptr)0);
    mpfr_set_d(a, tu_at(&c->tensors, "g", 0), MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
    mpfr_set_ui(scale, 3, MPFR_RNDN);
    mpfr_rec_sqrt(scale, scale, MPFR_RNDN);
    const double beta = tu_at(&c->tensors, "beta", 0);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < V; j++)
            mpfr_mul_d(St[i][j], a, h0 ? tu_at(&c->tensors, "h0", i * V + j) : 0.0, MPFR_RNDN);
    for (int j = 0; j < V; j++) { /* u = beta (v - S~^T k) */
        mpfr_set_zero(x, 1);
        for (int i = 0; i < K; i++)
            mpfr_fma(x, St[i][j], (mpfr_set_d(y, tu_at(&c->tensors, "k", i), MPFR_RNDN), y), x,
                     MPFR_RNDN);
        mpfr_d_sub(x, tu_at(&c->tensors, "v", j), x, MPFR_RNDN);
        mpfr_mul_d(u[j], x, beta, MPFR_RNDN);
        /* dbeta needs v - w: keep it in dbeta's slot scratch later */
    }
    for (int i = 0; i < K; i++)
        for (int j = 0; j < V; j++) {
            mpfr_mul_d(x, u[j], tu_at(&c->tensors, "k", i), MPFR_RNDN);
            mpfr_add(S1[i][j], St[i][j], x, MPFR_RNDN);
            mpfr_mul_d(x, scale, tu_at(&c->tensors, "q", i), MPFR_RNDN);
            mpfr_mul_d(x, x, tu_at(&c->tensors, "do", j), MPFR_RNDN);
            mpfr_add_d(Lam[i][j], x, tu_at(&c->tensors, "dht", i * V + j), MPFR_RNDN);
            mpfr_set(e[1].x[i * V + j], S1[i][j], MPFR_RNDN); /* ht */
        }
    for (int j = 0; j < V; j++) { /* o, du, dv */
        mpfr_set_zero(e[0].x[j], 1);
        mpfr_set_zero(du[j], 1);
        for (int i = 0; i < K; i++) {
            mpfr_mul_d(x, S1[i][j], tu_at(&c->tensors, "q", i), MPFR_RNDN);
            mpfr_add(e[0].x[j], e[0].x[j], x, MPFR_RNDN);
            mpfr_mul_d(x, Lam[i][j], tu_at(&c->tensors, "k", i), MPFR_RNDN);
            mpfr_add(du[j], du[j], x, MPFR_RNDN);
        }
        mpfr_mul(e[0].x[j], e[0].x[j], scale, MPFR_RNDN);
        mpfr_mul_d(e[4].x[j], du[j], beta, MPFR_RNDN);
    }
    mpfr_set_zero(e[6].x[0], 1); /* dbeta = du . (v - w) = du . u / beta computed directly */
    for (int j = 0; j < V; j++) {
        mpfr_set_zero(x, 1);
        for (int i = 0; i < K; i++) {
            mpfr_mul_d(y, St[i][j], tu_at(&c->tensors, "k", i), MPFR_RNDN);
            mpfr_add(x, x, y, MPFR_RNDN);
        }
        mpfr_d_sub(x, tu_at(&c->tensors, "v", j), x, MPFR_RNDN);
        mpfr_mul(x, x, du[j], MPFR_RNDN);
        mpfr_add(e[6].x[0], e[6].x[0], x, MPFR_RNDN);
    }
    mpfr_set_zero(e[5].x[0], 1);
    for (int i = 0; i < K; i++) {
        mpfr_set_zero(e[2].x[i], 1), mpfr_set_zero(e[3].x[i], 1);
        for (int j = 0; j < V; j++) {
            mpfr_mul_d(x, S1[i][j], tu_at(&c->tensors, "do", j), MPFR_RNDN); /* dq */
            mpfr_add(e[2].x[i], e[2].x[i], x, MPFR_RNDN);
            mpfr_mul(x, Lam[i][j], u[j], MPFR_RNDN); /* dk: Lam u */
            mpfr_add(e[3].x[i], e[3].x[i], x, MPFR_RNDN);
            mpfr_mul(x, St[i][j], du[j], MPFR_RNDN); /* - beta S~ du */
            mpfr_mul_d(x, x, beta, MPFR_RNDN);
            mpfr_sub(e[3].x[i], e[3].x[i], x, MPFR_RNDN);
            mpfr_mul_d(x, du[j], tu_at(&c->tensors, "k", i),
                       MPFR_RNDN); /* dS~ = Lam - beta k du^T */
            mpfr_mul_d(x, x, beta, MPFR_RNDN);
            mpfr_sub(x, Lam[i][j], x, MPFR_RNDN);
            mpfr_mul(y, x, St[i][j], MPFR_RNDN); /* dg */
            mpfr_add(e[5].x[0], e[5].x[0], y, MPFR_RNDN);
            if (h0)
                mpfr_mul(e[7].x[i * V + j], a, x, MPFR_RNDN); /* dh0 */
        }
        mpfr_mul(e[2].x[i], e[2].x[i], scale, MPFR_RNDN);
    }
    mpfr_clears(a, scale, x, y, (mpfr_ptr)0);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < V; j++)
            mpfr_clears(St[i][j], S1[i][j], Lam[i][j], (mpfr_ptr)0);
    for (int j = 0; j < V; j++)
        mpfr_clears(u[j], du[j], (mpfr_ptr)0);
}

static void t1_case(int h0, uint64_t seed)
{
    const ra_gdn_shape s = {1, 1, 1, 1, 3, 2};
    ra_case c;
    tu_ref_case(&c, &s, (h0 ? TU_H0 : 0) | TU_DO | TU_DHT, seed);
    run r;
    run_case(&r, &c, P, 1, 1);
    mpvec e[8];
    const size_t n[8] = {2, 6, 3, 3, 2, 1, 1, 6};
    for (int i = 0; i < 8; i++)
        mv_init(&e[i], n[i]);
    t1_expected(&c, h0, e);
    CHECK_AGREE(&r.out.o, &e[0], "o");
    CHECK_AGREE(&r.out.ht, &e[1], "ht");
    CHECK_AGREE(&r.out.dq, &e[2], "dq");
    CHECK_AGREE(&r.out.dk, &e[3], "dk");
    CHECK_AGREE(&r.out.dv, &e[4], "dv");
    CHECK_AGREE(&r.out.dbeta, &e[6], "dbeta");
    if (h0) {
        CHECK_AGREE(&r.out.dg, &e[5], "dg");
        CHECK_AGREE(&r.out.dh0, &e[7], "dh0");
    } else { /* S~ = 0: dg exactly 0, and no dh0 without h0 */
        ck_assert(mpfr_zero_p(r.out.dg.x));
        ck_assert_uint_eq(r.out.dh0.n, 0);
    }
    for (int i = 0; i < 8; i++)
        mv_clear(&e[i]);
    run_clear(&r);
    ra_case_clear(&c);
}

START_TEST(special_t1)
{
    t1_case(1, 21);
    t1_case(1, 22);
    t1_case(0, 23);
}
END_TEST

/* --- (b) the independent transcription of docs/gdn.md (ref-naive.h) --------------------------- */

/* Against the naive transcription, with the backward's checkpoints every
   1, 3 and T steps and at the default spacing: segments of one step (no
   low-rank terms), several partial segments, one segment holding every
   step as rank-1 terms. */
static void naive_compare(const ra_case *c, int threads)
{
    naive nv;
    naive_run(&nv, c);
    const int64_t T = tu_t(c, "q")->shape[1];
    const int64_t segments[] = {0, 1, 3, T};
    for (int sg = 0; sg < 4; sg++) {
        run r;
        run_case_seg(&r, c, P, 1, threads, segments[sg]);
        const ra_mparr *got[8] = {&r.out.o,  &r.out.ht, &r.out.dq,    &r.out.dk,
                                  &r.out.dv, &r.out.dg, &r.out.dbeta, &r.out.dh0};
        static const char *const names[8] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"};
        for (int i = 0; i < 8; i++) {
            ck_assert_uint_eq(got[i]->n, nv.n[i]);
            mpvec w = {nv.n[i], nv.x[i]};
            if (nv.n[i]) {
                double e = agree(got[i], &w);
                ck_assert_msg(e < TOL_LOG2, "%s, segment %lld: normwise error 2^%.1f", names[i],
                              (long long)segments[sg], e);
            }
        }
        run_clear(&r);
    }
    naive_clear(&nv);
}

START_TEST(random_naive)
{
    /* h0, dht, l2norm, grouped heads, two batches, three checkpoint segments */
    const ra_gdn_shape s1 = {2, 10, 1, 2, 3, 4};
    ra_case c;
    tu_ref_case(&c, &s1, TU_H0 | TU_DO | TU_DHT, 31);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "true"), RA_OK);
    naive_compare(&c, 2);
    ra_case_clear(&c);
    /* no h0, no dht, Hk = 2, Hv = 4, K != V */
    const ra_gdn_shape s2 = {1, 7, 2, 4, 5, 3};
    tu_ref_case(&c, &s2, TU_DO, 32);
    naive_compare(&c, 1);
    ra_case_clear(&c);
    /* the dht path alone: do = 0, so dq is exactly zero */
    const ra_gdn_shape s3 = {1, 9, 1, 1, 4, 4};
    tu_ref_case(&c, &s3, TU_H0 | TU_DO | TU_DHT, 33);
    ra_tensor *d = tu_t(&c, "do");
    for (int64_t i = 0; i < d->numel; i++)
        ra_tensor_set(d, i, 0.0);
    naive_compare(&c, 2);
    run r;
    run_case(&r, &c, P, 1, 1);
    for (size_t i = 0; i < r.out.dq.n; i++)
        ck_assert(mpfr_zero_p(r.out.dq.x + i));
    run_clear(&r);
    ra_case_clear(&c);
    /* non-default scale and l2eps, both visible: l2eps = 0.5 against key
       norms of order 1 changes q^ and k^ by tens of percent, so a reference
       that reads the default 1e-6 (or K^-1/2) instead disagrees at once */
    const ra_gdn_shape s4 = {1, 6, 1, 2, 3, 2};
    tu_ref_case(&c, &s4, TU_H0 | TU_DO | TU_DHT, 34);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "true"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.3"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2eps", "0.5"), RA_OK);
    naive_compare(&c, 2);
    ra_case_clear(&c);
}
END_TEST

/* --- (c) identities between runs -----------------------------------------------------------------
 */

static int mp_same(mpfr_srcptr a, mpfr_srcptr b)
{
    return (mpfr_zero_p(a) && mpfr_zero_p(b)) || mpfr_equal_p(a, b);
}

/* Hv = 2 heads reading key head 0 compute exactly what two plain heads
   reading copies of it compute; the grouped dq/dk are their sums. */
START_TEST(data_grouped)
{
    const ra_gdn_shape sg = {1, 6, 1, 2, 4, 3}, sp = {1, 6, 2, 2, 4, 3};
    ra_case cg, cp;
    tu_ref_case(&cg, &sg, TU_H0 | TU_DO | TU_DHT, 41);
    tu_gdn_case(&cp, &sp, RA_F64, TU_H0 | TU_DO | TU_DHT);
    static const char *const same[] = {"v", "g", "beta", "h0", "do", "dht"};
    for (int i = 0; i < 6; i++)
        memcpy(tu_t(&cp, same[i])->data, tu_t(&cg, same[i])->data, tu_t(&cg, same[i])->nbytes);
    for (int qk = 0; qk < 2; qk++) {
        const ra_tensor *src = tu_t(&cg, qk ? "k" : "q");
        ra_tensor *dst = tu_t(&cp, qk ? "k" : "q");
        for (int64_t t = 0; t < sg.T; t++)
            for (int64_t h = 0; h < 2; h++)
                for (int64_t i = 0; i < sg.K; i++)
                    ra_tensor_set(dst, (t * 2 + h) * sg.K + i, ra_tensor_get(src, t * sg.K + i));
    }
    run rg, rp;
    run_case(&rg, &cg, 128, 1, 2);
    run_case(&rp, &cp, 128, 1, 1);
    const ra_mparr *a[] = {&rg.out.o,  &rg.out.ht,    &rg.out.dv,
                           &rg.out.dg, &rg.out.dbeta, &rg.out.dh0};
    const ra_mparr *b[] = {&rp.out.o,  &rp.out.ht,    &rp.out.dv,
                           &rp.out.dg, &rp.out.dbeta, &rp.out.dh0};
    for (int i = 0; i < 6; i++)
        for (size_t e = 0; e < a[i]->n; e++)
            ck_assert_msg(mp_same(a[i]->x + e, b[i]->x + e), "output %d element %zu differs", i, e);
    mpfr_t sum;
    mpfr_init2(sum, 128);
    for (int qk = 0; qk < 2; qk++) {
        const ra_mparr *g = qk ? &rg.out.dk : &rg.out.dq, *p = qk ? &rp.out.dk : &rp.out.dq;
        for (int64_t t = 0; t < sg.T; t++)
            for (int64_t i = 0; i < sg.K; i++) {
                mpfr_add(sum, p->x + (t * 2 + 0) * sg.K + i, p->x + (t * 2 + 1) * sg.K + i,
                         MPFR_RNDN);
                ck_assert_msg(mp_same(g->x + t * sg.K + i, sum), "d%s[%lld, %lld] is not the sum",
                              qk ? "k" : "q", (long long)t, (long long)i);
            }
    }
    mpfr_clear(sum);
    run_clear(&rg), run_clear(&rp);
    ra_case_clear(&cg), ra_case_clear(&cp);
}
END_TEST

/* The same bytes whatever the thread count (8 heads over 1 and 2 threads). */
START_TEST(regress_threads)
{
    const ra_gdn_shape s = {2, 12, 2, 4, 6, 5};
    ra_case c, r1, r2;
    tu_ref_case(&c, &s, TU_H0 | TU_DO | TU_DHT, 51);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "true"), RA_OK);
    ra_ref_opts o = tu_ref_opts();
    o.threads = 1;
    ck_assert_int_eq(ra_ref_compute(&r1, &c, &o, "threads case"), RA_OK);
    o.threads = 2;
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "threads case"), RA_OK);
    ck_assert_uint_eq(r1.tensors.n, 8);
    tu_assert_same_tensors(&r1.tensors, &r2.tensors);
    ck_assert_str_eq(ra_case_param(&r1, "content_hash"), ra_case_param(&r2, "content_hash"));
    ra_case_clear(&c), ra_case_clear(&r1), ra_case_clear(&r2);
}
END_TEST

/* scale is the real number its decimal text names (not its double): with
   scale "0.1", o is 0.1 (read by MPFR) times o with scale "1", to within
   the one rounding of that product and of the final scaling. */
START_TEST(data_scale_text)
{
    const ra_gdn_shape s = {1, 4, 1, 1, 3, 3};
    ra_case c;
    tu_ref_case(&c, &s, TU_H0 | TU_DO, 61);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "1"), RA_OK);
    run r1, r2;
    run_case(&r1, &c, P, 0, 1);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.1"), RA_OK);
    run_case(&r2, &c, P, 0, 1);
    mpvec want;
    mv_init(&want, r1.out.o.n);
    mpfr_t tenth;
    mpfr_init2(tenth, P);
    mpfr_set_str(tenth, "0.1", 10, MPFR_RNDN);
    for (size_t i = 0; i < want.n; i++)
        mpfr_mul(want.x[i], r1.out.o.x + i, tenth, MPFR_RNDN);
    double e = agree(&r2.out.o, &want);
    ck_assert_msg(e < -250, "o with scale 0.1: 2^%.1f from 0.1 x o", e);
    /* the double 0.1 is 0.1 (1 + 5.55e-17): 2^-54 away, which must show */
    for (size_t i = 0; i < want.n; i++)
        mpfr_mul_d(want.x[i], r1.out.o.x + i, 0.1, MPFR_RNDN);
    e = agree(&r2.out.o, &want);
    ck_assert_msg(e > -60, "scale was read as the double 0.1 (2^%.1f)", e);
    mpfr_clear(tenth);
    mv_clear(&want);
    run_clear(&r1), run_clear(&r2);
    ra_case_clear(&c);
}
END_TEST

/* --- bad input
 * -------------------------------------------------------------------------------------- */

static ra_status ref_of(const ra_case *c, ra_case *ref)
{
    ra_ref_opts o = tu_ref_opts();
    tu_reset();
    ra_status st = ra_ref_compute(ref, c, &o, "bad.safetensors");
    return st;
}

START_TEST(data_bad_input)
{
    ra_case c, ref;
    ra_case_init(&ref);
    /* Hv not a multiple of Hk */
    const ra_gdn_shape s = {1, 3, 2, 3, 2, 2};
    tu_gdn_case(&c, &s, RA_F64, TU_DO);
    ck_assert_int_eq(ref_of(&c, &ref), RA_EINVAL);
    ck_assert_msg(strstr(tu_msg, "bad.safetensors") && strstr(tu_msg, "Hv=3") &&
                      strstr(tu_msg, "Hk=2"),
                  "message: %s", tu_msg);
    ra_case_clear(&c);
    /* K mismatch between q and k */
    const ra_gdn_shape s2 = {1, 3, 1, 1, 2, 2};
    tu_gdn_case(&c, &s2, RA_F64, TU_DO);
    ra_tensor *k = ra_tensors_take(&c.tensors, "k");
    ra_tensor_free(k);
    tu_add(&c.tensors, "k", RA_F64, 4, (const int64_t[]){1, 3, 1, 5}, NULL);
    ck_assert_int_eq(ref_of(&c, &ref), RA_EINVAL);
    ck_assert_msg(strstr(tu_msg, "'k'") && strstr(tu_msg, "axis 3"), "message: %s", tu_msg);
    ra_case_clear(&c);
    /* missing tensor */
    tu_gdn_case(&c, &s2, RA_F64, TU_DO);
    ra_tensor_free(ra_tensors_take(&c.tensors, "beta"));
    ck_assert_int_eq(ref_of(&c, &ref), RA_ENOTFOUND);
    ck_assert_msg(strstr(tu_msg, "'beta'"), "message: %s", tu_msg);
    ra_case_clear(&c);
    /* NaN and Inf named with tensor and index */
    tu_gdn_case(&c, &s2, RA_F64, TU_DO);
    ra_tensor_set(tu_t(&c, "v"), 5, NAN);
    ck_assert_int_eq(ref_of(&c, &ref), RA_EINVAL);
    ck_assert_msg(strstr(tu_msg, "'v'") && strstr(tu_msg, "[0, 2, 0, 1]") && strstr(tu_msg, "NaN"),
                  "message: %s", tu_msg);
    ra_tensor_set(tu_t(&c, "v"), 5, 0.0);
    ra_tensor_set(tu_t(&c, "g"), 1, -INFINITY);
    ck_assert_int_eq(ref_of(&c, &ref), RA_EINVAL);
    ck_assert_msg(strstr(tu_msg, "'g'") && strstr(tu_msg, "-Inf"), "message: %s", tu_msg);
    ra_case_clear(&c);
    /* an op without a reference */
    tu_gdn_case(&c, &s2, RA_F64, TU_DO);
    ck_assert_int_eq(ra_case_set_op(&c, "no-such-op"), RA_OK);
    ck_assert_int_eq(ref_of(&c, &ref), RA_EUNSUPPORTED);
    ck_assert_msg(strstr(tu_msg, "'no-such-op'") && strstr(tu_msg, "gdn"), "message: %s", tu_msg);
    /* a malformed scale */
    ck_assert_int_eq(ra_case_set_op(&c, "gdn"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0x1p-3"), RA_OK); /* hex: MPFR reads it */
    ck_assert_int_eq(ref_of(&c, &ref), RA_OK);
    ra_case_clear(&ref);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "abc"), RA_OK);
    ck_assert_int_eq(ref_of(&c, &ref), RA_EINVAL);
    ck_assert_msg(strstr(tu_msg, "scale"), "message: %s", tu_msg);
    ra_case_clear(&c);
    /* a gate whose exp() underflows even MPFR's widest exponent range: an
       honest failure, not a zero that both precisions would agree on */
    tu_ref_case(&c, &s2, TU_DO, 71);
    ra_tensor_set(tu_t(&c, "g"), 1, -1e30);
    ck_assert_int_eq(ref_of(&c, &ref), RA_ENUMERIC);
    ck_assert_msg(strstr(tu_msg, "underflow"), "message: %s", tu_msg);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref-gdn");
    tu_tcase(s, "special", tu_capture, NULL, special_beta0, special_overwrite, special_t1);
    tu_tcase(s, "random", tu_capture, NULL, random_naive);
    tu_tcase(s, "data", tu_capture, NULL, data_grouped, data_scale_text, data_bad_input);
    tu_tcase(s, "regress", tu_capture, NULL, regress_threads);
    return s;
}

int main(void) { return tu_run(suite()); }
