/* The CPU glr variants: fp32 sequential with stored states, and chunked with recomputed chunk
 * states. */

/*
 * Both read the case's inputs widened to fp32 (HyMo's wrapper casts
 * everything to fp32 before its kernel), compute in fp32 (fmaf, expf) and
 * store o and every gradient in f32.  Heads run in parallel (OpenMP);
 * dA_log is summed over the batch in increasing b afterwards, so results do
 * not depend on the thread count.
 *
 * glr.cpu.f32.store: the sequential recurrence, as HyMo's kernel computes
 * it: the backward first runs the forward keeping every state h_0 .. h_T
 * (T S D floats per head, what the kernel stores, whatever its docs say
 * about recomputation), then walks lambda = dL/dh_t backwards reading them.
 *
 * glr.cpu.chunk64.f32.recompute: the chunked form.  With the in-chunk
 * cumulative log decay L_i[s] = sum_{j<=i} log alpha_j[s] (log alpha
 * = -g exp(A_log) or g A_log, never the log of a rounded alpha) and the
 * chunk's start state H:
 *     h_i = exp(L_i) H + sum_{j<=i} exp(L_i - L_j) b_j v_j^T
 *     o_i = (c_i exp(L_i))^T H + sum_{j<=i} [sum_s c_i b_j exp(L_i - L_j)] v_j
 * and the next start state is h_C.  The forward keeps only the running H;
 * the backward recomputes the chunk start states from the inputs (the
 * "recompute" of the name: O(T/C) states, no per-step storage across
 * chunks), and per chunk, in reverse, forms the chunk's states and
 *     lambda_i = sum_{j>=i} exp(L_j - L_i) c_j do_j^T + exp(L_C - L_i) dH
 * in the same closed form (dH = dL/dh_C from the chunk after), then
 * dL/dH = sum_j exp(L_j) c_j do_j^T + exp(L_C) dH.  The exponent
 * differences L_i - L_j <= 0 for i >= j, so nothing overflows.
 */

#include "cpu/glr_variants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/glr_case.h"

typedef struct head {
    int64_t T, S, D;
    const float *v, *b, *c, *dO; /* [T,D], [T,S], [T,S], [T,D] of this head */
    const float *g;              /* [T] */
    const float *A;              /* [S] */
    int linear;
    float *o, *dv, *db, *dc, *dg, *dA; /* outputs of this head (dA: [S] partial) */
} head;

/* log alpha_t[s] and its partials over g and A (d log alpha / d g, / d A). */
static float log_alpha(const head *h, int64_t t, int64_t s, float *dl_dg, float *dl_dA)
{
    const float g = h->g[t], A = h->A[s];
    if (h->linear) {
        if (dl_dg)
            *dl_dg = A, *dl_dA = g;
        return g * A;
    }
    const float e = expf(A);
    if (dl_dg)
        *dl_dg = -e, *dl_dA = -g * e;
    return -g * e;
}

/* --- sequential, every state stored ------------------------------------------------------ */

static int store_run(const head *h, int backward)
{
    const int64_t T = h->T, S = h->S, D = h->D, SD = S * D;
    float *H = calloc((size_t)((backward ? T : 0) + 1) * (size_t)SD, sizeof *H);
    float *lam = calloc((size_t)SD, sizeof *lam);
    if (!H || !lam) {
        free(H), free(lam);
        return 1;
    }
    for (int64_t t = 0; t < T; t++) {
        const float *prev = H + (backward ? t : 0) * SD;
        float *cur = H + (backward ? t + 1 : 0) * SD;
        for (int64_t s = 0; s < S; s++) {
            const float a = expf(log_alpha(h, t, s, NULL, NULL));
            for (int64_t d = 0; d < D; d++)
                cur[s * D + d] = fmaf(h->b[t * S + s], h->v[t * D + d], a * prev[s * D + d]);
        }
        if (!backward)
            for (int64_t d = 0; d < D; d++) {
                float acc = 0;
                for (int64_t s = 0; s < S; s++)
                    acc = fmaf(h->c[t * S + s], cur[s * D + d], acc);
                h->o[t * D + d] = acc;
            }
    }
    if (backward) {
        for (int64_t s = 0; s < S; s++)
            h->dA[s] = 0;
        for (int64_t t = T - 1; t >= 0; t--) {
            const float *cur = H + (t + 1) * SD, *prev = H + t * SD;
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++)
                    lam[s * D + d] = fmaf(h->c[t * S + s], h->dO[t * D + d], lam[s * D + d]);
            for (int64_t d = 0; d < D; d++) { /* lambda = dL/dh_t here, before the decay */
                float dv = 0;
                for (int64_t s = 0; s < S; s++)
                    dv = fmaf(h->b[t * S + s], lam[s * D + d], dv);
                h->dv[t * D + d] = dv;
            }
            float dg = 0;
            for (int64_t s = 0; s < S; s++) {
                float dc = 0, db = 0, P = 0;
                for (int64_t d = 0; d < D; d++) {
                    dc = fmaf(cur[s * D + d], h->dO[t * D + d], dc);
                    db = fmaf(lam[s * D + d], h->v[t * D + d], db);
                    P = fmaf(lam[s * D + d], prev[s * D + d], P);
                }
                h->dc[t * S + s] = dc, h->db[t * S + s] = db;
                float lg, lA;
                const float a = expf(log_alpha(h, t, s, &lg, &lA));
                const float dla = a * P; /* dL/d log alpha */
                dg = fmaf(dla, lg, dg);
                h->dA[s] = fmaf(dla, lA, h->dA[s]);
                for (int64_t d = 0; d < D; d++)
                    lam[s * D + d] *= a;
            }
            h->dg[t] = dg;
        }
    }
    free(H), free(lam);
    return 0;
}

/* --- chunked, chunk states recomputed ----------------------------------------------------- */

typedef struct chunk_ws {
    float *L;   /* [C+1, S]: L[0] = 0, L[i] after step i of the chunk */
    float *hs;  /* [C+1, S, D]: the chunk's states, hs[0] = H */
    float *lam; /* [C, S, D] */
    float *Hs;  /* [nchunks + 1, S, D]: chunk start states (backward) */
    float *dH;  /* [S, D] */
} chunk_ws;

/* L for the chunk starting at t0 with n steps (log decays summed in fp32). */
static void chunk_logs(const head *h, chunk_ws *w, int64_t t0, int64_t n)
{
    const int64_t S = h->S;
    for (int64_t s = 0; s < S; s++)
        w->L[s] = 0;
    for (int64_t i = 1; i <= n; i++)
        for (int64_t s = 0; s < S; s++)
            w->L[i * S + s] = w->L[(i - 1) * S + s] + log_alpha(h, t0 + i - 1, s, NULL, NULL);
}

/* States h_i of the chunk (i = 1..n) from H = hs[0] by the closed form. */
static void chunk_states(const head *h, chunk_ws *w, int64_t t0, int64_t n)
{
    const int64_t S = h->S, D = h->D, SD = S * D;
    for (int64_t i = 1; i <= n; i++)
        for (int64_t s = 0; s < S; s++) {
            const float Li = w->L[i * S + s];
            const float e0 = expf(Li);
            for (int64_t d = 0; d < D; d++) {
                float acc = e0 * w->hs[s * D + d];
                for (int64_t j = 1; j <= i; j++)
                    acc = fmaf(expf(Li - w->L[j * S + s]) * h->b[(t0 + j - 1) * S + s],
                               h->v[(t0 + j - 1) * D + d], acc);
                w->hs[i * SD + s * D + d] = acc;
            }
        }
}

static int chunk_run(const head *h, int C, int backward)
{
    const int64_t T = h->T, S = h->S, D = h->D, SD = S * D, nck = (T + C - 1) / C;
    chunk_ws w;
    w.L = malloc((size_t)(C + 1) * (size_t)S * sizeof(float));
    w.hs = malloc((size_t)(C + 1) * (size_t)SD * sizeof(float));
    w.lam = malloc((size_t)C * (size_t)SD * sizeof(float));
    w.Hs = calloc((size_t)(nck + 1) * (size_t)SD, sizeof(float));
    w.dH = calloc((size_t)SD, sizeof(float));
    int fail = !w.L || !w.hs || !w.lam || !w.Hs || !w.dH;
    /* forward over chunks: outputs (forward) or the chunk start states (backward) */
    for (int64_t k = 0; !fail && k < nck; k++) {
        const int64_t t0 = k * C, n = T - t0 < C ? T - t0 : C;
        memcpy(w.hs, w.Hs + k * SD, (size_t)SD * sizeof(float));
        chunk_logs(h, &w, t0, n);
        if (!backward)
            for (int64_t i = 1; i <= n; i++)
                for (int64_t d = 0; d < D; d++) {
                    float acc = 0;
                    for (int64_t s = 0; s < S; s++) {
                        const float Li = w.L[i * S + s], ci = h->c[(t0 + i - 1) * S + s];
                        acc = fmaf(ci * expf(Li), w.hs[s * D + d], acc);
                        for (int64_t j = 1; j <= i; j++)
                            acc = fmaf(ci * h->b[(t0 + j - 1) * S + s] * expf(Li - w.L[j * S + s]),
                                       h->v[(t0 + j - 1) * D + d], acc);
                    }
                    h->o[(t0 + i - 1) * D + d] = acc;
                }
        /* the next chunk's start state h_n */
        for (int64_t s = 0; s < S; s++) {
            const float Ln = w.L[n * S + s], e0 = expf(Ln);
            for (int64_t d = 0; d < D; d++) {
                float acc = e0 * w.hs[s * D + d];
                for (int64_t j = 1; j <= n; j++)
                    acc = fmaf(expf(Ln - w.L[j * S + s]) * h->b[(t0 + j - 1) * S + s],
                               h->v[(t0 + j - 1) * D + d], acc);
                w.Hs[(k + 1) * SD + s * D + d] = acc;
            }
        }
    }
    if (!fail && backward) {
        for (int64_t s = 0; s < S; s++)
            h->dA[s] = 0;
        for (int64_t k = nck - 1; k >= 0; k--) {
            const int64_t t0 = k * C, n = T - t0 < C ? T - t0 : C;
            memcpy(w.hs, w.Hs + k * SD, (size_t)SD * sizeof(float));
            chunk_logs(h, &w, t0, n);
            chunk_states(h, &w, t0, n);
            /* lambda_i, i = 1..n, in closed form */
            for (int64_t i = 1; i <= n; i++)
                for (int64_t s = 0; s < S; s++) {
                    const float Li = w.L[i * S + s], eC = expf(w.L[n * S + s] - Li);
                    for (int64_t d = 0; d < D; d++) {
                        float acc = eC * w.dH[s * D + d];
                        for (int64_t j = i; j <= n; j++)
                            acc = fmaf(expf(w.L[j * S + s] - Li) * h->c[(t0 + j - 1) * S + s],
                                       h->dO[(t0 + j - 1) * D + d], acc);
                        w.lam[(i - 1) * SD + s * D + d] = acc;
                    }
                }
            for (int64_t i = 1; i <= n; i++) {
                const int64_t t = t0 + i - 1;
                const float *lam = w.lam + (i - 1) * SD, *cur = w.hs + i * SD,
                            *prev = w.hs + (i - 1) * SD;
                float dg = 0;
                for (int64_t s = 0; s < S; s++) {
                    float dc = 0, db = 0, P = 0;
                    for (int64_t d = 0; d < D; d++) {
                        dc = fmaf(cur[s * D + d], h->dO[t * D + d], dc);
                        db = fmaf(lam[s * D + d], h->v[t * D + d], db);
                        P = fmaf(lam[s * D + d], prev[s * D + d], P);
                    }
                    h->dc[t * S + s] = dc, h->db[t * S + s] = db;
                    float lg, lA;
                    /* alpha_i = exp(L_i - L_{i-1}), as the chunk form has it */
                    log_alpha(h, t, s, &lg, &lA);
                    const float dla = expf(w.L[i * S + s] - w.L[(i - 1) * S + s]) * P;
                    dg = fmaf(dla, lg, dg);
                    h->dA[s] = fmaf(dla, lA, h->dA[s]);
                }
                h->dg[t] = dg;
                for (int64_t d = 0; d < D; d++) {
                    float dv = 0;
                    for (int64_t s = 0; s < S; s++)
                        dv = fmaf(h->b[t * S + s], lam[s * D + d], dv);
                    h->dv[t * D + d] = dv;
                }
            }
            /* dL/dH for the chunk before */
            for (int64_t s = 0; s < S; s++) {
                const float eC = expf(w.L[n * S + s]);
                for (int64_t d = 0; d < D; d++) {
                    float acc = eC * w.dH[s * D + d];
                    for (int64_t j = 1; j <= n; j++)
                        acc = fmaf(expf(w.L[j * S + s]) * h->c[(t0 + j - 1) * S + s],
                                   h->dO[(t0 + j - 1) * D + d], acc);
                    w.dH[s * D + d] = acc;
                }
            }
        }
    }
    free(w.L), free(w.hs), free(w.lam), free(w.Hs), free(w.dH);
    return fail;
}

/* --- driver ------------------------------------------------------------------------------ */

/* [B,T,H,X] tensor -> [B,H,T,X] floats. */
static void gather(float *dst, const ra_tensor *t, int64_t B, int64_t T, int64_t H, int64_t X)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t tt = 0; tt < T; tt++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t x = 0; x < X; x++)
                    dst[((b * H + h) * T + tt) * X + x] =
                        (float)ra_tensor_get(t, ((b * T + tt) * H + h) * X + x);
}

static void scatter(ra_tensor *t, const float *src, int64_t B, int64_t T, int64_t H, int64_t X)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t tt = 0; tt < T; tt++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t x = 0; x < X; x++)
                    ra_tensor_set(t, ((b * T + tt) * H + h) * X + x,
                                  src[((b * H + h) * T + tt) * X + x]);
}

enum { F_V, F_B, F_C, F_G, F_A, F_DO, F_O, F_DV, F_DB, F_DC, F_DG, F_DA, NBUF };

static ra_status glr_run(const ra_cpu_glr_cfg *cfg, const ra_case *c, ra_tensors *out, ra_run *run,
                         int backward)
{
    ra_glr_problem p;
    RA_TRY(ra_glr_problem_init(&p, c, backward ? RA_GLR_NEED_COTANGENTS : 0, "cpu glr"));
    const int64_t B = p.s.B, T = p.s.T, H = p.s.H, S = p.s.S, D = p.s.D;
    const size_t nV = (size_t)(B * T * H * D), nS = (size_t)(B * T * H * S),
                 nG = (size_t)(B * T * H);
    const size_t sizes[NBUF] = {nV, nS, nS, nG, (size_t)(H * S),    nV, nV,
                                nV, nS, nS, nG, (size_t)(B * H * S)};
    float *f[NBUF] = {NULL};
    int fail = 0;
    for (int i = 0; i < NBUF; i++)
        fail |= !(f[i] = calloc(sizes[i] + 1, sizeof(float)));
    if (fail) {
        for (int i = 0; i < NBUF; i++)
            free(f[i]);
        RA_ERROR("cpu glr: out of memory", RA_ENOMEM);
    }
    gather(f[F_V], p.v, B, T, H, D);
    gather(f[F_B], p.b, B, T, H, S);
    gather(f[F_C], p.c, B, T, H, S);
    gather(f[F_G], p.g, B, T, H, 1);
    for (int64_t i = 0; i < H * S; i++)
        f[F_A][i] = (float)ra_tensor_get(p.A_log, i);
    if (backward)
        gather(f[F_DO], p.do_, B, T, H, D);
    int nt = 1;
#ifdef _OPENMP
    nt = run && run->threads > 0 ? run->threads : omp_get_max_threads();
#endif
    (void)nt;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t bh = 0; bh < B * H; bh++) {
        head hd = {.T = T, .S = S, .D = D, .linear = p.decay == RA_GLR_LINEAR};
        hd.v = f[F_V] + bh * T * D, hd.b = f[F_B] + bh * T * S, hd.c = f[F_C] + bh * T * S;
        hd.dO = f[F_DO] + bh * T * D, hd.g = f[F_G] + bh * T, hd.A = f[F_A] + bh % H * S;
        hd.o = f[F_O] + bh * T * D, hd.dv = f[F_DV] + bh * T * D, hd.db = f[F_DB] + bh * T * S;
        hd.dc = f[F_DC] + bh * T * S, hd.dg = f[F_DG] + bh * T, hd.dA = f[F_DA] + bh * S;
        int err = cfg->algo == RA_CPU_GLR_STORE ? store_run(&hd, backward)
                                                : chunk_run(&hd, cfg->chunk, backward);
        if (err) {
#pragma omp atomic write
            fail = 1;
        }
    }
    ra_status st = fail ? RA_ENOMEM : RA_OK;
    if (fail)
        RA_REPORTF(st, "cpu glr: cannot allocate a per-head workspace (T=%lld, S=%lld, D=%lld)",
                   (long long)T, (long long)S, (long long)D);
    ra_tensor *t;
    const int64_t vd[4] = {B, T, H, D}, bs[4] = {B, T, H, S}, gate[3] = {B, T, H}, aa[2] = {H, S};
    if (st == RA_OK && !backward && (st = ra_tensors_new(out, &t, "o", RA_F32, 4, vd)) == RA_OK)
        scatter(t, f[F_O], B, T, H, D);
    if (st == RA_OK && backward && (st = ra_tensors_new(out, &t, "dv", RA_F32, 4, vd)) == RA_OK)
        scatter(t, f[F_DV], B, T, H, D);
    if (st == RA_OK && backward && (st = ra_tensors_new(out, &t, "db", RA_F32, 4, bs)) == RA_OK)
        scatter(t, f[F_DB], B, T, H, S);
    if (st == RA_OK && backward && (st = ra_tensors_new(out, &t, "dc", RA_F32, 4, bs)) == RA_OK)
        scatter(t, f[F_DC], B, T, H, S);
    if (st == RA_OK && backward && (st = ra_tensors_new(out, &t, "dg", RA_F32, 3, gate)) == RA_OK)
        scatter(t, f[F_DG], B, T, H, 1);
    if (st == RA_OK && backward && (st = ra_tensors_new(out, &t, "dA_log", RA_F32, 2, aa)) == RA_OK)
        for (int64_t i = 0; i < H * S; i++) { /* the batch sum, in increasing b */
            float acc = 0;
            for (int64_t b = 0; b < B; b++)
                acc += f[F_DA][b * H * S + i];
            ra_tensor_set(t, i, acc);
        }
    for (int i = 0; i < NBUF; i++)
        free(f[i]);
    return st;
}

static ra_status forward_row(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    return glr_run(self->data, c, out, run, 0);
}

static ra_status backward_row(const ra_variant *self, const ra_case *c, ra_tensors *grads,
                              ra_run *run)
{
    return glr_run(self->data, c, grads, run, 1);
}

#define ROW(name, pclass, cfg, doc)                                                                \
    {                                                                                              \
        name, "glr", doc, RA_CPU, pclass, RA_FWD | RA_BWD, cfg, forward_row, backward_row, NULL    \
    }

const ra_variant ra_cpu_glr_variants[] = {
    ROW("glr.cpu.f32.store", "f32", (&(const ra_cpu_glr_cfg){RA_CPU_GLR_STORE, 0}),
        "sequential recurrence in fp32 (fmaf, expf); the backward stores every h_t (HyMo's "
        "kernel)"),
    ROW("glr.cpu.chunk64.f32.recompute", "ieee", (&(const ra_cpu_glr_cfg){RA_CPU_GLR_CHUNK, 64}),
        "chunked C=64 in fp32, in-chunk cumulative log decay; the backward recomputes chunk "
        "states"),
};

const size_t ra_cpu_glr_nvariants = sizeof ra_cpu_glr_variants / sizeof ra_cpu_glr_variants[0];
