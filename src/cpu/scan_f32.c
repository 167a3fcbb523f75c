/* CPU kernels of the affine scan family in fp32: sequential lanes, three backward strategies. */
#include "cpu/scan_variants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/scan_case.h"
#include "core/tensor.h"

/*
 * What the seed's Triton kernels do, on the CPU: one lane (b, n) walks T
 * sequentially carrying (Abar, Bbar) in fp32; every k x k product sums
 * its terms in index order in fp32 (no fma: the build uses
 * -ffp-contract=off), and cfg->round rounds both operands of every product
 * first: TF32 (ra_round_tf32_rna), as a tensor-core tl.dot at k >= 16
 * does unless input_precision="ieee"; bf16 (RNE), a bf16 tl.dot; or the
 * 3xTF32 split (input_precision="tf32x3": three TF32 products per term,
 * fp32 accuracy on TF32 tensor cores).  The sums stay fp32.
 *
 * The backward is the reversed scan of SPEC.md section 3; it needs
 * Abar_{t-1}, Bbar_{t-1} at every step and gets them by cfg->bwd:
 *   store      all T states from the forward (its outputs);
 *   recompute  states kept every span steps, each segment re-run forward
 *              (bit-identical to store: same operations, same order);
 *   reversal   states kept every span steps, and in between recovered by
 *              inverting the step, Abar_{t-1} = A_t^-1 Abar_t,
 *              Bbar_{t-1} = A_t^-1 (Bbar_t - B_t) (Gaussian elimination
 *              with partial pivoting in fp32): the error of a recovered
 *              state grows like sigma_min(A)^-(steps walked), up to span-1.
 * scan.log (online max-shifted log-sum-exp, as the seed's kernel):
 *   a*_t = a*_{t-1} + lc_t, z = lv_t - a*_t, (m, s) the running max and
 *   sum of exp(z - m), h_t = exp(a*_t + m + log s); its backward re-runs
 *   that forward for h and takes the linear-space adjoint
 *   G_t = dh_t + exp(lc_{t+1}) G_{t+1}, dlc_t = G_t exp(lc_t) h_{t-1},
 *   dlv_t = G_t exp(lv_t), dlv_0 = exp(lc_1) G_1 h_0.
 * Lanes run one after the other: the cases are the suite's, small.
 */

typedef struct prob {
    ra_scan_shape s;
    float *x[4]; /* in0, in1, cot0, cot1 (NULL: absent) */
} prob;

static void prob_free(prob *p)
{
    for (int i = 0; i < 4; i++)
        free(p->x[i]);
}

static ra_status prob_init(prob *p, const ra_case *c, int need_cot)
{
    memset(p, 0, sizeof *p);
    ra_scan_problem sp;
    RA_TRY(ra_scan_problem_init(&sp, c, need_cot ? RA_SCAN_NEED_COTANGENTS : 0, "case"));
    p->s = sp.s;
    const ra_tensor *src[4] = {sp.in[0], sp.in[1], sp.cot[0], sp.cot[1]};
    for (int i = 0; i < 4; i++) {
        if (!src[i])
            continue;
        p->x[i] = malloc((size_t)src[i]->numel * sizeof(float) + 1);
        if (!p->x[i]) {
            prob_free(p);
            RA_ERROR("out of memory", RA_ENOMEM);
        }
        for (int64_t j = 0; j < src[i]->numel; j++)
            p->x[i][j] = (float)ra_tensor_get(src[i], j);
    }
    return RA_OK;
}

static inline float rnd(int mode, float x)
{
    switch (mode) {
    case RA_CPU_ROUND_TF32:
        return ra_round_tf32_rna(x);
    case RA_CPU_ROUND_BF16:
        return ra_round_bf16_f(x);
    default:
        return x;
    }
}

/* One product term of a k x k product in the operand mode; TF32X3 splits
   each operand into big = tf32(x) and small = tf32(x - big) and sums
   small*big, big*small, big*big in that order (x - big is exact). */
static inline float term(int mode, float x, float a, float b)
{
    if (mode != RA_CPU_ROUND_TF32X3)
        return x + rnd(mode, a) * rnd(mode, b);
    const float ab = ra_round_tf32_rna(a), bb = ra_round_tf32_rna(b);
    const float as = ra_round_tf32_rna(a - ab), bs = ra_round_tf32_rna(b - bb);
    x += as * bb;
    x += ab * bs;
    return x + ab * bb;
}

/* c[i][j] = (acc ? c[i][j] : 0) + sum_p r(a(i,p)) r(b(p,j)), summed in p order */
static void mm(float *c, const float *a, int64_t ars, int64_t acs, const float *b, int64_t brs,
               int64_t bcs, int64_t n, int64_t kd, int64_t m, int acc, int mode)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            float x = 0;
            for (int64_t p = 0; p < kd; p++)
                x = term(mode, x, a[i * ars + p * acs], b[p * brs + j * bcs]);
            c[i * m + j] = acc ? c[i * m + j] + x : x;
        }
}

/* One forward step: Ao = A Ai, Bo = A Bi + B. */
static void step(const prob *p, int mode, int64_t st, const float *Ai, const float *Bi, float *Ao,
                 float *Bo)
{
    const int64_t k = p->s.k, v = p->s.v;
    const float *A = p->x[0] + st * k * k, *B = p->x[1] + st * k * v;
    mm(Ao, A, k, 1, Ai, k, 1, k, k, k, 0, mode);
    mm(Bo, A, k, 1, Bi, v, 1, k, k, v, 0, mode);
    for (int64_t i = 0; i < k * v; i++)
        Bo[i] = Bo[i] + B[i];
}

/* Scratch of one lane: states 0..T (store) or checkpoints, and temporaries. */
typedef struct lane {
    int64_t kk, kv, nst, ncp;          /* ncp: checkpoints before the segment area */
    float *SA, *SB;                    /* states (index = time) */
    float *GA, *GB, *tA, *tB, *dA, *M; /* M: k x (k + k + v) elimination matrix */
    float *cA, *cB;                    /* current recovered state (reversal) */
} lane;

static void lane_free(lane *l) { free(l->SA), free(l->SB), free(l->GA); }

static ra_status lane_init(lane *l, const ra_scan_shape *s, int64_t nst, int64_t ncp)
{
    const int64_t k = s->k, kk = k * k, kv = k * s->v;
    memset(l, 0, sizeof *l);
    l->kk = kk, l->kv = kv, l->nst = nst, l->ncp = ncp;
    l->SA = malloc((size_t)(nst * kk) * sizeof(float));
    l->SB = malloc((size_t)(nst * kv) * sizeof(float));
    l->GA = malloc((size_t)(6 * kk + 3 * kv + k * (2 * k + s->v)) * sizeof(float));
    if (!l->SA || !l->SB || !l->GA) {
        lane_free(l);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    l->tA = l->GA + kk, l->dA = l->tA + kk, l->cA = l->dA + kk;
    l->GB = l->cA + kk, l->tB = l->GB + kv, l->cB = l->tB + kv;
    l->M = l->cB + kv;
    return RA_OK;
}

static void set_identity(float *A, int64_t k, float *B, int64_t kv)
{
    for (int64_t i = 0; i < k * k; i++)
        A[i] = i % (k + 1) == 0;
    memset(B, 0, (size_t)kv * sizeof *B);
}

/* Abar_{t-1}, Bbar_{t-1} from Abar_t, Bbar_t (in cA, cB, overwritten):
   solve A_t [X | Y] = [Abar_t | Bbar_t - B_t]. */
static void reverse_step(lane *l, const prob *p, int64_t st)
{
    const int64_t k = p->s.k, v = p->s.v, w = 2 * k + v;
    const float *A = p->x[0] + st * k * k, *B = p->x[1] + st * k * v;
    float *M = l->M;
    for (int64_t i = 0; i < k; i++) {
        for (int64_t j = 0; j < k; j++)
            M[i * w + j] = A[i * k + j], M[i * w + k + j] = l->cA[i * k + j];
        for (int64_t j = 0; j < v; j++)
            M[i * w + 2 * k + j] = l->cB[i * v + j] - B[i * v + j];
    }
    for (int64_t c = 0; c < k; c++) {
        int64_t piv = c;
        for (int64_t i = c + 1; i < k; i++)
            if (fabsf(M[i * w + c]) > fabsf(M[piv * w + c]))
                piv = i;
        for (int64_t j = 0; piv != c && j < w; j++) {
            float t = M[c * w + j];
            M[c * w + j] = M[piv * w + j], M[piv * w + j] = t;
        }
        for (int64_t i = c + 1; i < k; i++) {
            const float f = M[i * w + c] / M[c * w + c];
            for (int64_t j = c; j < w; j++)
                M[i * w + j] -= f * M[c * w + j];
        }
    }
    for (int64_t c = k - 1; c >= 0; c--)
        for (int64_t j = k; j < w; j++) {
            float x = M[c * w + j];
            for (int64_t q = c + 1; q < k; q++)
                x -= M[c * w + q] * M[q * w + j];
            M[c * w + j] = x / M[c * w + c];
        }
    for (int64_t i = 0; i < k; i++) {
        for (int64_t j = 0; j < k; j++)
            l->cA[i * k + j] = M[i * w + k + j];
        for (int64_t j = 0; j < v; j++)
            l->cB[i * v + j] = M[i * w + 2 * k + j];
    }
}

/* The forward of lane (b, n): outputs into y0, y1 (when not NULL) and the
   states the backward keeps into l (every state, or every span-th and the
   last). */
static void lane_forward(lane *l, const prob *p, const ra_cpu_scan_cfg *cfg, int64_t b, int64_t n,
                         float *y0, float *y1, int keep_all)
{
    const ra_scan_shape *s = &p->s;
    const int64_t kk = l->kk, kv = l->kv, span = cfg->span > 0 ? cfg->span : 1;
    float *cur = l->cA, *curB = l->cB;
    set_identity(cur, s->k, curB, kv);
    set_identity(l->SA, s->k, l->SB, kv);
    for (int64_t t = 1; t <= s->T; t++) {
        const int64_t st = ra_scan_lane_step(s, b, t - 1, n);
        step(p, cfg->round, st, cur, curB, l->tA, l->tB);
        memcpy(cur, l->tA, (size_t)kk * sizeof *cur);
        memcpy(curB, l->tB, (size_t)kv * sizeof *curB);
        if (y0)
            memcpy(y0 + st * kk, cur, (size_t)kk * sizeof *cur);
        if (y1)
            memcpy(y1 + st * kv, curB, (size_t)kv * sizeof *curB);
        int64_t slot = keep_all ? t : (t % span == 0 ? t / span : -1);
        if (slot >= 0) {
            memcpy(l->SA + slot * kk, cur, (size_t)kk * sizeof *cur);
            memcpy(l->SB + slot * kv, curB, (size_t)kv * sizeof *curB);
        }
    }
}

static ra_status add_out(ra_tensors *out, const char *name, const int64_t *d, int nd,
                         const float *x)
{
    ra_tensor *t;
    RA_TRY(ra_tensors_new(out, &t, name, RA_F32, nd, d));
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, x[i]);
    return RA_OK;
}

static ra_status affine_forward(const ra_cpu_scan_cfg *cfg, const prob *p, ra_tensors *out)
{
    const ra_scan_shape *s = &p->s;
    const int64_t n0 = ra_scan_out_numel(s, 0), n1 = ra_scan_out_numel(s, 1);
    float *y0 = malloc((size_t)n0 * sizeof(float)), *y1 = malloc((size_t)n1 * sizeof(float));
    if (!y0 || !y1) {
        free(y0), free(y1);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    lane l;
    ra_status st = lane_init(&l, s, 1, 1);
    if (st == RA_OK) {
        ra_cpu_scan_cfg fcfg = *cfg;
        fcfg.span = (int)s->T + 1; /* keeps state 0 only */
        for (int64_t b = 0; b < s->B; b++)
            for (int64_t n = 0; n < s->N; n++)
                lane_forward(&l, p, &fcfg, b, n, y0, y1, 0);
        lane_free(&l);
        int64_t d[5];
        int nd = ra_scan_out_shape(d, s, 0);
        st = add_out(out, ra_scan_out_name(s->kind, 0), d, nd, y0);
        nd = ra_scan_out_shape(d, s, 1);
        if (st == RA_OK)
            st = add_out(out, ra_scan_out_name(s->kind, 1), d, nd, y1);
    }
    free(y0), free(y1);
    return st;
}

/* State t-1 for the backward at step t into (pa, pb). */
static void prev_state(lane *l, const prob *p, const ra_cpu_scan_cfg *cfg, int64_t b, int64_t n,
                       int64_t t, const float **pa, const float **pb)
{
    const int64_t kk = l->kk, kv = l->kv, span = cfg->span;
    switch (cfg->bwd) {
    case RA_CPU_SCAN_STORE:
        break;
    case RA_CPU_SCAN_RECOMPUTE:
        /* segment of t-1: re-run from its checkpoint when entering it from above */
        if (t == p->s.T || t % span == 0) {
            const int64_t c0 = (t - 1) / span;                        /* checkpoint index */
            float *A = l->SA + l->ncp * kk, *B = l->SB + l->ncp * kv; /* segment area */
            memcpy(A, l->SA + c0 * kk, (size_t)kk * sizeof *A);
            memcpy(B, l->SB + c0 * kv, (size_t)kv * sizeof *B);
            for (int64_t u = c0 * span + 1; u < t; u++) {
                step(p, cfg->round, ra_scan_lane_step(&p->s, b, u - 1, n),
                     A + (u - 1 - c0 * span) * kk, B + (u - 1 - c0 * span) * kv,
                     A + (u - c0 * span) * kk, B + (u - c0 * span) * kv);
            }
        }
        {
            const int64_t c0 = (t - 1) / span, off = t - 1 - c0 * span;
            *pa = l->SA + (l->ncp + off) * kk;
            *pb = l->SB + (l->ncp + off) * kv;
        }
        return;
    case RA_CPU_SCAN_REVERSAL:
        if ((t - 1) % span == 0) {
            memcpy(l->cA, l->SA + (t - 1) / span * kk, (size_t)kk * sizeof *l->cA);
            memcpy(l->cB, l->SB + (t - 1) / span * kv, (size_t)kv * sizeof *l->cB);
        } else {
            reverse_step(l, p, ra_scan_lane_step(&p->s, b, t - 1, n));
        }
        *pa = l->cA, *pb = l->cB;
        return;
    }
    *pa = l->SA + (t - 1) * kk, *pb = l->SB + (t - 1) * kv;
}

static ra_status affine_backward(const ra_cpu_scan_cfg *cfg, const prob *p, ra_tensors *grads)
{
    const ra_scan_shape *s = &p->s;
    const int64_t k = s->k, v = s->v, kk = k * k, kv = k * v;
    const int keep_all = cfg->bwd == RA_CPU_SCAN_STORE;
    if (!keep_all && cfg->span < 1)
        RA_ERRORF(RA_EINVAL, "scan CPU backward: checkpoint span %d must be >= 1", cfg->span);
    const int64_t span = keep_all ? 1 : cfg->span;
    /* store: states 0..T; otherwise checkpoints 0..T/span, then (recompute)
       a segment area of span states */
    const int64_t ncp = keep_all ? s->T + 1 : s->T / span + 1, nst = keep_all ? ncp : ncp + span;
    const int64_t n0 = ra_scan_in_numel(s, 0), n1 = ra_scan_in_numel(s, 1);
    float *g0 = malloc((size_t)n0 * sizeof(float)), *g1 = malloc((size_t)n1 * sizeof(float));
    if (!g0 || !g1) {
        free(g0), free(g1);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    lane l;
    ra_status st = lane_init(&l, s, nst, ncp);
    for (int64_t b = 0; st == RA_OK && b < s->B; b++)
        for (int64_t n = 0; n < s->N; n++) {
            ra_cpu_scan_cfg fcfg = *cfg;
            fcfg.span = (int)span;
            lane_forward(&l, p, &fcfg, b, n, NULL, NULL, keep_all);
            /* cA, cB hold the last state (reversal starts there) */
            memset(l.GA, 0, (size_t)kk * sizeof(float));
            memset(l.GB, 0, (size_t)kv * sizeof(float));
            for (int64_t t = s->T; t >= 1; t--) {
                const int64_t stp = ra_scan_lane_step(s, b, t - 1, n);
                for (int64_t i = 0; p->x[2] && i < kk; i++)
                    l.GA[i] += p->x[2][stp * kk + i];
                for (int64_t i = 0; i < kv; i++)
                    l.GB[i] += p->x[3][stp * kv + i];
                const float *pa, *pb;
                prev_state(&l, p, &fcfg, b, n, t, &pa, &pb);
                /* dA = GA pa^T + GB pb^T */
                mm(l.dA, l.GA, k, 1, pa, 1, k, k, k, k, 0, cfg->round);
                mm(l.dA, l.GB, v, 1, pb, 1, v, k, v, k, 1, cfg->round);
                memcpy(g0 + stp * kk, l.dA, (size_t)kk * sizeof(float));
                memcpy(g1 + stp * kv, l.GB, (size_t)kv * sizeof(float));
                const float *A = p->x[0] + stp * kk;
                mm(l.tA, A, 1, k, l.GA, k, 1, k, k, k, 0, cfg->round);
                mm(l.tB, A, 1, k, l.GB, v, 1, k, k, v, 0, cfg->round);
                memcpy(l.GA, l.tA, (size_t)kk * sizeof(float));
                memcpy(l.GB, l.tB, (size_t)kv * sizeof(float));
            }
        }
    if (st == RA_OK) {
        lane_free(&l);
        int64_t d[5];
        int nd = ra_scan_in_shape(d, s, 0);
        st = add_out(grads, ra_scan_grad_name(s->kind, 0), d, nd, g0);
        nd = ra_scan_in_shape(d, s, 1);
        if (st == RA_OK)
            st = add_out(grads, ra_scan_grad_name(s->kind, 1), d, nd, g1);
    }
    free(g0), free(g1);
    return st;
}

/* The log scan forward of lane (b, d) into h (T values, lane stride). */
static void log_lane(const prob *p, int64_t b, int64_t d, float *h)
{
    const ra_scan_shape *s = &p->s;
    const float *lc = p->x[0], *lv = p->x[1];
    float astar = 0, m = lv[ra_scan_log_slot(s, b, 0, d)], sum = 1;
    for (int64_t t = 1; t <= s->T; t++) {
        astar += lc[ra_scan_lane_step(s, b, t - 1, d)];
        const float z = lv[ra_scan_log_slot(s, b, t, d)] - astar;
        if (z > m) {
            sum = sum * expf(m - z) + 1;
            m = z;
        } else {
            sum += expf(z - m);
        }
        h[ra_scan_lane_step(s, b, t - 1, d)] = expf(astar + m + logf(sum));
    }
}

static ra_status log_run(const prob *p, ra_tensors *out, int grads)
{
    const ra_scan_shape *s = &p->s;
    const int64_t n = ra_scan_out_numel(s, 1), nv = ra_scan_in_numel(s, 1);
    float *h = malloc((size_t)n * sizeof(float)), *g0 = malloc((size_t)n * sizeof(float)),
          *g1 = malloc((size_t)nv * sizeof(float));
    ra_status st = RA_OK;
    if (!h || !g0 || !g1) {
        free(h), free(g0), free(g1);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t d = 0; d < s->N; d++) {
            log_lane(p, b, d, h);
            if (!grads)
                continue;
            float G = 0;
            for (int64_t t = s->T; t >= 1; t--) {
                const int64_t i = ra_scan_lane_step(s, b, t - 1, d);
                G += p->x[3][i];
                const float a = expf(p->x[0][i]);
                const float hp = t > 1 ? h[ra_scan_lane_step(s, b, t - 2, d)]
                                       : expf(p->x[1][ra_scan_log_slot(s, b, 0, d)]);
                g0[i] = G * a * hp;
                g1[ra_scan_log_slot(s, b, t, d)] = G * expf(p->x[1][ra_scan_log_slot(s, b, t, d)]);
                G = a * G;
            }
            const int64_t i0 = ra_scan_log_slot(s, b, 0, d);
            g1[i0] = G * expf(p->x[1][i0]);
        }
    int64_t dm[5];
    if (!grads) {
        int nd = ra_scan_out_shape(dm, s, 1);
        st = add_out(out, ra_scan_out_name(s->kind, 1), dm, nd, h);
    } else {
        int nd = ra_scan_in_shape(dm, s, 0);
        st = add_out(out, ra_scan_grad_name(s->kind, 0), dm, nd, g0);
        nd = ra_scan_in_shape(dm, s, 1);
        if (st == RA_OK)
            st = add_out(out, ra_scan_grad_name(s->kind, 1), dm, nd, g1);
    }
    free(h), free(g0), free(g1);
    return st;
}

static ra_status check_kind(const ra_cpu_scan_cfg *cfg, const prob *p)
{
    if ((int)p->s.kind != cfg->kind)
        RA_ERRORF(RA_EUNSUPPORTED, "scan CPU variant for %s given a %s case",
                  ra_scan_op_name(cfg->kind), ra_scan_op_name(p->s.kind));
    return RA_OK;
}

ra_status ra_cpu_scan_forward(const ra_cpu_scan_cfg *cfg, const ra_case *c, ra_tensors *out)
{
    prob p;
    RA_TRY(prob_init(&p, c, 0));
    ra_status st = check_kind(cfg, &p);
    if (st == RA_OK)
        st = p.s.kind == RA_SCAN_LOG ? log_run(&p, out, 0) : affine_forward(cfg, &p, out);
    prob_free(&p);
    return st;
}

ra_status ra_cpu_scan_backward(const ra_cpu_scan_cfg *cfg, const ra_case *c, ra_tensors *grads)
{
    prob p;
    RA_TRY(prob_init(&p, c, 1));
    ra_status st = check_kind(cfg, &p);
    if (st == RA_OK)
        st = p.s.kind == RA_SCAN_LOG ? log_run(&p, grads, 1) : affine_backward(cfg, &p, grads);
    prob_free(&p);
    return st;
}
