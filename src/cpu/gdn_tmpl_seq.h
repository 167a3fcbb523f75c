/* Template: the sequential gated delta rule and its reverse-time adjoint (float or double). */

/*
 * Forward, per token (docs/gdn.md):
 *     a = exp(g_t);  S~ = a S;  u = beta_t (v_t - S~^T k_t);  S = S~ + k_t u^T;
 *     o_t = S^T (scale q_t)
 * Every sum is one fma chain over the key index in increasing order; exp
 * is the type's libm exp of the stored gate (expf of the float gate in the
 * float variant, what peers' fp32 "naive" references compute).
 *
 * Backward: docs/gdn.md's adjoint, lambda = dL/dS_t carried from t = T down to
 * 1 (dq_t = scale S_t do_t, du = lambda^T k_t, dk_t = lambda u_t - beta
 * S~ du, dbeta_t = du . r_t, dv_t = beta du, dS~ = lambda - beta k_t du^T,
 * dg_t = <dS~, S~>, lambda <- a dS~).  It needs S_{t-1} and S_t at every
 * step: the forward is rerun keeping a checkpoint every `seg` tokens
 * (seg ~ sqrt(T)), and each segment is recomputed forward from its
 * checkpoint into a buffer before it is walked backwards, so memory is
 * O((T/seg + seg) K V) per head and the recomputed states are bit-identical
 * to the forward's (the same code path computes both).  No state is
 * reconstructed by inverting a step, except in the reversal backward
 * (seq_backward_reversal, gdn.cpu.f32.reversal: cfg->rev_span), a study
 * subject whose error grows with its span.
 *
 * Faults (cpu/faults.h): DECAY_AFTER_UPDATE in the step (forward and
 * recomputation; the reversal backward ignores it, since it inverts the
 * correct step), FINAL_STATE_EARLY in the forward's ht, KTILE64 and
 * TF32_OUTPUT in the output, DBETA_TERM, DK_BETA_TERM, DG_BETA_TERM and
 * NO_DHT_LAST in the adjoint step, CKPT256 in the checkpointed backward.  Errors: allocation (returns 1); a singular step in
 * the reversal backward (returns 2).
 */

#include <stdlib.h>
#include <string.h>

#include "cpu/faults.h"

/* One token: S_{t-1} -> S_t in place; u is V scratch. */
static void RN(seq_step)(R *S, const RN(head) *h, int64_t t, R *u, int decay_after)
{
    const int64_t K = h->K, V = h->V;
    const R a = R_EXP(h->g[t]), beta = h->beta[t];
    const R *k = h->k + t * K, *v = h->v + t * V;
    if (!decay_after)
        for (int64_t i = 0; i < K * V; i++)
            S[i] = a * S[i];
    for (int64_t j = 0; j < V; j++)
        u[j] = 0;
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++)
            u[j] = R_FMA(S[i * V + j], k[i], u[j]);
    for (int64_t j = 0; j < V; j++)
        u[j] = beta * (v[j] - u[j]);
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++)
            S[i * V + j] = R_FMA(k[i], u[j], S[i * V + j]);
    if (decay_after)
        for (int64_t i = 0; i < K * V; i++)
            S[i] = a * S[i];
}

/* o_t = S^T (scale q_t) into o; qs is K scratch.  Faults: KTILE64 reads
   the first 64 key rows only; TF32_OUTPUT rounds both operands of the
   product to TF32 (float only). */
static void RN(seq_output)(R *o, const R *S, const RN(head) *h, int64_t t, R *qs)
{
    const int64_t K = h->K, V = h->V;
    const int64_t rows = (h->faults & RA_FAULT_KTILE64) && K > 64 ? 64 : K;
    const int tf32 = !R_IS_F64 && (h->faults & RA_FAULT_TF32_OUTPUT);
    for (int64_t i = 0; i < K; i++)
        qs[i] = h->scale * h->q[t * K + i];
    for (int64_t j = 0; j < V; j++)
        o[j] = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < V; j++)
            o[j] = tf32 ? R_FMA((R)ra_round_tf32_rna((float)S[i * V + j]),
                                (R)ra_round_tf32_rna((float)qs[i]), o[j])
                        : R_FMA(S[i * V + j], qs[i], o[j]);
}

static void RN(seq_init_state)(R *S, const RN(head) *h)
{
    const int64_t n = h->K * h->V;
    if (h->h0)
        memcpy(S, h->h0, (size_t)n * sizeof *S);
    else
        for (int64_t i = 0; i < n; i++)
            S[i] = 0;
}

static int RN(seq_forward)(const RN(head) *h)
{
    const int64_t K = h->K, V = h->V, T = h->T;
    const int decay_after = (h->faults & RA_FAULT_DECAY_AFTER_UPDATE) != 0;
    const int early = (h->faults & RA_FAULT_FINAL_STATE_EARLY) != 0;
    R *S = malloc((size_t)(K * V + V + K) * sizeof *S);
    if (!S)
        return 1;
    R *u = S + K * V, *qs = u + V;
    RN(seq_init_state)(S, h);
    for (int64_t t = 0; t < T; t++) {
        if (early && t == T - 1)
            memcpy(h->ht, S, (size_t)(K * V) * sizeof *S);
        RN(seq_step)(S, h, t, u, decay_after);
        RN(seq_output)(h->o + t * V, S, h, t, qs);
    }
    if (!early)
        memcpy(h->ht, S, (size_t)(K * V) * sizeof *S);
    free(S);
    return 0;
}

/* Segment length for the checkpointed backward: about sqrt(T), at least 16. */
static int64_t RN(seq_segment)(int64_t T)
{
    int64_t s = (int64_t)ceil(sqrt((double)T));
    return s < 16 ? 16 : s;
}

/* Scratch of one adjoint step: four K x V / V arrays. */
typedef struct RN(adj_ws) {
    R *St, *r, *u, *du;
} RN(adj_ws);

/* The adjoint of token t: reads S_{t-1} (Sp) and S_t (Sc), writes the
   token's gradients and carries lambda from dL/dS_t to dL/dS_{t-1}.
   Faults: DBETA_TERM, DK_BETA_TERM, DG_BETA_TERM, NO_DHT_LAST. */
static void RN(seq_adjoint_step)(const RN(head) * h, int64_t t, const R *Sp, const R *Sc, R *lam,
                                 const RN(adj_ws) * w)
{
    const int64_t K = h->K, V = h->V, KV = K * V;
    const int dbeta_fault = (h->faults & RA_FAULT_DBETA_TERM) != 0;
    const int dk_fault = (h->faults & RA_FAULT_DK_BETA_TERM) != 0;
    const int dg_fault = (h->faults & RA_FAULT_DG_BETA_TERM) != 0;
    const int skip_do = (h->faults & RA_FAULT_NO_DHT_LAST) && !h->dht && t == h->T - 1;
    R *St = w->St, *r = w->r, *u = w->u, *du = w->du;
    const R *q = h->q + t * K, *k = h->k + t * K, *v = h->v + t * V, *dout = h->do_ + t * V;
    const R a = R_EXP(h->g[t]), beta = h->beta[t];
    for (int64_t i = 0; i < K && !skip_do; i++) {
        const R qs = h->scale * q[i];
        for (int64_t j = 0; j < V; j++)
            lam[i * V + j] = R_FMA(qs, dout[j], lam[i * V + j]);
    }
    for (int64_t i = 0; i < K; i++)
        h->dq[t * K + i] = h->scale * RN(dot)(Sc + i * V, dout, V);
    for (int64_t i = 0; i < KV; i++)
        St[i] = a * Sp[i];
    for (int64_t j = 0; j < V; j++)
        u[j] = 0, du[j] = 0;
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++) {
            u[j] = R_FMA(St[i * V + j], k[i], u[j]);
            du[j] = R_FMA(lam[i * V + j], k[i], du[j]);
        }
    for (int64_t j = 0; j < V; j++) {
        r[j] = v[j] - u[j];
        u[j] = beta * r[j];
    }
    for (int64_t i = 0; i < K; i++)
        h->dk[t * K + i] = dk_fault ? RN(dot)(lam + i * V, u, V)
                                    : RN(dot)(lam + i * V, u, V) -
                                          beta * RN(dot)(St + i * V, du, V);
    if (dg_fault)
        h->dg[t] = RN(dot)(lam, St, KV);
    h->dbeta[t] = RN(dot)(du, dbeta_fault ? v : r, V);
    for (int64_t j = 0; j < V; j++)
        h->dv[t * V + j] = beta * du[j];
    for (int64_t i = 0; i < K; i++) {
        const R bk = -beta * k[i];
        for (int64_t j = 0; j < V; j++)
            lam[i * V + j] = R_FMA(bk, du[j], lam[i * V + j]);
    }
    if (!dg_fault)
        h->dg[t] = RN(dot)(lam, St, KV);
    for (int64_t i = 0; i < KV; i++)
        lam[i] = a * lam[i];
}

static int RN(seq_backward)(const RN(head) * h)
{
    const int64_t K = h->K, V = h->V, T = h->T, KV = K * V;
    const int decay_after = (h->faults & RA_FAULT_DECAY_AFTER_UPDATE) != 0;
    const int64_t seg = RN(seq_segment)(T), nseg = (T + seg - 1) / seg;
    /* CKPT256: checkpoints in floor(256 / seg) slots, slot s mod that */
    const int64_t nslot = (h->faults & RA_FAULT_CKPT256) && 256 / seg < nseg ? 256 / seg : nseg;
    R *mem = malloc((size_t)((nseg + seg + 3) * KV + 4 * V) * sizeof *mem);
    if (!mem)
        return 1;
    R *ckpt = mem, *buf = ckpt + nseg * KV, *lam = buf + (seg + 1) * KV, *St = lam + KV;
    R *r = St + KV, *u = r + V, *du = u + V, *tmp = du + V;
    const RN(adj_ws) w = {St, r, u, du};

    R *S = buf; /* the forward pass to the checkpoints runs in buf[0] */
    RN(seq_init_state)(S, h);
    for (int64_t s = 0; s < nseg; s++) {
        memcpy(ckpt + s % nslot * KV, S, (size_t)KV * sizeof *S);
        for (int64_t t = s * seg; t < T && t < (s + 1) * seg; t++)
            RN(seq_step)(S, h, t, tmp, decay_after);
    }

    for (int64_t i = 0; i < KV; i++)
        lam[i] = h->dht ? h->dht[i] : 0;
    for (int64_t s = nseg - 1; s >= 0; s--) {
        const int64_t t0 = s * seg, t1 = (t0 + seg < T) ? t0 + seg : T;
        memcpy(buf, ckpt + s % nslot * KV, (size_t)KV * sizeof *buf);
        for (int64_t t = t0; t < t1; t++) {
            memcpy(buf + (t - t0 + 1) * KV, buf + (t - t0) * KV, (size_t)KV * sizeof *buf);
            RN(seq_step)(buf + (t - t0 + 1) * KV, h, t, tmp, decay_after);
        }
        for (int64_t t = t1 - 1; t >= t0; t--)
            RN(seq_adjoint_step)
            (h, t, buf + (t - t0) * KV, buf + (t - t0 + 1) * KV, lam, &w);
    }
    if (h->dh0)
        memcpy(h->dh0, lam, (size_t)KV * sizeof *lam);
    free(mem);
    return 0;
}

/* Inverts token t in place: S_t -> S_{t-1}.  The step is
   S_t = (I - beta k k^T) a S_{t-1} + beta k v^T, so with X = S_t - beta k v^T,
   w = X^T k and Sherman-Morrison, a S_{t-1} = X + beta/(1 - beta |k|^2) k w^T.
   Returns 2 when the step is singular (a = 0 in R, or beta |k|^2 = 1). */
static int RN(seq_unstep)(R *S, const RN(head) * h, int64_t t, R *w)
{
    const int64_t K = h->K, V = h->V;
    const R a = R_EXP(h->g[t]), beta = h->beta[t];
    const R *k = h->k + t * K, *v = h->v + t * V;
    const R den = 1 - beta * RN(dot)(k, k, K);
    if (a == 0 || den == 0)
        return 2;
    for (int64_t i = 0; i < K; i++) {
        const R bk = -beta * k[i];
        for (int64_t j = 0; j < V; j++)
            S[i * V + j] = R_FMA(bk, v[j], S[i * V + j]);
    }
    for (int64_t j = 0; j < V; j++)
        w[j] = 0;
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < V; j++)
            w[j] = R_FMA(S[i * V + j], k[i], w[j]);
    const R c = beta / den;
    for (int64_t i = 0; i < K; i++) {
        const R ck = c * k[i];
        for (int64_t j = 0; j < V; j++)
            S[i * V + j] = R_FMA(ck, w[j], S[i * V + j]) / a;
    }
    return 0;
}

/* The reversal backward: a state is kept every `span` tokens (and the
   final one); every other S_t is recovered from S_{t+1} by inverting token
   t, walking back at most span - 1 steps from a kept state.  Each inverted
   step multiplies an error by up to 1 / (a min(1, |1 - beta |k|^2|)), so
   the error grows exponentially in the span (the reversal study
   measures it).  Returns 1 on allocation failure, 2 on a singular step. */
static int RN(seq_backward_reversal)(const RN(head) * h, int64_t span)
{
    const int64_t K = h->K, V = h->V, T = h->T, KV = K * V, ncp = T / span + 1;
    R *mem = malloc((size_t)((ncp + 4) * KV + 4 * V) * sizeof *mem);
    if (!mem)
        return 1;
    R *ckpt = mem, *Sc = ckpt + ncp * KV, *Sp = Sc + KV, *lam = Sp + KV, *St = lam + KV;
    R *r = St + KV, *u = r + V, *du = u + V, *tmp = du + V;
    const RN(adj_ws) w = {St, r, u, du};
    RN(seq_init_state)(Sc, h);
    for (int64_t t = 0; t < T; t++) {
        if (t % span == 0)
            memcpy(ckpt + t / span * KV, Sc, (size_t)KV * sizeof *Sc);
        RN(seq_step)(Sc, h, t, tmp, 0);
    }
    for (int64_t i = 0; i < KV; i++)
        lam[i] = h->dht ? h->dht[i] : 0;
    int err = 0;
    for (int64_t t = T - 1; t >= 0 && !err; t--) {
        if (t % span == 0) {
            memcpy(Sp, ckpt + t / span * KV, (size_t)KV * sizeof *Sp);
        } else {
            memcpy(Sp, Sc, (size_t)KV * sizeof *Sp);
            err = RN(seq_unstep)(Sp, h, t, tmp);
        }
        if (!err)
            RN(seq_adjoint_step)(h, t, Sp, Sc, lam, &w);
        R *x = Sc;
        Sc = Sp, Sp = x;
    }
    if (!err && h->dh0)
        memcpy(h->dh0, lam, (size_t)KV * sizeof *lam);
    free(mem);
    return err;
}
