/* Template: case in, tensors out for the CPU gdn kernels (float or double). */

/*
 * Reads a gdn case through ra_gdn_problem_init (the one validator every
 * consumer shares), widens each stored input exactly to double and rounds
 * it once to R (exact for bf16/f16/f32 inputs in float, and always in
 * double), and gathers it head-major so that each (b, hv) is contiguous.
 * With l2norm, q and k are normalised per token and key head in R:
 * n = sqrt(sum_i x_i^2 + l2eps) (one fma chain), x^ = x / n.
 *
 * The (b, hv) pairs run in parallel (OpenMP, dynamic schedule); each pair
 * writes only its own slices, so the result is bit-identical for any
 * thread count.  The backward's dq and dk are then summed over the value
 * heads of each group in increasing head order (RA_FAULT_DK_GROUP_SUM keeps
 * only the first head's dk, RA_FAULT_GQA_PAIR the first two) and chained
 * through the L2 norm,
 * dx = dx^/n - x (x . dx^)/n^3.  Outputs are stored with ra_tensor_set
 * (RNE into the storage dtype): o, dq, dk, dv in cfg->act_dtype; ht, dh0,
 * dg, dbeta in cfg->aux_dtype.
 *
 * The driver also plants the faults of head mapping, batch offsets, h0
 * layout, parameters and the l2norm backward (cpu/faults.h).
 *
 * Errors: invalid cases as ra_gdn_problem_init reports them; an
 * inconsistent configuration (RA_EINVAL); allocation failure (RA_ENOMEM,
 * naming the shape); a singular step in the reversal backward
 * (RA_EUNSUPPORTED: that case is outside the variant's envelope).
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/gdn_case.h"

/* [B,T,H,D] tensor -> [B,H,T,D] R array. */
static void RN(gather_bthd)(R *dst, const ra_tensor *t, int64_t B, int64_t T, int64_t H,
                            int64_t D)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t tt = 0; tt < T; tt++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t d = 0; d < D; d++)
                    dst[((b * H + h) * T + tt) * D + d] =
                        (R)ra_tensor_get(t, ((b * T + tt) * H + h) * D + d);
}

/* [B,H,T,D] R array -> [B,T,H,D] tensor. */
static void RN(scatter_bthd)(ra_tensor *t, const R *src, int64_t B, int64_t T, int64_t H,
                             int64_t D)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t tt = 0; tt < T; tt++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t d = 0; d < D; d++)
                    ra_tensor_set(t, ((b * T + tt) * H + h) * D + d,
                                  (double)src[((b * H + h) * T + tt) * D + d]);
}

/* Planted fault H0_TRANSPOSED: each K x V state read as V x K. */
static void RN(transpose_states)(R *s, int64_t n, int64_t K, int64_t V)
{
    R *tmp = malloc((size_t)(K * V) * sizeof *tmp);
    if (!tmp)
        return; /* a fault switch: without memory the state stays correct */
    for (int64_t h = 0; h < n; h++) {
        R *x = s + h * K * V;
        memcpy(tmp, x, (size_t)(K * V) * sizeof *tmp);
        for (int64_t i = 0; i < K; i++)
            for (int64_t j = 0; j < V; j++)
                x[i * V + j] = tmp[j * K + i];
    }
    free(tmp);
}

static void RN(gather_flat)(R *dst, const ra_tensor *t)
{
    for (int64_t i = 0; i < t->numel; i++)
        dst[i] = (R)ra_tensor_get(t, i);
}

static void RN(scatter_flat)(ra_tensor *t, const R *src)
{
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, (double)src[i]);
}

/* Rows of x [rows x D] normalised into xn; norms into nrm.  Returns the
   first row whose norm is zero (only possible with l2eps = 0: the
   normalisation is then undefined), or -1. */
static int64_t RN(l2norm_rows)(R *xn, R *nrm, const R *x, int64_t rows, int64_t D, R eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const R *xr = x + r * D;
        const R n = R_SQRT(RN(dot)(xr, xr, D) + eps);
        if (n == 0)
            return r;
        nrm[r] = n;
        for (int64_t d = 0; d < D; d++)
            xn[r * D + d] = xr[d] / n;
    }
    return -1;
}

/* dx = dxh/n - x (x . dxh)/n^3, in place on dx (which holds dxh);
   fault RA_FAULT_L2NORM_BACK divides by n^2. */
static void RN(l2norm_back_rows)(R *dx, const R *x, const R *nrm, int64_t rows, int64_t D,
                                 int fault)
{
    for (int64_t r = 0; r < rows; r++) {
        R *g = dx + r * D;
        const R *xr = x + r * D;
        const R n = nrm[r], c = RN(dot)(xr, g, D) / (fault ? n * n : n * n * n);
        for (int64_t d = 0; d < D; d++)
            g[d] = g[d] / n - xr[d] * c;
    }
}

/* Sum of the per-value-head gradient over each group, into [B,Hk,T,K];
   the first `upto` heads of each group only (grp: all of them). */
static void RN(group_sum)(R *dst, const R *perhead, int64_t B, int64_t Hk, int64_t grp, int64_t TK,
                          int64_t upto)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t hk = 0; hk < Hk; hk++) {
            R *d = dst + (b * Hk + hk) * TK;
            const R *src = perhead + (b * Hk * grp + hk * grp) * TK;
            memcpy(d, src, (size_t)TK * sizeof(R));
            for (int64_t m = 1; m < (upto < grp ? upto : grp); m++)
                for (int64_t i = 0; i < TK; i++)
                    d[i] += src[m * TK + i];
        }
}

/* Buffers of one run (NULL when unused). */
typedef struct RN(bufs) {
    R *q, *k, *qn, *kn, *qnrm, *knrm, *v, *g, *beta, *h0, *dO, *dht;
    R *o, *ht, *dqh, *dkh, *dv, *dg, *dbeta, *dh0, *dq, *dk;
} RN(bufs);

static void RN(bufs_free)(RN(bufs) *b)
{
    R *all[] = {b->q,  b->k,  b->qn,  b->kn, b->qnrm, b->knrm,  b->v,   b->g,
                b->beta, b->h0, b->dO, b->dht, b->o,    b->ht,    b->dqh, b->dkh,
                b->dv, b->dg, b->dbeta, b->dh0, b->dq, b->dk};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static int RN(alloc)(R **p, int64_t n)
{
    if (!ra_alloc_plausible((uint64_t)(n > 0 ? n : 1), sizeof(R))) {
        *p = NULL; /* sizes come from the case: never ask malloc for the impossible */
        return 1;
    }
    *p = calloc((size_t)(n > 0 ? n : 1), sizeof(R));
    return *p == NULL;
}

static ra_status RN(ra_cpu_gdn_run_impl)(const ra_cpu_gdn_cfg *cfg, const ra_case *c,
                                    ra_tensors *out, ra_run *run, int backward)
{
    struct timespec t_start, t_end;
    clock_gettime(CLOCK_MONOTONIC, &t_start);
    if (cfg->algo == RA_CPU_CHUNK && cfg->chunk < 1)
        RA_ERRORF(RA_EINVAL, "cpu gdn: chunk length %d must be positive", cfg->chunk);
    if (R_IS_F64 && cfg->round != RA_CPU_ROUND_IEEE)
        RA_ERROR("cpu gdn: operand rounding needs float arithmetic", RA_EINVAL);
    if (cfg->rev_span < 0 || (cfg->rev_span > 0 && cfg->algo != RA_CPU_SEQ))
        RA_ERRORF(RA_EINVAL, "cpu gdn: reversal span %d needs the sequential algorithm and >= 0",
                  cfg->rev_span);
    ra_gdn_problem p;
    RA_TRY(ra_gdn_problem_init(&p, c, backward ? RA_GDN_NEED_COTANGENTS : 0, "gdn case"));
    const int64_t B = p.s.B, T = p.s.T, Hk = p.s.Hk, Hv = p.s.Hv, K = p.s.K, V = p.s.V;
    const int64_t grp = Hv / Hk, nqk = B * Hk * T * K, nv = B * Hv * T * V,
                  ng = B * Hv * T, ns = B * Hv * K * V, nhk = B * Hv * T * K;
    const unsigned faults = cfg->faults;
    int mode = cfg->round;
    if (!R_IS_F64 && cfg->algo == RA_CPU_CHUNK && mode == RA_CPU_ROUND_IEEE &&
        (faults & RA_FAULT_TF32_AS_IEEE))
        mode = RA_CPU_ROUND_TF32;
    if (cfg->store < RA_CPU_STORE_AUTO || cfg->store > RA_CPU_STORE_F16 ||
        cfg->state_store < RA_CPU_STORE_AUTO || cfg->state_store > RA_CPU_STORE_F16)
        RA_ERRORF(RA_EINVAL, "cpu gdn: unknown storage mode %d or %d", (int)cfg->store,
                  (int)cfg->state_store);
    if (R_IS_F64 && (cfg->store > RA_CPU_STORE_F32 || cfg->state_store > RA_CPU_STORE_F32))
        RA_ERROR("cpu gdn: bf16 or f16 storage needs float arithmetic", RA_EINVAL);
    const int twu = cfg->store != RA_CPU_STORE_AUTO ? (int)cfg->store
                    : cfg->round == RA_CPU_ROUND_BF16 ? RA_CPU_STORE_BF16
                                                        : RA_CPU_STORE_F32;
    /* Packed for the chunk kernels: T, W, U in bits 0-1, the states in 2-3. */
    const int store =
        twu | (cfg->state_store != RA_CPU_STORE_AUTO ? (int)cfg->state_store : twu) << 2;

    RN(bufs) bf;
    memset(&bf, 0, sizeof bf);
    int fail = RN(alloc)(&bf.q, nqk) || RN(alloc)(&bf.k, nqk) || RN(alloc)(&bf.v, nv) ||
               RN(alloc)(&bf.g, ng) || RN(alloc)(&bf.beta, ng) ||
               (p.h0 && RN(alloc)(&bf.h0, ns));
    if (!fail && p.l2norm)
        fail = RN(alloc)(&bf.qn, nqk) || RN(alloc)(&bf.kn, nqk) ||
               RN(alloc)(&bf.qnrm, B * Hk * T) || RN(alloc)(&bf.knrm, B * Hk * T);
    if (!fail && !backward)
        fail = RN(alloc)(&bf.o, nv) || RN(alloc)(&bf.ht, ns);
    if (!fail && backward)
        fail = RN(alloc)(&bf.dO, nv) || (p.dht && RN(alloc)(&bf.dht, ns)) ||
               RN(alloc)(&bf.dqh, nhk) || RN(alloc)(&bf.dkh, nhk) || RN(alloc)(&bf.dv, nv) ||
               RN(alloc)(&bf.dg, ng) || RN(alloc)(&bf.dbeta, ng) ||
               (p.h0 && RN(alloc)(&bf.dh0, ns)) || RN(alloc)(&bf.dq, nqk) ||
               RN(alloc)(&bf.dk, nqk);
    if (fail) {
        RN(bufs_free)(&bf);
        char shape[160];
        ra_gdn_shape_format(shape, sizeof shape, &p.s);
        RA_ERRORF(RA_ENOMEM, "cpu gdn: cannot allocate the working arrays for %s", shape);
    }

    RN(gather_bthd)(bf.q, p.q, B, T, Hk, K);
    RN(gather_bthd)(bf.k, p.k, B, T, Hk, K);
    RN(gather_bthd)(bf.v, p.v, B, T, Hv, V);
    RN(gather_bthd)(bf.g, p.g, B, T, Hv, 1);
    RN(gather_bthd)(bf.beta, p.beta, B, T, Hv, 1);
    if (p.h0)
        RN(gather_flat)(bf.h0, p.h0);
    if (p.h0 && (faults & RA_FAULT_H0_TRANSPOSED))
        RN(transpose_states)(bf.h0, B * Hv, K, V);
    if (backward) {
        RN(gather_bthd)(bf.dO, p.do_, B, T, Hv, V);
        if (p.dht)
            RN(gather_flat)(bf.dht, p.dht);
    }
    const R *qn = bf.q, *kn = bf.k;
    /* planted faults of the parameters: l2eps and scale ignored (the
       defaults), scale applied twice */
    const R l2eps = (R)((faults & RA_FAULT_L2EPS_IGNORED) ? 1e-6 : p.l2eps);
    R scale = (R)((faults & RA_FAULT_SCALE_DEFAULT) ? 1.0 / sqrt((double)K) : p.scale);
    if (faults & RA_FAULT_SCALE_TWICE)
        scale = scale * scale;
    if (p.l2norm) {
        for (int w = 0; w < 2; w++) {
            int64_t bad = RN(l2norm_rows)(w ? bf.kn : bf.qn, w ? bf.knrm : bf.qnrm, w ? bf.k : bf.q,
                                          B * Hk * T, K, l2eps);
            if (bad >= 0) {
                RN(bufs_free)(&bf);
                /* bad indexes the head-major [B,Hk,T] rows. */
                RA_ERRORF(RA_EINVAL,
                          "gdn case: tensor '%s' row [%lld, %lld, %lld] (b, t, hk) has zero "
                          "norm%s: l2norm is undefined there",
                          w ? "k" : "q", (long long)(bad / (Hk * T)), (long long)(bad % T),
                          (long long)(bad / T % Hk),
                          p.l2eps > 0 ? " after rounding l2eps to the arithmetic type"
                                      : " and l2eps = 0");
            }
        }
        qn = bf.qn, kn = bf.kn;
    }

    int nt = 1;
#ifdef _OPENMP
    nt = run && run->threads > 0 ? run->threads : omp_get_max_threads();
#endif
    /* no more threads than heads: a thread without a head would spin at
       the loop's barrier for the whole run (measured a third of validate's
       CPU on quick, stolen from the reference prefetch); each head is
       computed alone, so the bits do not depend on nt */
    if (nt > B * Hv)
        nt = (int)(B * Hv);
    fail = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t bh = 0; bh < B * Hv; bh++) {
        const int64_t b = bh / Hv, hv = bh % Hv,
                      hk = (faults & RA_FAULT_HEAD_INTERLEAVE) ? hv % Hk : hv / grp,
                      kh = (b * Hk + hk) * T * K;
        RN(head) h = {.T = T, .K = K, .V = V, .scale = scale, .faults = faults};
        h.q = qn + kh, h.k = kn + kh, h.v = bf.v + bh * T * V;
        h.g = bf.g + bh * T;
        h.beta = bf.beta + ((faults & RA_FAULT_BATCH_BETA) ? hv : bh) * T;
        h.h0 = p.h0 ? bf.h0 + bh * K * V : NULL;
        int err;
        if (!backward) {
            h.o = bf.o + bh * T * V, h.ht = bf.ht + bh * K * V;
            err = cfg->algo == RA_CPU_SEQ
                      ? RN(seq_forward)(&h)
                      : RN(chunk_forward)(&h, cfg->chunk, mode, store, cfg->inverse);
        } else {
            h.do_ = bf.dO + bh * T * V, h.dht = p.dht ? bf.dht + bh * K * V : NULL;
            h.dq = bf.dqh + bh * T * K, h.dk = bf.dkh + bh * T * K, h.dv = bf.dv + bh * T * V;
            h.dg = bf.dg + bh * T, h.dbeta = bf.dbeta + bh * T;
            h.dh0 = p.h0 ? bf.dh0 + bh * K * V : NULL;
            err = cfg->algo != RA_CPU_SEQ
                      ? RN(chunk_backward)(&h, cfg->chunk, mode, store, cfg->inverse)
                  : cfg->rev_span > 0 ? RN(seq_backward_reversal)(&h, cfg->rev_span)
                                      : RN(seq_backward)(&h);
        }
        if (err) {
#pragma omp atomic write
            fail = err;
        }
    }
    if (fail) {
        RN(bufs_free)(&bf);
        if (fail == 2)
            RA_ERROR("cpu gdn reversal backward: a step is singular (exp(g) = 0 in the "
                     "arithmetic, or beta |k|^2 = 1): its state cannot be recovered by inversion",
                     RA_EUNSUPPORTED);
        RA_ERROR("cpu gdn: cannot allocate a per-head workspace", RA_ENOMEM);
    }

    ra_status st = RA_OK;
    ra_tensor *t;
    const int64_t qk_shape[4] = {B, T, Hk, K}, v_shape[4] = {B, T, Hv, V},
                  gate_shape[3] = {B, T, Hv}, state_shape[4] = {B, Hv, K, V};
#define RA_OUT(name, dtype, nd, shape, fill)                                           \
    do {                                                                               \
        if (st == RA_OK && (st = ra_tensors_new(out, &t, name, dtype, nd, shape)) == RA_OK) \
            fill;                                                                      \
    } while (0)
    if (!backward) {
        RA_OUT("o", cfg->act_dtype, 4, v_shape, RN(scatter_bthd)(t, bf.o, B, T, Hv, V));
        RA_OUT("ht", cfg->aux_dtype, 4, state_shape, RN(scatter_flat)(t, bf.ht));
    } else {
        const int l2back = (faults & RA_FAULT_L2NORM_BACK) != 0;
        RN(group_sum)(bf.dq, bf.dqh, B, Hk, grp, T * K, grp);
        RN(group_sum)
        (bf.dk, bf.dkh, B, Hk, grp, T * K,
         (faults & RA_FAULT_DK_GROUP_SUM) ? 1
         : (faults & RA_FAULT_GQA_PAIR)   ? 2
                                          : grp);
        if (p.l2norm) {
            RN(l2norm_back_rows)(bf.dq, bf.q, bf.qnrm, B * Hk * T, K, l2back);
            RN(l2norm_back_rows)(bf.dk, bf.k, bf.knrm, B * Hk * T, K, l2back);
        }
        RA_OUT("dq", cfg->act_dtype, 4, qk_shape, RN(scatter_bthd)(t, bf.dq, B, T, Hk, K));
        RA_OUT("dk", cfg->act_dtype, 4, qk_shape, RN(scatter_bthd)(t, bf.dk, B, T, Hk, K));
        RA_OUT("dv", cfg->act_dtype, 4, v_shape, RN(scatter_bthd)(t, bf.dv, B, T, Hv, V));
        RA_OUT("dg", cfg->aux_dtype, 3, gate_shape, RN(scatter_bthd)(t, bf.dg, B, T, Hv, 1));
        RA_OUT("dbeta", cfg->aux_dtype, 3, gate_shape,
               RN(scatter_bthd)(t, bf.dbeta, B, T, Hv, 1));
        if (p.h0)
            RA_OUT("dh0", cfg->aux_dtype, 4, state_shape, RN(scatter_flat)(t, bf.dh0));
    }
#undef RA_OUT
    RN(bufs_free)(&bf);
    clock_gettime(CLOCK_MONOTONIC, &t_end);
    if (run && st == RA_OK)
        run->elapsed_ms = (double)(t_end.tv_sec - t_start.tv_sec) * 1e3 +
                          (double)(t_end.tv_nsec - t_start.tv_nsec) * 1e-6;
    return st;
}
