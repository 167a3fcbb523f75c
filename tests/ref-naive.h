/* A deliberately naive MPFR transcription of docs/gdn.md, for the tests. */
#ifndef RA_TESTS_REF_NAIVE_H
#define RA_TESTS_REF_NAIVE_H

/*
 * Every state S_0 .. S_T is stored, the operations follow the docs/gdn.md
 * listing in its order (S~ = a S, u = beta (v - S~^T k), S = S~ + k u^T,
 * o = scale S^T q; the reverse-time adjoint with dg = <dS~, S~>), dot
 * products accumulate with mpfr_fma, and the l2norm chain rule is applied
 * literally as dx^/n - x (x . dx^)/n^3.  It shares no code with
 * src/ref/gdn.c, whose scaled states, raw keys and dg recursion are a
 * different algorithm: agreement to the last couple hundred bits is an
 * independent check of both.  The parameters scale and l2eps come from the
 * case (their decimal texts, parsed here), the documented defaults when
 * absent.  NP is the precision it works at.
 */

#include <stdlib.h>

#include <check.h>
#include <mpfr.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/tensor.h"

#ifndef NP
#define NP 256
#endif

typedef struct naive {
    size_t n[8];
    mpfr_t *x[8]; /* o, ht, dq, dk, dv, dg, dbeta, dh0 in the tensors' layouts */
} naive;

static inline mpfr_t *mpalloc(size_t n)
{
    mpfr_t *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++)
        mpfr_init2(x[i], NP), mpfr_set_zero(x[i], 1);
    return x;
}

static inline void mpfree(mpfr_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mpfr_clear(x[i]);
    free(x);
}

/* x^ = x / sqrt(|x|^2 + eps) of K values into xh, norm into nrm. */
static inline void naive_norm(mpfr_t *xh, mpfr_ptr nrm, const double *x, int64_t K, int l2,
                              mpfr_srcptr eps)
{
    mpfr_set_zero(nrm, 1);
    for (int64_t i = 0; i < K; i++) {
        mpfr_t s;
        mpfr_init2(s, NP);
        mpfr_set_d(s, x[i], MPFR_RNDN);
        mpfr_sqr(s, s, MPFR_RNDN);
        mpfr_add(nrm, nrm, s, MPFR_RNDN);
        mpfr_clear(s);
    }
    mpfr_add(nrm, nrm, eps, MPFR_RNDN);
    mpfr_sqrt(nrm, nrm, MPFR_RNDN);
    if (!l2)
        mpfr_set_ui(nrm, 1, MPFR_RNDN);
    for (int64_t i = 0; i < K; i++) {
        mpfr_set_d(xh[i], x[i], MPFR_RNDN);
        mpfr_div(xh[i], xh[i], nrm, MPFR_RNDN);
    }
}

/* The inputs of step t of value head (b, hv): q^ and k^ of its key head
   (norms into nq, nk), a = exp(g); returns beta. */
static inline double naive_step(mpfr_t *qh, mpfr_t *kh, mpfr_ptr a, mpfr_ptr nq, mpfr_ptr nk,
                                const ra_gdn_problem *p, int64_t b, int64_t t, int64_t hv,
                                mpfr_srcptr eps)
{
    const ra_gdn_shape *s = &p->s;
    const int64_t K = s->K, hk = hv / (s->Hv / s->Hk);
    double qv[64], kv[64];
    for (int64_t i = 0; i < K; i++) {
        qv[i] = ra_tensor_get(p->q, ra_gdn_qk_index(s, b, t, hk, i));
        kv[i] = ra_tensor_get(p->k, ra_gdn_qk_index(s, b, t, hk, i));
    }
    naive_norm(qh, nq, qv, K, p->l2norm, eps);
    naive_norm(kh, nk, kv, K, p->l2norm, eps);
    mpfr_set_d(a, ra_tensor_get(p->g, ra_gdn_gate_index(s, b, t, hv)), MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
    return ra_tensor_get(p->beta, ra_gdn_gate_index(s, b, t, hv));
}

static inline void naive_run(naive *nv, const ra_case *c)
{
    ra_gdn_problem p;
    ck_assert_int_eq(ra_gdn_problem_init(&p, c, RA_GDN_NEED_COTANGENTS, "naive"), RA_OK);
    const ra_gdn_shape s = p.s;
    const int64_t B = s.B, T = s.T, Hk = s.Hk, Hv = s.Hv, K = s.K, V = s.V, G = Hv / Hk;
    const size_t n[8] = {(size_t)(B * T * Hv * V), (size_t)(B * Hv * K * V),
                         (size_t)(B * T * Hk * K), (size_t)(B * T * Hk * K),
                         (size_t)(B * T * Hv * V), (size_t)(B * T * Hv),
                         (size_t)(B * T * Hv),     (size_t)(p.h0 ? B * Hv * K * V : 0)};
    for (int i = 0; i < 8; i++)
        nv->n[i] = n[i], nv->x[i] = mpalloc(n[i]);
    mpfr_t scale, eps, a, x, y, nq, nk;
    mpfr_inits2(NP, scale, eps, a, x, y, nq, nk, (mpfr_ptr)0);
    /* The case's parameters, read from their decimal texts; the documented
       defaults (scale = K^-1/2, l2eps = 1e-6) when absent. */
    if (p.scale_text) {
        ck_assert_int_eq(mpfr_set_str(scale, p.scale_text, 10, MPFR_RNDN), 0);
    } else {
        mpfr_set_si(scale, K, MPFR_RNDN);
        mpfr_sqrt(scale, scale, MPFR_RNDN);
        mpfr_ui_div(scale, 1, scale, MPFR_RNDN);
    }
    ck_assert_int_eq(mpfr_set_str(eps, p.l2eps_text ? p.l2eps_text : "1e-6", 10, MPFR_RNDN), 0);
    /* dq^/dk^ accumulated per key head, then the chain rule */
    mpfr_t *dqh = mpalloc(n[2]), *dkh = mpalloc(n[3]);
    mpfr_t *S = mpalloc((size_t)((T + 1) * K * V)), *St = mpalloc((size_t)(T * K * V));
    mpfr_t *lam = mpalloc((size_t)(K * V)), *dS = mpalloc((size_t)(K * V));
    mpfr_t *qh = mpalloc((size_t)K), *kh = mpalloc((size_t)K), *u = mpalloc((size_t)V),
           *r = mpalloc((size_t)V), *du = mpalloc((size_t)V);
    double qv[64]; /* one row of q or k, for the chain rule */
    for (int64_t b = 0; b < B; b++)
        for (int64_t hv = 0; hv < Hv; hv++) {
            const int64_t hk = hv / G;
#define SIDX(t, i, j) (((t)*K + (i)) * V + (j))
            for (int64_t e = 0; e < K * V; e++)
                mpfr_set_d(S[e], p.h0 ? ra_tensor_get(p.h0, (b * Hv + hv) * K * V + e) : 0.0,
                           MPFR_RNDN);
            for (int64_t t = 0; t < T; t++) {
                const double beta = naive_step(qh, kh, a, nq, nk, &p, b, t, hv, eps);
                for (int64_t e = 0; e < K * V; e++)
                    mpfr_mul(St[t * K * V + e], a, S[t * K * V + e], MPFR_RNDN);
                for (int64_t j = 0; j < V; j++) {
                    mpfr_set_zero(x, 1);
                    for (int64_t i = 0; i < K; i++)
                        mpfr_fma(x, St[SIDX(t, i, j)], kh[i], x, MPFR_RNDN);
                    mpfr_d_sub(x, ra_tensor_get(p.v, ra_gdn_v_index(&s, b, t, hv, j)), x,
                               MPFR_RNDN);
                    mpfr_mul_d(u[j], x, beta, MPFR_RNDN);
                }
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V; j++)
                        mpfr_fma(S[SIDX(t + 1, i, j)], kh[i], u[j], St[SIDX(t, i, j)], MPFR_RNDN);
                for (int64_t j = 0; j < V; j++) {
                    mpfr_ptr o = nv->x[0][ra_gdn_v_index(&s, b, t, hv, j)];
                    for (int64_t i = 0; i < K; i++)
                        mpfr_fma(o, S[SIDX(t + 1, i, j)], qh[i], o, MPFR_RNDN);
                    mpfr_mul(o, o, scale, MPFR_RNDN);
                }
            }
            const int64_t sb = ra_gdn_state_index(&s, b, hv, 0, 0);
            for (int64_t e = 0; e < K * V; e++) {
                mpfr_set(nv->x[1][sb + e], S[T * K * V + e], MPFR_RNDN);
                mpfr_set_d(lam[e], p.dht ? ra_tensor_get(p.dht, sb + e) : 0.0, MPFR_RNDN);
            }
            for (int64_t t = T - 1; t >= 0; t--) {
                const double beta = naive_step(qh, kh, a, nq, nk, &p, b, t, hv, eps);
                const int64_t gi = ra_gdn_gate_index(&s, b, t, hv);
                /* lambda += scale q do^T; dq = scale S_t do */
                for (int64_t i = 0; i < K; i++)
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_mul(x, scale, qh[i], MPFR_RNDN);
                        mpfr_mul_d(x, x, ra_tensor_get(p.do_, ra_gdn_v_index(&s, b, t, hv, j)),
                                   MPFR_RNDN);
                        mpfr_add(lam[i * V + j], lam[i * V + j], x, MPFR_RNDN);
                        mpfr_mul_d(x, S[SIDX(t + 1, i, j)],
                                   ra_tensor_get(p.do_, ra_gdn_v_index(&s, b, t, hv, j)),
                                   MPFR_RNDN);
                        mpfr_mul(x, x, scale, MPFR_RNDN);
                        mpfr_ptr d = dqh[ra_gdn_qk_index(&s, b, t, hk, i)];
                        mpfr_add(d, d, x, MPFR_RNDN);
                    }
                for (int64_t j = 0; j < V; j++) { /* r = v - S~^T k; du = lambda^T k */
                    mpfr_set_zero(x, 1);
                    mpfr_set_zero(du[j], 1);
                    for (int64_t i = 0; i < K; i++) {
                        mpfr_fma(x, St[SIDX(t, i, j)], kh[i], x, MPFR_RNDN);
                        mpfr_fma(du[j], lam[i * V + j], kh[i], du[j], MPFR_RNDN);
                    }
                    mpfr_d_sub(r[j], ra_tensor_get(p.v, ra_gdn_v_index(&s, b, t, hv, j)), x,
                               MPFR_RNDN);
                    mpfr_mul_d(u[j], r[j], beta, MPFR_RNDN);
                }
                for (int64_t i = 0; i < K; i++) { /* dk = lambda u - beta S~ du */
                    mpfr_ptr d = dkh[ra_gdn_qk_index(&s, b, t, hk, i)];
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_fma(d, lam[i * V + j], u[j], d, MPFR_RNDN);
                        mpfr_mul(x, St[SIDX(t, i, j)], du[j], MPFR_RNDN);
                        mpfr_mul_d(x, x, beta, MPFR_RNDN);
                        mpfr_sub(d, d, x, MPFR_RNDN);
                    }
                }
                mpfr_ptr db = nv->x[6][gi], dg = nv->x[5][gi];
                for (int64_t j = 0; j < V; j++) {
                    mpfr_fma(db, du[j], r[j], db, MPFR_RNDN);
                    mpfr_mul_d(nv->x[4][ra_gdn_v_index(&s, b, t, hv, j)], du[j], beta, MPFR_RNDN);
                }
                for (int64_t i = 0; i < K; i++) /* dS~ = lambda - beta k du^T; dg = <dS~, S~> */
                    for (int64_t j = 0; j < V; j++) {
                        mpfr_mul(x, kh[i], du[j], MPFR_RNDN);
                        mpfr_mul_d(x, x, beta, MPFR_RNDN);
                        mpfr_sub(dS[i * V + j], lam[i * V + j], x, MPFR_RNDN);
                        mpfr_fma(dg, dS[i * V + j], St[SIDX(t, i, j)], dg, MPFR_RNDN);
                        mpfr_mul(lam[i * V + j], a, dS[i * V + j], MPFR_RNDN);
                    }
            }
            if (p.h0)
                for (int64_t e = 0; e < K * V; e++)
                    mpfr_set(nv->x[7][sb + e], lam[e], MPFR_RNDN);
#undef SIDX
        }
    /* chain rule: dx = dx^/n - x (x . dx^)/n^3, per (b, t, hk) */
    for (int which = 0; which < 2; which++)
        for (int64_t row = 0; row < B * T * Hk; row++) {
            mpfr_t *src = which ? dkh : dqh, *dst = nv->x[which ? 3 : 2];
            const ra_tensor *xt = which ? p.k : p.q;
            if (!p.l2norm) {
                for (int64_t i = 0; i < K; i++)
                    mpfr_set(dst[row * K + i], src[row * K + i], MPFR_RNDN);
                continue;
            }
            for (int64_t i = 0; i < K; i++)
                qv[i] = ra_tensor_get(xt, row * K + i);
            naive_norm(qh, nq, qv, K, 1, eps);
            mpfr_set_zero(y, 1);
            for (int64_t i = 0; i < K; i++)
                mpfr_fma(y, (mpfr_set_d(x, qv[i], MPFR_RNDN), x), src[row * K + i], y, MPFR_RNDN);
            for (int64_t i = 0; i < K; i++) {
                mpfr_div(dst[row * K + i], src[row * K + i], nq, MPFR_RNDN);
                mpfr_mul_d(x, y, qv[i], MPFR_RNDN);
                mpfr_div(x, x, nq, MPFR_RNDN);
                mpfr_div(x, x, nq, MPFR_RNDN);
                mpfr_div(x, x, nq, MPFR_RNDN);
                mpfr_sub(dst[row * K + i], dst[row * K + i], x, MPFR_RNDN);
            }
        }
    mpfree(dqh, n[2]), mpfree(dkh, n[3]);
    mpfree(S, (size_t)((T + 1) * K * V)), mpfree(St, (size_t)(T * K * V));
    mpfree(lam, (size_t)(K * V)), mpfree(dS, (size_t)(K * V));
    mpfree(qh, (size_t)K), mpfree(kh, (size_t)K), mpfree(u, (size_t)V), mpfree(r, (size_t)V),
        mpfree(du, (size_t)V);
    mpfr_clears(scale, eps, a, x, y, nq, nk, (mpfr_ptr)0);
}

static inline void naive_clear(naive *nv)
{
    for (int i = 0; i < 8; i++)
        mpfree(nv->x[i], nv->n[i]);
}

#endif
