/* Template: the chunked gated delta rule, forward (float or double). */

/*
 * Computes docs/gdn.md's chunked form per (b, hv), chunks of C tokens (the
 * last one may be shorter), with production kernels' rounding points:
 * matmul operands rounded by the configured mode, T, W, U and the
 * chunk-start state stored through st() (cfg->store: bf16 in the bf16
 * configuration, f16 or bf16 on demand),
 * the running state and ht kept in R.  The backward (gdn_tmpl_chunk_bwd.h)
 * reuses chunk_prep and chunk_vprime so that its recomputed T, W, U, V' are
 * bit-identical to the forward's.
 *
 * Faults: TAIL_MASK shortens the partial last chunk by one token;
 * FINAL_STATE_EARLY updates the state with all but the last row of the
 * last chunk; TF32_AS_IEEE is resolved by the driver into the mode.
 * Errors: the only failure is allocation (returns 1).
 *
 * Derivation: docs/gdn-chunked.md §Forward.
 */

#include <stdlib.h>
#include <string.h>

#include "cpu/faults.h"

/* Per-head workspace of the chunked kernels (one allocation). */
typedef struct RN(cws) {
    int64_t C, K, V, D;
    int mode, store, store_state, inv; /* storage of T, W, U and of the chunk states */
    R *G, *gam, *dG;                            /* C */
    R *A, *T, *Dm, *P, *dP, *dT, *Z, *dA;       /* C x C */
    R *Kb, *Y, *W, *dQc, *dKc, *dW, *dY, *tK;   /* C x K */
    R *X, *U, *Vp, *Vd, *QS, *dVp, *dX, *tV;    /* C x V */
    R *S, *Sst, *dS, *dSn, *WtdV;               /* K x V */
    R *inv_scr;
    RN(mmws) mw;
    R *mem;
} RN(cws);

static int RN(cws_init)(RN(cws) *w, int64_t C, int64_t K, int64_t V, int mode, int store,
                        int inv)
{
    int64_t D = RN(inv_pad16)(C);
    if (K > D)
        D = K;
    if (V > D)
        D = V;
    const int64_t n = 3 * C + 8 * C * C + 8 * C * K + 8 * C * V + 5 * K * V +
                      RN(inv_scratch_len)(C) + 4 * D * D;
    w->mem = malloc((size_t)n * sizeof(R));
    if (!w->mem)
        return 1;
    w->C = C, w->K = K, w->V = V, w->D = D;
    /* store packs two ra_cpu_store modes: T, W, U in bits 0-1, the chunk
       states in bits 2-3 (the driver resolves AUTO). */
    w->mode = mode, w->store = store & 3, w->store_state = store >> 2 & 3, w->inv = inv;
    R *p = w->mem;
#define RA_TAKE(ptr, cnt) (ptr = p, p += (cnt))
    RA_TAKE(w->G, C), RA_TAKE(w->gam, C), RA_TAKE(w->dG, C);
    RA_TAKE(w->A, C * C), RA_TAKE(w->T, C * C), RA_TAKE(w->Dm, C * C), RA_TAKE(w->P, C * C);
    RA_TAKE(w->dP, C * C), RA_TAKE(w->dT, C * C), RA_TAKE(w->Z, C * C), RA_TAKE(w->dA, C * C);
    RA_TAKE(w->Kb, C * K), RA_TAKE(w->Y, C * K), RA_TAKE(w->W, C * K), RA_TAKE(w->dQc, C * K);
    RA_TAKE(w->dKc, C * K), RA_TAKE(w->dW, C * K), RA_TAKE(w->dY, C * K), RA_TAKE(w->tK, C * K);
    RA_TAKE(w->X, C * V), RA_TAKE(w->U, C * V), RA_TAKE(w->Vp, C * V), RA_TAKE(w->Vd, C * V);
    RA_TAKE(w->QS, C * V), RA_TAKE(w->dVp, C * V), RA_TAKE(w->dX, C * V), RA_TAKE(w->tV, C * V);
    RA_TAKE(w->S, K * V), RA_TAKE(w->Sst, K * V), RA_TAKE(w->dS, K * V), RA_TAKE(w->dSn, K * V);
    RA_TAKE(w->WtdV, K * V);
    RA_TAKE(w->inv_scr, RN(inv_scratch_len)(C));
    RA_TAKE(w->mw.a, D * D), RA_TAKE(w->mw.b, D * D);
    RA_TAKE(w->mw.as, D * D), RA_TAKE(w->mw.bs, D * D);
#undef RA_TAKE
    return 0;
}

static void RN(cws_free)(RN(cws) *w) { free(w->mem); }

/* Rows in chunk c of nch: C, or the remainder for the last one; the
   TAIL_MASK fault drops the partial last chunk's last token. */
static int64_t RN(chunk_rows)(const RN(head) *h, int64_t C, int64_t c, int64_t nch)
{
    int64_t L = h->T - c * C < C ? h->T - c * C : C;
    if ((h->faults & RA_FAULT_TAIL_MASK) && c == nch - 1 && h->T % C != 0)
        L--;
    return L;
}

/* G, gamma, D, A, T, W, U of the chunk starting at token t0 (L rows). */
static void RN(chunk_prep)(RN(cws) *w, const RN(head) *h, int64_t t0, int64_t L)
{
    const int64_t C = w->C, K = w->K, V = w->V;
    const R *k = h->k + t0 * K, *v = h->v + t0 * V, *g = h->g + t0, *beta = h->beta + t0;
    R run = 0;
    for (int64_t i = 0; i < L; i++) {
        run = run + g[i];
        w->G[i] = run;
        w->gam[i] = R_EXP(run);
    }
    for (int64_t i = 0; i < C; i++)
        for (int64_t j = 0; j < C; j++)
            w->Dm[i * C + j] = (i < L && j <= i) ? R_EXP(w->G[i] - w->G[j]) : 0;
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < K; j++)
            w->Kb[i * K + j] = k[i * K + j] * beta[i];
    RN(mm)(w->A, C, L, L, K, w->Kb, K, 1, k, 1, K, w->mode, 0, &w->mw);
    for (int64_t i = 0; i < C; i++)
        for (int64_t j = 0; j < C; j++)
            w->A[i * C + j] = (i < L && j < i) ? w->A[i * C + j] * w->Dm[i * C + j] : 0;
    RN(inverse)(w->T, w->A, C, w->inv, w->mode, w->inv_scr, &w->mw);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j <= i; j++)
            w->T[i * C + j] = RN(st)(w->T[i * C + j], w->store);
    for (int64_t i = 0; i < L; i++) {
        for (int64_t j = 0; j < K; j++)
            w->Y[i * K + j] = w->Kb[i * K + j] * w->gam[i];
        for (int64_t j = 0; j < V; j++)
            w->X[i * V + j] = v[i * V + j] * beta[i];
    }
    RN(mm)(w->W, K, L, K, L, w->T, C, 1, w->Y, K, 1, w->mode, 0, &w->mw);
    RN(mm)(w->U, V, L, V, L, w->T, C, 1, w->X, V, 1, w->mode, 0, &w->mw);
    for (int64_t i = 0; i < L * K; i++)
        w->W[i] = RN(st)(w->W[i], w->store);
    for (int64_t i = 0; i < L * V; i++)
        w->U[i] = RN(st)(w->U[i], w->store);
}

/* V' = U - W S' with S' = w->Sst. */
static void RN(chunk_vprime)(RN(cws) *w, int64_t L)
{
    const int64_t K = w->K, V = w->V;
    RN(mm)(w->Vp, V, L, V, K, w->W, K, 1, w->Sst, V, 1, w->mode, 0, &w->mw);
    for (int64_t i = 0; i < L * V; i++)
        w->Vp[i] = w->U[i] - w->Vp[i];
}

/* S <- exp(G_{n-1}) S + K^T (exp(G_{n-1} - G) * V') over the first n rows. */
static void RN(chunk_update)(RN(cws) *w, const RN(head) *h, int64_t t0, int64_t n)
{
    const int64_t K = w->K, V = w->V;
    if (n <= 0)
        return;
    const R gl = w->G[n - 1], gC = R_EXP(gl);
    for (int64_t i = 0; i < n; i++) {
        const R d = R_EXP(gl - w->G[i]);
        for (int64_t j = 0; j < V; j++)
            w->Vd[i * V + j] = w->Vp[i * V + j] * d;
    }
    for (int64_t i = 0; i < K * V; i++)
        w->S[i] = w->S[i] * gC;
    RN(mm)(w->S, V, K, V, n, h->k + t0 * K, 1, K, w->Vd, V, 1, w->mode, 1, &w->mw);
}

/* P = (Q K^T) . D on j <= i (zero above). */
static void RN(chunk_p)(RN(cws) *w, const RN(head) *h, int64_t t0, int64_t L)
{
    const int64_t C = w->C, K = w->K;
    RN(mm)(w->P, C, L, L, K, h->q + t0 * K, K, 1, h->k + t0 * K, 1, K, w->mode, 0, &w->mw);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++)
            w->P[i * C + j] = j <= i ? w->P[i * C + j] * w->Dm[i * C + j] : 0;
}

/* O rows of the chunk. */
static void RN(chunk_output)(RN(cws) *w, const RN(head) *h, int64_t t0, int64_t L)
{
    const int64_t C = w->C, K = w->K, V = w->V;
    R *o = h->o + t0 * V;
    RN(mm)(w->QS, V, L, V, K, h->q + t0 * K, K, 1, w->Sst, V, 1, w->mode, 0, &w->mw);
    RN(chunk_p)(w, h, t0, L);
    RN(mm)(o, V, L, V, L, w->P, C, 1, w->Vp, V, 1, w->mode, 0, &w->mw);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < V; j++)
            o[i * V + j] = (w->gam[i] * w->QS[i * V + j]) * h->scale + o[i * V + j] * h->scale;
}

/* The stored chunk-start state; BF16_STATE stores it in bf16 whatever
   the configuration declares (faults of the head). */
static void RN(chunk_store_state)(RN(cws) * w, unsigned faults)
{
    const int store = (faults & RA_FAULT_BF16_STATE) ? RA_CPU_STORE_BF16 : w->store_state;
    for (int64_t i = 0; i < w->K * w->V; i++)
        w->Sst[i] = RN(st)(w->S[i], store);
}

static void RN(chunk_init_state)(RN(cws) *w, const RN(head) *h)
{
    for (int64_t i = 0; i < w->K * w->V; i++)
        w->S[i] = h->h0 ? h->h0[i] : 0;
}

static int RN(chunk_forward)(const RN(head) *h, int64_t C, int mode, int store, int inv)
{
    RN(cws) w;
    if (RN(cws_init)(&w, C, h->K, h->V, mode, store, inv))
        return 1;
    const int64_t nch = (h->T + C - 1) / C;
    RN(chunk_init_state)(&w, h);
    for (int64_t c = 0; c < nch; c++) {
        const int64_t t0 = c * C, L = RN(chunk_rows)(h, C, c, nch);
        if (L <= 0)
            continue;
        RN(chunk_store_state)(&w, h->faults);
        RN(chunk_prep)(&w, h, t0, L);
        RN(chunk_vprime)(&w, L);
        RN(chunk_output)(&w, h, t0, L);
        const int early = (h->faults & RA_FAULT_FINAL_STATE_EARLY) && c == nch - 1;
        RN(chunk_update)(&w, h, t0, early ? L - 1 : L);
    }
    memcpy(h->ht, w.S, (size_t)(h->K * h->V) * sizeof(R));
    RN(cws_free)(&w);
    return 0;
}
