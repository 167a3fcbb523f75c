/* A deliberately naive MPFR transcription of the scan family (SPEC.md section 3), for the tests. */
#ifndef RA_TESTS_REF_NAIVE_SCAN_H
#define RA_TESTS_REF_NAIVE_SCAN_H

/*
 * Written from the spec, sharing no code with src/ref/scan.c, and by
 * different algorithms where there is a choice:
 *   - affine/linear forward: every state Abar_0..Abar_T, Bbar_0..Bbar_T
 *     kept, products with mpfr_mul and mpfr_add (no fma);
 *   - affine/linear backward: not the reversed scan but the explicit sum
 *       dA_t = sum_{s>=t} M_{s,t}^T (G^A_s Abar_{t-1}^T + G^B_s Bbar_{t-1}^T),
 *       dB_t = sum_{s>=t} M_{s,t}^T G^B_s,   M_{s,t} = A_s ... A_{t+1}
 *     (O(T^2) products, fine at the small T the tests use);
 *   - log: the kernels' formula, a*_t = cumsum lc, h_t = exp(a*_t)
 *     sum_{m<=t} exp(lv_m - a*_m), and its gradient as explicit sums:
 *       dlv_m = sum_{t>=m} dh_t exp(a*_t - a*_m + lv_m),
 *       dlc_j = sum_{t>=j} dh_t sum_{m<j} exp(a*_t - a*_m + lv_m).
 * Inputs are double arrays in the case layout; results are MPFR arrays in
 * the same layouts.  NS is the precision.
 */

#include <stdlib.h>

#include <mpfr.h>

#ifndef NS
#define NS 256
#endif

typedef struct nscan {
    int64_t B, T, N, k, v;
    int log;
    mpfr_t *y0, *y1, *g0, *g1; /* Abar/P (not log), Bbar/h, d in0, d in1 */
} nscan;

static inline mpfr_t *ns_alloc(int64_t n)
{
    mpfr_t *x = malloc((size_t)(n ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        mpfr_init2(x[i], NS), mpfr_set_zero(x[i], 1);
    return x;
}

static inline void ns_free_arr(mpfr_t *x, int64_t n)
{
    for (int64_t i = 0; x && i < n; i++)
        mpfr_clear(x[i]);
    free(x);
}

/* c = a b (n x m times m x p), all row-major, c distinct from a and b */
static inline void ns_mm(mpfr_t *c, mpfr_t *a, mpfr_t *b, int64_t n, int64_t m, int64_t p)
{
    mpfr_t t;
    mpfr_init2(t, NS);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < p; j++) {
            mpfr_set_zero(c[i * p + j], 1);
            for (int64_t q = 0; q < m; q++) {
                mpfr_mul(t, a[i * m + q], b[q * p + j], MPFR_RNDN);
                mpfr_add(c[i * p + j], c[i * p + j], t, MPFR_RNDN);
            }
        }
    mpfr_clear(t);
}

/* c = a^T b (a is m x n) */
static inline void ns_mtm(mpfr_t *c, mpfr_t *a, mpfr_t *b, int64_t n, int64_t m, int64_t p)
{
    mpfr_t *at = ns_alloc(n * m);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            mpfr_set(at[j * m + i], a[i * n + j], MPFR_RNDN);
    ns_mm(c, at, b, n, m, p);
    ns_free_arr(at, n * m);
}

/* Affine (and linear: k = v = 1) forward and backward. x0 = A, x1 = B,
   c0, c1 = the cotangents (c0 may be NULL). */
static inline void ns_affine(nscan *r, const double *x0, const double *x1, const double *c0,
                             const double *c1)
{
    const int64_t B = r->B, T = r->T, N = r->N, k = r->k, v = r->v, kk = k * k, kv = k * v;
    r->y0 = ns_alloc(B * T * N * kk), r->y1 = ns_alloc(B * T * N * kv);
    r->g0 = ns_alloc(B * T * N * kk), r->g1 = ns_alloc(B * T * N * kv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t n = 0; n < N; n++) {
            /* states 0..T */
            mpfr_t *Ab = ns_alloc((T + 1) * kk), *Bb = ns_alloc((T + 1) * kv);
            mpfr_t *A = ns_alloc(T * kk), *Bi = ns_alloc(T * kv);
            mpfr_t *GA = ns_alloc(T * kk), *GB = ns_alloc(T * kv);
            for (int64_t i = 0; i < k; i++)
                mpfr_set_ui(Ab[i * k + i], 1, MPFR_RNDN);
            for (int64_t t = 0; t < T; t++) {
                int64_t off = (b * T + t) * N + n;
                for (int64_t i = 0; i < kk; i++) {
                    mpfr_set_d(A[t * kk + i], x0[off * kk + i], MPFR_RNDN);
                    mpfr_set_d(GA[t * kk + i], c0 ? c0[off * kk + i] : 0.0, MPFR_RNDN);
                }
                for (int64_t i = 0; i < kv; i++) {
                    mpfr_set_d(Bi[t * kv + i], x1[off * kv + i], MPFR_RNDN);
                    mpfr_set_d(GB[t * kv + i], c1[off * kv + i], MPFR_RNDN);
                }
                ns_mm(Ab + (t + 1) * kk, A + t * kk, Ab + t * kk, k, k, k);
                ns_mm(Bb + (t + 1) * kv, A + t * kk, Bb + t * kv, k, k, v);
                for (int64_t i = 0; i < kv; i++)
                    mpfr_add(Bb[(t + 1) * kv + i], Bb[(t + 1) * kv + i], Bi[t * kv + i], MPFR_RNDN);
                for (int64_t i = 0; i < kk; i++)
                    mpfr_set(r->y0[off * kk + i], Ab[(t + 1) * kk + i], MPFR_RNDN);
                for (int64_t i = 0; i < kv; i++)
                    mpfr_set(r->y1[off * kv + i], Bb[(t + 1) * kv + i], MPFR_RNDN);
            }
            /* explicit sums over s >= t with M = A_s ... A_{t+1} */
            mpfr_t *M = ns_alloc(kk), *Mn = ns_alloc(kk), *HA = ns_alloc(kk), *HB = ns_alloc(kv),
                   *tA = ns_alloc(kk), *tB = ns_alloc(kv), *dA = ns_alloc(kk), *tmp = ns_alloc(kk);
            for (int64_t t = 0; t < T; t++) {
                int64_t off = (b * T + t) * N + n;
                for (int64_t i = 0; i < kk; i++)
                    mpfr_set_ui(M[i], i % (k + 1) == 0, MPFR_RNDN); /* I */
                for (int64_t i = 0; i < kk; i++)
                    mpfr_set_zero(HA[i], 1);
                for (int64_t i = 0; i < kv; i++)
                    mpfr_set_zero(HB[i], 1);
                for (int64_t s = t; s < T; s++) {
                    if (s > t) {
                        ns_mm(Mn, A + s * kk, M, k, k, k);
                        for (int64_t i = 0; i < kk; i++)
                            mpfr_set(M[i], Mn[i], MPFR_RNDN);
                    }
                    ns_mtm(tA, M, GA + s * kk, k, k, k);
                    ns_mtm(tB, M, GB + s * kv, k, k, v);
                    for (int64_t i = 0; i < kk; i++)
                        mpfr_add(HA[i], HA[i], tA[i], MPFR_RNDN);
                    for (int64_t i = 0; i < kv; i++)
                        mpfr_add(HB[i], HB[i], tB[i], MPFR_RNDN);
                }
                /* dA = HA Abar_{t}^T + HB Bbar_{t}^T (states index t = time t-1) */
                for (int64_t i = 0; i < k; i++)
                    for (int64_t j = 0; j < k; j++) {
                        mpfr_set_zero(dA[i * k + j], 1);
                        for (int64_t q = 0; q < k; q++) {
                            mpfr_mul(tmp[0], HA[i * k + q], Ab[t * kk + j * k + q], MPFR_RNDN);
                            mpfr_add(dA[i * k + j], dA[i * k + j], tmp[0], MPFR_RNDN);
                        }
                        for (int64_t q = 0; q < v; q++) {
                            mpfr_mul(tmp[0], HB[i * v + q], Bb[t * kv + j * v + q], MPFR_RNDN);
                            mpfr_add(dA[i * k + j], dA[i * k + j], tmp[0], MPFR_RNDN);
                        }
                    }
                for (int64_t i = 0; i < kk; i++)
                    mpfr_set(r->g0[off * kk + i], dA[i], MPFR_RNDN);
                for (int64_t i = 0; i < kv; i++)
                    mpfr_set(r->g1[off * kv + i], HB[i], MPFR_RNDN);
            }
            ns_free_arr(M, kk), ns_free_arr(Mn, kk), ns_free_arr(HA, kk), ns_free_arr(HB, kv);
            ns_free_arr(tA, kk), ns_free_arr(tB, kv), ns_free_arr(dA, kk), ns_free_arr(tmp, kk);
            ns_free_arr(Ab, (T + 1) * kk), ns_free_arr(Bb, (T + 1) * kv);
            ns_free_arr(A, T * kk), ns_free_arr(Bi, T * kv);
            ns_free_arr(GA, T * kk), ns_free_arr(GB, T * kv);
        }
}

/* Log scan by the kernels' formula; lc [B,T,D], lv [B,T+1,D], dh [B,T,D]. */
static inline void ns_log(nscan *r, const double *lc, const double *lv, const double *dh)
{
    const int64_t B = r->B, T = r->T, D = r->N;
    r->y0 = NULL;
    r->y1 = ns_alloc(B * T * D), r->g0 = ns_alloc(B * T * D), r->g1 = ns_alloc(B * (T + 1) * D);
    mpfr_t *as = ns_alloc(T + 1), e, s, w;
    mpfr_inits2(NS, e, s, w, (mpfr_ptr)0);
    for (int64_t b = 0; b < B; b++)
        for (int64_t d = 0; d < D; d++) {
            mpfr_set_zero(as[0], 1); /* a*_0 = 0 */
            for (int64_t t = 1; t <= T; t++) {
                mpfr_set_d(w, lc[(b * T + t - 1) * D + d], MPFR_RNDN);
                mpfr_add(as[t], as[t - 1], w, MPFR_RNDN);
            }
            /* term(t, m) = exp(a*_t - a*_m + lv_m) */
#define NS_TERM(t, m)                                                                              \
    do {                                                                                           \
        mpfr_sub(e, as[t], as[m], MPFR_RNDN);                                                      \
        mpfr_set_d(w, lv[(b * (T + 1) + (m)) * D + d], MPFR_RNDN);                                 \
        mpfr_add(e, e, w, MPFR_RNDN);                                                              \
        mpfr_exp(e, e, MPFR_RNDN);                                                                 \
    } while (0)
            for (int64_t t = 1; t <= T; t++) {
                /* log h_t = a*_t + log sum_m exp(lv_m - a*_m) */
                mpfr_set_zero(s, 1);
                for (int64_t m = 0; m <= t; m++) {
                    mpfr_set_d(w, lv[(b * (T + 1) + m) * D + d], MPFR_RNDN);
                    mpfr_sub(e, w, as[m], MPFR_RNDN);
                    mpfr_exp(e, e, MPFR_RNDN);
                    mpfr_add(s, s, e, MPFR_RNDN);
                }
                mpfr_log(s, s, MPFR_RNDN);
                mpfr_add(s, s, as[t], MPFR_RNDN);
                mpfr_exp(r->y1[(b * T + t - 1) * D + d], s, MPFR_RNDN);
            }
            for (int64_t m = 0; m <= T; m++) { /* dlv_m */
                mpfr_ptr g = r->g1[(b * (T + 1) + m) * D + d];
                for (int64_t t = m > 1 ? m : 1; t <= T; t++) {
                    NS_TERM(t, m);
                    mpfr_mul_d(e, e, dh[(b * T + t - 1) * D + d], MPFR_RNDN);
                    mpfr_add(g, g, e, MPFR_RNDN);
                }
            }
            for (int64_t j = 1; j <= T; j++) { /* dlc_j */
                mpfr_ptr g = r->g0[(b * T + j - 1) * D + d];
                for (int64_t t = j; t <= T; t++)
                    for (int64_t m = 0; m < j; m++) {
                        NS_TERM(t, m);
                        mpfr_mul_d(e, e, dh[(b * T + t - 1) * D + d], MPFR_RNDN);
                        mpfr_add(g, g, e, MPFR_RNDN);
                    }
            }
#undef NS_TERM
        }
    ns_free_arr(as, T + 1);
    mpfr_clears(e, s, w, (mpfr_ptr)0);
}

static inline void ns_free(nscan *r)
{
    const int64_t kk = r->k * r->k, kv = r->k * r->v, n = r->B * r->T * r->N;
    ns_free_arr(r->y0, r->log ? 0 : n * kk);
    ns_free_arr(r->y1, n * kv);
    ns_free_arr(r->g0, n * kk);
    ns_free_arr(r->g1, r->log ? r->B * (r->T + 1) * r->N : n * kv);
}

#endif
