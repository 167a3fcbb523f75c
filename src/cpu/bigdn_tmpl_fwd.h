/* Template: bigdn CPU forward (prologue, phases A, B, C) and the shared per-head workspace. */

/*
 * Included by bigdn_f32.c and bigdn_f64.c after gdn_tmpl_linalg.h, with
 *   R, RN(x), R_FMA, R_SQRT, R_IS_F64   as for the gdn templates
 *   API(x)   the exported name of entry point x (x itself in float,
 *            x_f64 in double).
 * One head (b, h) is worked on in frame-major arrays [F*S, D] (row
 * f*S + s), gathered from the strided inputs; the D x D per-frame
 * matrices are [F, D, D].  See bigdn_f32.h for the phases and the
 * rounding points; the order of every sum is fixed here (products: index
 * order, one fma per term; vector reductions: token order), so a head's
 * result does not depend on the thread that computes it.
 */

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Per-thread working arrays of one head (one allocation, carved). */
typedef struct RN(bdws) {
    int64_t F, S, D, N;
    int mode;               /* ra_cpu_round of every product's operands */
    int store;              /* ra_cpu_store of the bridges and A: bf16 in P2 */
    R *Q, *K, *Qr, *Kr, *V; /* [N, D] */
    R *beta, *g;            /* [N], [F] */
    R *E, *Ez, *A, *M, *Mr; /* [F, D, D]: I - P, I - Pz, A, M_f, M'_f */
    R *Bz, *z, *zr;         /* [F, D] */
    R *num, *den;           /* [N, D], [N] */
    R *t1, *t2, *t3;        /* [S, D] scratch */
    R *m1, *m2, *m3;        /* [D, D] scratch */
    R *v1, *v2;             /* [D] scratch */
    /* backward only (NULL in a forward workspace) */
    R *dnum, *dden;              /* [N, D], [N] */
    R *dQ, *dK, *dQr, *dKr, *dV; /* [N, D] */
    R *dbeta, *dg;               /* [N], [F] */
    R *Lf, *Lr;                  /* [F, D, D] adjoints of M, M' */
    R *lzf, *lzr;                /* [F, D] adjoints of z, z' */
    RN(mmws) mw;
    R *block;
} RN(bdws);

static void RN(ws_free)(RN(bdws) * w)
{
    free(w->block);
    w->block = NULL;
}

/* Allocates the arrays for one head (bwd: also the backward's); runs in
   a parallel region, so it reports nothing.  Sizes were checked against
   overflow by check_dims. */
static ra_status RN(ws_init)(RN(bdws) * w, const ra_bigdn_dims *d, ra_bigdn_prec p, int bwd)
{
    memset(w, 0, sizeof *w);
    const int64_t F = d->F, S = d->S, D = d->D, N = F * S, DD = D * D;
    const int64_t SD = S * D, mmb = (S > D ? S : D) * D;
    w->F = F, w->S = S, w->D = D, w->N = N;
    w->mode = p == RA_BIGDN_P1   ? RA_CPU_ROUND_TF32
              : p == RA_BIGDN_P2 ? RA_CPU_ROUND_BF16
                                 : RA_CPU_ROUND_IEEE;
    w->store = d->store ? d->store : p == RA_BIGDN_P2 ? RA_CPU_STORE_BF16 : RA_CPU_STORE_F32;
    int64_t total =
        6 * N * D + N + F + 5 * F * DD + 3 * F * D + N + 3 * SD + 3 * DD + 2 * D + 2 * mmb;
    if (bwd)
        total += 6 * N * D + 2 * N + F + 2 * F * DD + 2 * F * D;
    R *b = malloc((size_t)total * sizeof(R));
    if (!b)
        return RA_ENOMEM; /* reported once by run_heads */
    w->block = b;
#define TAKE(ptr, n) (ptr = b, b += (n))
    TAKE(w->Q, N * D), TAKE(w->K, N * D), TAKE(w->Qr, N * D), TAKE(w->Kr, N * D);
    TAKE(w->V, N * D), TAKE(w->num, N * D), TAKE(w->beta, N), TAKE(w->g, F);
    TAKE(w->E, F * DD), TAKE(w->Ez, F * DD), TAKE(w->A, F * DD), TAKE(w->M, F * DD);
    TAKE(w->Mr, F * DD), TAKE(w->Bz, F * D), TAKE(w->z, F * D), TAKE(w->zr, F * D);
    TAKE(w->den, N), TAKE(w->t1, SD), TAKE(w->t2, SD), TAKE(w->t3, SD);
    TAKE(w->m1, DD), TAKE(w->m2, DD), TAKE(w->m3, DD), TAKE(w->v1, D), TAKE(w->v2, D);
    TAKE(w->mw.a, mmb), TAKE(w->mw.b, mmb);
    if (bwd) {
        TAKE(w->dnum, N * D), TAKE(w->dQ, N * D), TAKE(w->dK, N * D), TAKE(w->dQr, N * D);
        TAKE(w->dKr, N * D), TAKE(w->dV, N * D), TAKE(w->dden, N), TAKE(w->dbeta, N);
        TAKE(w->dg, F), TAKE(w->Lf, F * DD), TAKE(w->Lr, F * DD), TAKE(w->lzf, F * D);
        TAKE(w->lzr, F * D);
    }
#undef TAKE
    return RA_OK;
}

/* c = a M, a product of the workspace's mode (shorthands for the strides
   used below: x [rows, D] row-major; T marks a transposed operand). */
#define MM(c, ldc, m, n, kc, a, ars, acs, b_, brs, bcs, acc)                                       \
    RN(mm)                                                                                         \
    ((c), (ldc), (m), (n), (kc), (a), (ars), (acs), (b_), (brs), (bcs), w->mode, (acc), &w->mw)

/* --- argument checks --------------------------------------------------------------------- */

static ra_status RN(check_dims)(const char *op, const ra_bigdn_dims *d, ra_bigdn_prec p, int full)
{
    if (!d)
        RA_ERRORF(RA_EINVAL, "cpu %s: no dimensions", op);
    const int64_t v[5] = {d->B, d->F, d->S, d->H, d->D};
    const char *nm[5] = {"B", "F", "S", "H", "D"};
    for (int i = 0; i < 5; i++)
        if (v[i] < 1)
            RA_ERRORF(RA_EINVAL, "cpu %s: %s = %lld must be at least 1", op, nm[i],
                      (long long)v[i]);
    if ((unsigned)p > RA_BIGDN_P2)
        RA_ERRORF(RA_EINVAL, "cpu %s: unknown precision mode %d", op, (int)p);
    if (R_IS_F64 && p != RA_BIGDN_P0)
        RA_ERRORF(RA_EINVAL, "cpu %s: the double instance has only mode P0", op);
    if (d->store != 0 && d->store != RA_CPU_STORE_F32 && d->store != RA_CPU_STORE_BF16 &&
        d->store != RA_CPU_STORE_F16)
        RA_ERRORF(RA_EINVAL, "cpu %s: unknown storage %d", op, d->store);
    if (full && d->D % 2)
        RA_ERRORF(RA_EINVAL, "cpu %s: D = %lld is odd (RoPE rotates the pairs d, d^1)", op,
                  (long long)d->D);
    if (!isfinite(d->eps) || d->eps < 0)
        RA_ERRORF(RA_EINVAL, "cpu %s: eps = %g must be finite and >= 0", op, (double)d->eps);
    if (full && (!isfinite(d->norm_eps) || d->norm_eps < 0))
        RA_ERRORF(RA_EINVAL, "cpu %s: norm_eps = %g must be finite and >= 0", op,
                  (double)d->norm_eps);
    if (full && !isfinite(d->k_scale))
        RA_ERRORF(RA_EINVAL, "cpu %s: k_scale = %g is not finite", op, (double)d->k_scale);
    /* Largest counts formed: 3 B N H D (qkv) and a head's workspace, under
       20 N D + 10 F D D values; 64 times each must still fit in bytes. */
    int64_t n = 3, t;
    for (int i = 0; i < 5; i++)
        if (__builtin_mul_overflow(n, v[i], &n))
            RA_ERRORF(RA_EOVERFLOW, "cpu %s: sizes overflow", op);
    if (__builtin_mul_overflow(d->D, d->D, &t) || __builtin_mul_overflow(t, d->F, &t) ||
        t > (int64_t)(SIZE_MAX / sizeof(R) / 64) || n > (int64_t)(SIZE_MAX / sizeof(R) / 64))
        RA_ERRORF(RA_EOVERFLOW, "cpu %s: sizes overflow", op);
    return RA_OK;
}

/* Refuses a NULL array or a non-finite element, naming the tensor and the
   flat index. */
static ra_status RN(check_in)(const char *op, const char *name, const R *x, int64_t n)
{
    if (!x)
        RA_ERRORF(RA_EINVAL, "cpu %s: %s is NULL", op, name);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            RA_ERRORF(RA_EINVAL, "cpu %s: %s[%lld] = %g is not finite", op, name, (long long)i,
                      (double)x[i]);
    return RA_OK;
}

static ra_status RN(check_out)(const char *op, const char *name, const R *x)
{
    if (!x)
        RA_ERRORF(RA_EINVAL, "cpu %s: output %s is NULL", op, name);
    return RA_OK;
}

/* --- prologue: full-channel RMSNorm, ReLU, k_scale, RoPE ------------------------------------ */

/* inv[b*N + n] = (sum_c x^2 / C + norm_eps)^-1/2 for q (which = 0) or k
   (which = 1): the sum in channel order, as one fp32 reduction. */
static void RN(token_inv)(R *inv, const ra_bigdn_dims *d, const R *qkv, int which)
{
    const int64_t N = d->F * d->S, C = d->H * d->D, BN = d->B * N;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < BN; t++) {
        const R *x = qkv + (t * 3 + which) * C;
        R s = 0;
        for (int64_t c = 0; c < C; c++)
            s = R_FMA(x[c], x[c], s);
        inv[t] = 1 / R_SQRT(s / (R)C + (R)d->norm_eps);
    }
}

/* y[n, d] = x[n, d] cos[n, d] + x[n, d^1] sin[n, d] (sin carries its sign). */
static void RN(rope)(R *y, const R *x, const R *cs, const R *sn, int64_t N, int64_t D)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t e = 0; e < D; e++)
            y[n * D + e] = x[n * D + e] * cs[n * D + e] + x[n * D + (e ^ 1)] * sn[n * D + e];
}

/* Q, K, Qr, Kr, V of head (b, h) from qkv and the token inverses. */
static void RN(prologue)(RN(bdws) * w, const ra_bigdn_dims *d, int64_t b, int64_t h, const R *qkv,
                         const R *qinv, const R *kinv, const R *qw, const R *kw, const R *cs,
                         const R *sn)
{
    const int64_t N = w->N, D = w->D, H = d->H, C = H * D;
    const R ks = (R)d->k_scale;
    for (int64_t n = 0; n < N; n++) {
        const R *row = qkv + (b * N + n) * 3 * C + h * D;
        const R qi = qinv[b * N + n], ki = kinv[b * N + n];
        for (int64_t e = 0; e < D; e++) {
            const R qn = row[e] * qi * qw[h * D + e], kn = row[C + e] * ki * kw[h * D + e];
            w->Q[n * D + e] = qn > 0 ? qn : 0;
            w->K[n * D + e] = (kn > 0 ? kn : 0) * ks;
            w->V[n * D + e] = row[2 * C + e];
        }
    }
    RN(rope)(w->Qr, w->Q, cs, sn, N, D);
    RN(rope)(w->Kr, w->K, cs, sn, N, D);
}

/* Head (b, h) of an [B, N, H, D] array into / out of [N, D]. */
static void RN(gather)(R *dst, const R *src, const ra_bigdn_dims *d, int64_t b, int64_t h)
{
    const int64_t N = d->F * d->S, H = d->H, D = d->D;
    for (int64_t n = 0; n < N; n++)
        memcpy(dst + n * D, src + ((b * N + n) * H + h) * D, (size_t)D * sizeof(R));
}

static void RN(scatter)(R *dst, const R *src, const ra_bigdn_dims *d, int64_t b, int64_t h)
{
    const int64_t N = d->F * d->S, H = d->H, D = d->D;
    for (int64_t n = 0; n < N; n++)
        memcpy(dst + ((b * N + n) * H + h) * D, src + n * D, (size_t)D * sizeof(R));
}

/* beta [B,H,F,S] and decay [B,H,F] of head (b, h). */
static void RN(gather_gates)(RN(bdws) * w, const ra_bigdn_dims *d, int64_t b, int64_t h,
                             const R *beta, const R *decay)
{
    memcpy(w->beta, beta + (b * d->H + h) * w->N, (size_t)w->N * sizeof(R));
    memcpy(w->g, decay + (b * d->H + h) * w->F, (size_t)w->F * sizeof(R));
}

/* --- phase A: per-frame P, A, Pz, Bz ------------------------------------------------------- */

/* x <- I - x, then stored (bf16 in P2). */
static void RN(bridge)(R *x, int64_t D, int store)
{
    for (int64_t i = 0; i < D; i++)
        for (int64_t j = 0; j < D; j++)
            x[i * D + j] = RN(st)((i == j ? 1 : 0) - x[i * D + j], store);
}

static void RN(phase_a)(RN(bdws) * w)
{
    const int64_t S = w->S, D = w->D, DD = D * D;
    R *kb = w->t1;
    for (int64_t f = 0; f < w->F; f++) {
        const R *Kr = w->Kr + f * S * D, *K = w->K + f * S * D, *V = w->V + f * S * D;
        const R *be = w->beta + f * S;
        R *E = w->E + f * DD, *Ez = w->Ez + f * DD, *A = w->A + f * DD, *Bz = w->Bz + f * D;
        /* beta enters as a row scaling of the left operand, diag(beta) Kr. */
        for (int64_t s = 0; s < S; s++)
            for (int64_t e = 0; e < D; e++)
                kb[s * D + e] = be[s] * Kr[s * D + e];
        MM(E, D, D, D, S, kb, 1, D, Kr, D, 1, 0); /* P = (diag(beta) Kr)^T Kr */
        RN(bridge)(E, D, w->store);
        MM(A, D, D, D, S, kb, 1, D, V, D, 1, 0); /* A = (diag(beta) Kr)^T V */
        for (int64_t i = 0; i < DD; i++)
            A[i] = RN(st)(A[i], w->store);
        for (int64_t s = 0; s < S; s++)
            for (int64_t e = 0; e < D; e++)
                kb[s * D + e] = be[s] * K[s * D + e];
        MM(Ez, D, D, D, S, kb, 1, D, K, D, 1, 0); /* Pz */
        RN(bridge)(Ez, D, w->store);
        for (int64_t e = 0; e < D; e++) { /* Bz = K^T beta, in token order */
            R s_ = 0;
            for (int64_t s = 0; s < S; s++)
                s_ += kb[s * D + e];
            Bz[e] = s_;
        }
    }
}

/* --- phase B: the two frame scans ---------------------------------------------------------- */

/* x = g * t + a, element-wise over n values (the seed's g * (bridge @ state) + A). */
static void RN(gaxpy)(R *x, R g, const R *t, const R *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = g * t[i] + a[i];
}

static void RN(phase_b)(RN(bdws) * w)
{
    const int64_t F = w->F, D = w->D, DD = D * D;
    /* Forward stream: M_f = g_f (I - P_f) M_{f-1} + A_f from M_{-1} = 0. */
    memcpy(w->M, w->A, (size_t)DD * sizeof(R));
    memcpy(w->z, w->Bz, (size_t)D * sizeof(R));
    for (int64_t f = 1; f < F; f++) {
        MM(w->m1, D, D, D, D, w->E + f * DD, D, 1, w->M + (f - 1) * DD, D, 1, 0);
        RN(gaxpy)(w->M + f * DD, w->g[f], w->m1, w->A + f * DD, DD);
        MM(w->v1, 1, D, 1, D, w->Ez + f * DD, D, 1, w->z + (f - 1) * D, 1, 0, 0);
        RN(gaxpy)(w->z + f * D, w->g[f], w->v1, w->Bz + f * D, D);
    }
    /* Reverse stream: M'_f = g_{f+1} (I - P_{f+1}) M'_{f+1} + A_{f+1}, M'_{F-1} = 0. */
    memset(w->Mr + (F - 1) * DD, 0, (size_t)DD * sizeof(R));
    memset(w->zr + (F - 1) * D, 0, (size_t)D * sizeof(R));
    for (int64_t f = F - 2; f >= 0; f--) {
        MM(w->m1, D, D, D, D, w->E + (f + 1) * DD, D, 1, w->Mr + (f + 1) * DD, D, 1, 0);
        RN(gaxpy)(w->Mr + f * DD, w->g[f + 1], w->m1, w->A + (f + 1) * DD, DD);
        MM(w->v1, 1, D, 1, D, w->Ez + (f + 1) * DD, D, 1, w->zr + (f + 1) * D, 1, 0, 0);
        RN(gaxpy)(w->zr + f * D, w->g[f + 1], w->v1, w->Bz + (f + 1) * D, D);
    }
}

/* --- phase C: num, den ---------------------------------------------------------------------- */

static void RN(phase_c)(RN(bdws) * w)
{
    const int64_t S = w->S, D = w->D, DD = D * D;
    for (int64_t f = 0; f < w->F; f++) {
        R *num = w->num + f * S * D, *den = w->den + f * S;
        const R *Qr = w->Qr + f * S * D, *Q = w->Q + f * S * D;
        /* One pass per direction, the second accumulating (the seed's
           phase_c(..., accumulate=True)). */
        MM(num, D, S, D, D, Qr, D, 1, w->M + f * DD, D, 1, 0);
        MM(num, D, S, D, D, Qr, D, 1, w->Mr + f * DD, D, 1, 1);
        MM(den, 1, S, 1, D, Q, D, 1, w->z + f * D, 1, 0, 0);
        MM(den, 1, S, 1, D, Q, D, 1, w->zr + f * D, 1, 0, 1);
    }
}

/* Phases A, B, C of the head in w (inputs gathered). */
static void RN(head_fwd)(RN(bdws) * w)
{
    RN(phase_a)(w);
    RN(phase_b)(w);
    RN(phase_c)(w);
}

/* out = num / (den + eps) of head (b, h) into [B,N,H,D]. */
static void RN(head_out)(const RN(bdws) * w, R *out, const ra_bigdn_dims *d, int64_t b, int64_t h)
{
    const int64_t N = w->N, D = w->D, H = d->H;
    for (int64_t n = 0; n < N; n++) {
        const R de = w->den[n] + (R)d->eps;
        R *o = out + ((b * N + n) * H + h) * D;
        for (int64_t e = 0; e < D; e++)
            o[e] = w->num[n * D + e] / de;
    }
}

/* --- running the heads ----------------------------------------------------------------------- */

/* Everything a head needs: the inputs of either operation and the
   outputs (absent ones NULL). */
typedef struct RN(bdctx) {
    const ra_bigdn_dims *d;
    const R *qkv, *qinv, *kinv, *qw, *kw, *cs, *sn; /* bigdn */
    const R *Q, *K, *Qr, *Kr, *V;                   /* bigdn.core */
    const R *beta, *decay, *dout;
    R *out, *dqkv, *dQ, *dK, *dQr, *dKr, *dV, *dbeta, *ddecay;
} RN(bdctx);

typedef void RN(head_fn)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x);

/* Runs fn on every head (b, h), in parallel, each thread with its own
   workspace.  An allocation failure is reported once, after the loop. */
static ra_status RN(run_heads)(const char *op, const RN(bdctx) * x, ra_bigdn_prec p, int bwd,
                               RN(head_fn) * fn)
{
    const ra_bigdn_dims *d = x->d;
    const int64_t BH = d->B * d->H;
    int failed = 0;
#pragma omp parallel
    {
        RN(bdws) w;
        const ra_status my = RN(ws_init)(&w, d, p, bwd);
        if (my != RA_OK) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t bh = 0; bh < BH; bh++)
            if (my == RA_OK)
                fn(&w, bh / d->H, bh % d->H, x);
        RN(ws_free)(&w);
    }
    if (failed)
        RA_ERRORF(RA_ENOMEM, "cpu %s: cannot allocate the working arrays of a head", op);
    return RA_OK;
}

/* Gathers head (b, h) of the full operation: prologue and gates. */
static void RN(load_full)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x)
{
    RN(prologue)(w, x->d, b, h, x->qkv, x->qinv, x->kinv, x->qw, x->kw, x->cs, x->sn);
    RN(gather_gates)(w, x->d, b, h, x->beta, x->decay);
}

static void RN(load_core)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x)
{
    RN(gather)(w->Q, x->Q, x->d, b, h);
    RN(gather)(w->K, x->K, x->d, b, h);
    RN(gather)(w->Qr, x->Qr, x->d, b, h);
    RN(gather)(w->Kr, x->Kr, x->d, b, h);
    RN(gather)(w->V, x->V, x->d, b, h);
    RN(gather_gates)(w, x->d, b, h, x->beta, x->decay);
}

static void RN(fwd_full)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x)
{
    RN(load_full)(w, b, h, x);
    RN(head_fwd)(w);
    RN(head_out)(w, x->out, x->d, b, h);
}

static void RN(fwd_core)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x)
{
    RN(load_core)(w, b, h, x);
    RN(head_fwd)(w);
    RN(head_out)(w, x->out, x->d, b, h);
}

/* Checks the full operation's inputs; allocates and fills the token norms
   (*inv: [2, B, N], q then k; the caller frees it). */
static ra_status RN(full_setup)(RN(bdctx) * x, R **inv, const char *op, const ra_bigdn_dims *d,
                                ra_bigdn_prec p, const R *qkv, const R *beta, const R *decay,
                                const R *q_norm_w, const R *k_norm_w, const R *rope_cos,
                                const R *rope_sin)
{
    RA_TRY(RN(check_dims)(op, d, p, 1));
    const int64_t N = d->F * d->S, C = d->H * d->D;
    RA_TRY(RN(check_in)(op, "qkv", qkv, d->B * N * 3 * C));
    RA_TRY(RN(check_in)(op, "beta", beta, d->B * d->H * N));
    RA_TRY(RN(check_in)(op, "decay", decay, d->B * d->H * d->F));
    RA_TRY(RN(check_in)(op, "q_norm_w", q_norm_w, C));
    RA_TRY(RN(check_in)(op, "k_norm_w", k_norm_w, C));
    RA_TRY(RN(check_in)(op, "rope_cos", rope_cos, N * d->D));
    RA_TRY(RN(check_in)(op, "rope_sin", rope_sin, N * d->D));
    *inv = malloc((size_t)(2 * d->B * N) * sizeof(R));
    if (!*inv)
        RA_ERRORF(RA_ENOMEM, "cpu %s: cannot allocate the token norms", op);
    memset(x, 0, sizeof *x);
    x->d = d, x->qkv = qkv, x->qinv = *inv, x->kinv = *inv + d->B * N;
    x->qw = q_norm_w, x->kw = k_norm_w, x->cs = rope_cos, x->sn = rope_sin;
    x->beta = beta, x->decay = decay;
    RN(token_inv)(*inv, d, qkv, 0);
    RN(token_inv)(*inv + d->B * N, d, qkv, 1);
    return RA_OK;
}

static ra_status RN(core_setup)(RN(bdctx) * x, const char *op, const ra_bigdn_dims *d,
                                ra_bigdn_prec p, const R *Q, const R *K, const R *Qr, const R *Kr,
                                const R *V, const R *beta, const R *decay)
{
    RA_TRY(RN(check_dims)(op, d, p, 0));
    const int64_t n = d->B * d->F * d->S * d->H * d->D;
    RA_TRY(RN(check_in)(op, "Q", Q, n));
    RA_TRY(RN(check_in)(op, "K", K, n));
    RA_TRY(RN(check_in)(op, "Qr", Qr, n));
    RA_TRY(RN(check_in)(op, "Kr", Kr, n));
    RA_TRY(RN(check_in)(op, "V", V, n));
    RA_TRY(RN(check_in)(op, "beta", beta, d->B * d->H * d->F * d->S));
    RA_TRY(RN(check_in)(op, "decay", decay, d->B * d->H * d->F));
    memset(x, 0, sizeof *x);
    x->d = d, x->Q = Q, x->K = K, x->Qr = Qr, x->Kr = Kr, x->V = V;
    x->beta = beta, x->decay = decay;
    return RA_OK;
}

/* --- forward entry points ------------------------------------------------------------------- */

ra_status API(ra_cpu_bigdn_forward)(const ra_bigdn_dims *d, ra_bigdn_prec p, const R *qkv,
                                    const R *beta, const R *decay, const R *q_norm_w,
                                    const R *k_norm_w, const R *rope_cos, const R *rope_sin, R *out)
{
    const char *op = "bigdn";
    RN(bdctx) x;
    R *inv = NULL;
    RA_TRY(RN(check_out)(op, "out", out));
    RA_TRY(RN(full_setup)(&x, &inv, op, d, p, qkv, beta, decay, q_norm_w, k_norm_w, rope_cos,
                          rope_sin));
    x.out = out;
    const ra_status st = RN(run_heads)(op, &x, p, 0, RN(fwd_full));
    free(inv);
    return st;
}

ra_status API(ra_cpu_bigdn_core_forward)(const ra_bigdn_dims *d, ra_bigdn_prec p, const R *Q,
                                         const R *K, const R *Qr, const R *Kr, const R *V,
                                         const R *beta, const R *decay, R *out)
{
    const char *op = "bigdn.core";
    RN(bdctx) x;
    RA_TRY(RN(check_out)(op, "out", out));
    RA_TRY(RN(core_setup)(&x, op, d, p, Q, K, Qr, Kr, V, beta, decay));
    x.out = out;
    return RN(run_heads)(op, &x, p, 0, RN(fwd_core));
}
