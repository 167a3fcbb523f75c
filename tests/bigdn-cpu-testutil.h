/* Helpers of the bigdn CPU kernel tests: case generator, token-by-token double forward, metrics. */
#ifndef RA_TESTS_BIGDN_CPU_TESTUTIL_H
#define RA_TESTS_BIGDN_CPU_TESTUTIL_H

/*
 * The expected values of the bigdn kernel tests come from bd_ref_forward,
 * a double-precision transcription of SPEC.md section 4 that shares no
 * algorithm with the kernels: it never forms a D x D matrix and never
 * scans frames.  For each query token it walks the frames outward and
 * applies the transitions to the query vector, token by token,
 *   q^T M_f  = sum_{f' <= f} q^T g_f (I - P_f) ... g_{f'+1} (I - P_{f'+1}) A_{f'}
 *   q^T M'_f = sum_{f' > f}  q^T g_{f+1} (I - P_{f+1}) ... g_{f'-1} (I - P_{f'-1}) A_{f'},
 * with u^T A = sum_s beta_s (u . kr_s) v_s^T and (I - P)^T u = u - sum_s
 * beta_s kr_s (kr_s . u) (P is symmetric); den likewise with K and 1 for
 * v.  Cost O(N^2 D) per head: small shapes only.  Inputs are generated in
 * double, stored as float, and the double code reads the stored floats,
 * so both sides see the same input values.
 */

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "core/tensor.h"
#include "cpu/bigdn_f32.h"

/* A case: every input in float (what the kernel reads) and in double
   (the same values), plus dout. */
typedef struct bd_case {
    ra_bigdn_dims d;
    int64_t n_qkv, n_beta, n_decay, n_w, n_rope, n_out;
    float *f[8];  /* qkv, beta, decay, q_norm_w, k_norm_w, rope_cos, rope_sin, dout */
    double *x[8]; /* the same, widened */
} bd_case;

enum { BD_QKV, BD_BETA, BD_DECAY, BD_QW, BD_KW, BD_COS, BD_SIN, BD_DOUT };

/* How the inputs are drawn.  qmin > 0 draws q, k as sign * U[qmin, 1]
   (|x| >= qmin keeps normalised values away from the ReLU kink);
   otherwise qkv ~ sd N(0, 1). */
typedef struct bd_recipe {
    double sd, qmin;
    double beta_lo, beta_hi, decay_lo, decay_hi, wsd;
    unsigned long seed;
    int qkv_bf16; /* store qkv rounded to bf16 (the seed's bf16 activations) */
} bd_recipe;

static inline int64_t bd_sizes(bd_case *c, int i)
{
    const int64_t n[8] = {c->n_qkv, c->n_beta, c->n_decay, c->n_w,
                          c->n_w,   c->n_rope, c->n_rope,  c->n_out};
    return n[i];
}

static inline void bd_case_free(bd_case *c)
{
    for (int i = 0; i < 8; i++)
        free(c->f[i]), free(c->x[i]);
}

/* Refreshes the double copies from the float arrays. */
static inline void bd_widen(bd_case *c)
{
    for (int i = 0; i < 8; i++)
        for (int64_t j = 0; j < bd_sizes(c, i); j++)
            c->x[i][j] = c->f[i][j];
}

static inline void bd_case_make(bd_case *c, ra_bigdn_dims d, const bd_recipe *r)
{
    memset(c, 0, sizeof *c);
    c->d = d;
    const int64_t N = d.F * d.S, C = d.H * d.D;
    c->n_qkv = d.B * N * 3 * C, c->n_beta = d.B * d.H * N, c->n_decay = d.B * d.H * d.F;
    c->n_w = C, c->n_rope = N * d.D, c->n_out = d.B * N * C;
    for (int i = 0; i < 8; i++) {
        c->f[i] = malloc((size_t)bd_sizes(c, i) * sizeof(float) + 1);
        c->x[i] = malloc((size_t)bd_sizes(c, i) * sizeof(double) + 1);
        ck_assert(c->f[i] && c->x[i]);
    }
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, r->seed);
    for (int64_t i = 0; i < c->n_qkv; i++) {
        const int slot = (int)((i / C) % 3);
        double v;
        if (r->qmin > 0 && slot < 2)
            v = (gsl_rng_uniform(g) < 0.5 ? -1 : 1) *
                (r->qmin + (1 - r->qmin) * gsl_rng_uniform(g));
        else
            v = r->sd * gsl_ran_gaussian(g, 1);
        c->f[BD_QKV][i] = r->qkv_bf16 ? ra_round_bf16_f((float)v) : (float)v;
    }
    for (int64_t i = 0; i < c->n_beta; i++)
        c->f[BD_BETA][i] = (float)(r->beta_lo + (r->beta_hi - r->beta_lo) * gsl_rng_uniform(g));
    for (int64_t i = 0; i < c->n_decay; i++)
        c->f[BD_DECAY][i] = (float)(r->decay_lo + (r->decay_hi - r->decay_lo) * gsl_rng_uniform(g));
    for (int64_t i = 0; i < C; i++) {
        c->f[BD_QW][i] = (float)(1 + r->wsd * gsl_ran_gaussian(g, 1));
        c->f[BD_KW][i] = (float)(1 + r->wsd * gsl_ran_gaussian(g, 1));
    }
    /* Interleaved RoPE, sign-carrying sin: y[2i] = x[2i] c - x[2i+1] s,
       y[2i+1] = x[2i+1] c + x[2i] s (an odd D leaves its last channel
       with cos 1, sin 0: only bigdn.core accepts odd D). */
    for (int64_t n = 0; n < N; n++)
        for (int64_t e = 0; e < d.D; e += 2) {
            const double th = 2 * M_PI * gsl_rng_uniform(g);
            float *cs = c->f[BD_COS] + n * d.D, *sn = c->f[BD_SIN] + n * d.D;
            if (e + 1 == d.D) {
                cs[e] = 1, sn[e] = 0;
                continue;
            }
            cs[e] = cs[e + 1] = (float)cos(th);
            sn[e] = (float)-sin(th), sn[e + 1] = (float)sin(th);
        }
    for (int64_t i = 0; i < c->n_out; i++)
        c->f[BD_DOUT][i] = (float)gsl_ran_gaussian(g, 1);
    gsl_rng_free(g);
    bd_widen(c);
}

/* The prologue in double: Q, K, Qr, Kr, V [B,N,H,D] from a case's qkv. */
static inline void bd_ref_prologue(const ra_bigdn_dims *d, const double *qkv, const double *qw,
                                   const double *kw, const double *cs, const double *sn, double *Q,
                                   double *K, double *Qr, double *Kr, double *V)
{
    const int64_t N = d->F * d->S, C = d->H * d->D, D = d->D;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t n = 0; n < N; n++) {
            const double *row = qkv + (b * N + n) * 3 * C;
            double sq = 0, sk = 0;
            for (int64_t c = 0; c < C; c++)
                sq += row[c] * row[c], sk += row[C + c] * row[C + c];
            const double qi = 1 / sqrt(sq / C + d->norm_eps), ki = 1 / sqrt(sk / C + d->norm_eps);
            const int64_t o = (b * N + n) * C;
            for (int64_t c = 0; c < C; c++) {
                Q[o + c] = fmax(row[c] * qi * qw[c], 0);
                K[o + c] = fmax(row[C + c] * ki * kw[c], 0) * d->k_scale;
                V[o + c] = row[2 * C + c];
            }
            for (int64_t c = 0; c < C; c++) {
                const int64_t e = c % D, p = c - e + (e ^ 1);
                Qr[o + c] = Q[o + c] * cs[n * D + e] + Q[o + p] * sn[n * D + e];
                Kr[o + c] = K[o + c] * cs[n * D + e] + K[o + p] * sn[n * D + e];
            }
        }
}

/* u <- g (I - P_f)^T u for frame f of head (b, h), keys X ([B,N,H,D]). */
static inline void bd_ref_step(const ra_bigdn_dims *d, const double *X, const double *beta,
                               double g, int64_t b, int64_t h, int64_t f, double *u, double *tmp)
{
    const int64_t N = d->F * d->S, H = d->H, D = d->D;
    memcpy(tmp, u, (size_t)D * sizeof(double));
    for (int64_t s = 0; s < d->S; s++) {
        const int64_t n = f * d->S + s;
        const double *k = X + ((b * N + n) * H + h) * D;
        double dot = 0;
        for (int64_t e = 0; e < D; e++)
            dot += k[e] * u[e];
        const double bt = beta[(b * H + h) * N + n] * dot;
        for (int64_t e = 0; e < D; e++)
            tmp[e] -= bt * k[e];
    }
    for (int64_t e = 0; e < D; e++)
        u[e] = g * tmp[e];
}

/* num += u^T A_f (V != NULL) or den += u^T Bz_f (V == NULL). */
static inline void bd_ref_inject(const ra_bigdn_dims *d, const double *X, const double *V,
                                 const double *beta, int64_t b, int64_t h, int64_t f,
                                 const double *u, double *acc)
{
    const int64_t N = d->F * d->S, H = d->H, D = d->D;
    for (int64_t s = 0; s < d->S; s++) {
        const int64_t n = f * d->S + s, o = ((b * N + n) * H + h) * D;
        double dot = 0;
        for (int64_t e = 0; e < D; e++)
            dot += X[o + e] * u[e];
        const double bt = beta[(b * H + h) * N + n] * dot;
        if (V)
            for (int64_t e = 0; e < D; e++)
                acc[e] += bt * V[o + e];
        else
            acc[0] += bt;
    }
}

/* bigdn.core in double, token by token (see the header comment). */
static inline void bd_ref_core(const ra_bigdn_dims *d, const double *Q, const double *K,
                               const double *Qr, const double *Kr, const double *V,
                               const double *beta, const double *decay, double *out)
{
    const int64_t F = d->F, N = F * d->S, H = d->H, D = d->D;
    double *u = malloc(4 * (size_t)D * sizeof(double)), *t = u + D, *num = t + D, den;
    ck_assert(u);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t n = 0; n < N; n++) {
                const int64_t f = n / d->S, o = ((b * N + n) * H + h) * D;
                const double *g = decay + (b * H + h) * F;
                memset(num, 0, (size_t)D * sizeof(double));
                den = 0;
                /* numerator: forward stream (frames f..0), then reverse (f+1..F-1) */
                memcpy(u, Qr + o, (size_t)D * sizeof(double));
                for (int64_t fp = f; fp >= 0; fp--) {
                    bd_ref_inject(d, Kr, V, beta, b, h, fp, u, num);
                    bd_ref_step(d, Kr, beta, g[fp], b, h, fp, u, t);
                }
                memcpy(u, Qr + o, (size_t)D * sizeof(double));
                for (int64_t fp = f + 1; fp < F; fp++) {
                    bd_ref_inject(d, Kr, V, beta, b, h, fp, u, num);
                    bd_ref_step(d, Kr, beta, g[fp], b, h, fp, u, t);
                }
                memcpy(u, Q + o, (size_t)D * sizeof(double));
                for (int64_t fp = f; fp >= 0; fp--) {
                    bd_ref_inject(d, K, NULL, beta, b, h, fp, u, &den);
                    bd_ref_step(d, K, beta, g[fp], b, h, fp, u, t);
                }
                memcpy(u, Q + o, (size_t)D * sizeof(double));
                for (int64_t fp = f + 1; fp < F; fp++) {
                    bd_ref_inject(d, K, NULL, beta, b, h, fp, u, &den);
                    bd_ref_step(d, K, beta, g[fp], b, h, fp, u, t);
                }
                for (int64_t e = 0; e < D; e++)
                    out[o + e] = num[e] / (den + d->eps);
            }
    free(u);
}

/* bigdn in double: prologue, then the core. */
static inline void bd_ref_forward(const ra_bigdn_dims *d, double *const x[8], double *out)
{
    const int64_t n = d->B * d->F * d->S * d->H * d->D;
    double *w = malloc(5 * (size_t)n * sizeof(double));
    ck_assert(w);
    bd_ref_prologue(d, x[BD_QKV], x[BD_QW], x[BD_KW], x[BD_COS], x[BD_SIN], w, w + n, w + 2 * n,
                    w + 3 * n, w + 4 * n);
    bd_ref_core(d, w, w + n, w + 2 * n, w + 3 * n, w + 4 * n, x[BD_BETA], x[BD_DECAY], out);
    free(w);
}

/* --- metrics -------------------------------------------------------------------------------- */

/* rms(y - z) / rms(z) (fla's rel_rms); y float or double through a stride
   trick: pass yd (double) or yf (float), the other NULL. */
static inline double bd_rel_rms(const float *yf, const double *yd, const double *z, int64_t n)
{
    double se = 0, sz = 0;
    for (int64_t i = 0; i < n; i++) {
        const double y = yf ? yf[i] : yd[i];
        se += (y - z[i]) * (y - z[i]), sz += z[i] * z[i];
    }
    return sz > 0 ? sqrt(se / sz) : sqrt(se);
}

/* max |y - z| / max |z|. */
static inline double bd_max_rel(const float *yf, const double *yd, const double *z, int64_t n)
{
    double me = 0, mz = 0;
    for (int64_t i = 0; i < n; i++) {
        const double y = yf ? yf[i] : yd[i];
        me = fmax(me, fabs(y - z[i])), mz = fmax(mz, fabs(z[i]));
    }
    return mz > 0 ? me / mz : me;
}

#endif
