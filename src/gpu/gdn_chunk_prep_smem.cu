/* Chunked CUDA gdn: the bf16 prep of the production head with its tiles in shared memory. */

/*
 * chunk_prep and chunk_p (gdn_chunk.cuh) for one configuration, the one
 * the bench shapes run: bf16 operands, chunk 64, K = V = 128, T by forward
 * substitution.  The general kernels pass every intermediate (Kb, A, D, T,
 * Y, X, about 230 KB per chunk with W, U, P) through the fp32 workspace and
 * stage each product's panels again; here the chunk's operands are staged
 * once in shared memory as the bf16 pairs the products read, and only what
 * later kernels need goes to the workspace: G, gamma, W, U, P in the
 * forward, plus Kb, Y, X, A, D, T for the gradients kernel when the group
 * runs the backward (group::bwd).
 *
 * The arithmetic is chunk_prep's, so the bits are:
 *   - every elementwise value is the same fp32 operation (__fmul_rn,
 *     __fsub_rn, expf) on the same inputs;
 *   - the products feed mma m16n8k16 the same bf16 operands (rounded to
 *     nearest even once, at staging, which is what the fragments of blk_mm
 *     would round) in the same k-steps from zero: A and P over the 128
 *     features, W and U over the chunk's L tokens in steps of 16 (operands
 *     past L are zeros, as blk_mm reads them);
 *   - T comes from inv_fwdsubst_smem, the routine chunk_prep calls.
 *
 * Shared memory (69 KB, three blocks per SM):
 *   vec   G, gamma, beta of the chunk's 64 tokens;
 *   r1    K, Kb, Q as bf16 pairs along the features (64 rows of 64 words,
 *         +4 so that a fragment's lanes (g, t) hit banks 4g + t), for A
 *         and P; then the inverse's scratch; then T (64 rows) and Y^T,
 *         X^T (128 rows) as pairs along the tokens (32 words, +4), for
 *         W and U;
 *   r3    A, masked, then T in place (fp32, 64 x 64).
 * Each of the four warps owns 16 rows of every product.
 */

#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_kernels.h"

namespace ra_gpu
{

constexpr int PS_C = 64, PS_K = 128; /* the configuration's chunk and head size */
constexpr int PS_LDF = PS_K / 2 + 4; /* words per row of a pair tile along the features */
constexpr int PS_LDT = PS_C / 2 + 4; /* words per row of a pair tile along the tokens */
constexpr int PS_THREADS = 128, PS_BLOCKS = 3;
constexpr int PS_VEC = 3 * PS_C, PS_R1 = 3 * PS_C * PS_LDF, PS_R3 = PS_C * PS_C;
constexpr int PS_WORDS = PS_VEC + PS_R1 + PS_R3;
static_assert(2 * PS_C * (PS_C + 1) <= PS_R1, "the inverse's scratch fits r1");
static_assert(PS_C * PS_LDT + 2 * PS_K * PS_LDT <= PS_R1, "T, Y^T and X^T fit r1");

/* Rows r (< 64) of x (row stride ld, floats) as bf16 pairs along the
   features into dst (PS_LDF words a row), zero from row L on; f maps
   (row, value) to the value staged.  Each thread moves float4s. */
template <typename F>
__device__ __forceinline__ void stage_rows(uint32_t *dst, const float *x, int ld, int L, F f)
{
    for (int e = threadIdx.x; e < PS_C * PS_K / 4; e += PS_THREADS) {
        const int r = e / (PS_K / 4), c = e % (PS_K / 4);
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < L)
            v = *reinterpret_cast<const float4 *>(x + r * ld + 4 * c);
        v = f(r, v);
        dst[r * PS_LDF + 2 * c] = bf16x2_rn(v.x, v.y);
        dst[r * PS_LDF + 2 * c + 1] = bf16x2_rn(v.z, v.w);
    }
}

/* Rows of x as bf16 pairs along the tokens (transposed: PS_K rows of
   PS_LDT words), zero from token L on, through f as stage_rows.  A thread
   takes tokens (2p, 2p + 1) at four features; the lane map puts a warp's
   sixteen token pairs and two feature groups on distinct banks. */
template <typename F>
__device__ __forceinline__ void stage_cols(uint32_t *dst, const float *x, int ld, int L, F f)
{
    for (int e = threadIdx.x; e < PS_C / 2 * PS_K / 4; e += PS_THREADS) {
        const int lane = e & 31, wi = e >> 5;
        const int p = (lane & 15) + 16 * (wi & 1), c = (lane >> 4) + 2 * (wi >> 1);
        const int r0 = 2 * p, r1 = r0 + 1;
        float4 v0 = make_float4(0.f, 0.f, 0.f, 0.f), v1 = v0;
        if (r0 < L)
            v0 = *reinterpret_cast<const float4 *>(x + r0 * ld + 4 * c);
        if (r1 < L)
            v1 = *reinterpret_cast<const float4 *>(x + r1 * ld + 4 * c);
        v0 = f(r0, v0), v1 = f(r1, v1);
        uint32_t *d = dst + 4 * c * PS_LDT + p;
        d[0] = bf16x2_rn(v0.x, v1.x);
        d[PS_LDT] = bf16x2_rn(v0.y, v1.y);
        d[2 * PS_LDT] = bf16x2_rn(v0.z, v1.z);
        d[3 * PS_LDT] = bf16x2_rn(v0.w, v1.w);
    }
}

__device__ __forceinline__ float4 scale4(float4 v, float s)
{
    return make_float4(__fmul_rn(v.x, s), __fmul_rn(v.y, s), __fmul_rn(v.z, s), __fmul_rn(v.w, s));
}

/* D(i, j) = exp(G_i - G_j) on j <= i < L, else zero (chunk_prep's Dm). */
__device__ __forceinline__ float decay(const float *G, int L, int i, int j)
{
    return (i < L && j <= i) ? expf(__fsub_rn(G[i], G[j])) : 0.f;
}

/* The warp's 16 rows (r0 = 16 warp + g and r0 + 8) of a 64-row product
   whose A operand is a pair tile a (lda words a row) and whose B^T is the
   pair tile b (ldb words a row), NT n-tiles of 8 from column 0, k-steps of
   16 from zero while k0 < kc (kc a run-time bound: blk_mm's loop). */
template <int NT>
__device__ __forceinline__ void warp_mm_pairs(float (&d)[NT][4], const uint32_t *a, int lda,
                                              const uint32_t *b, int ldb, int kc, int nt_used)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int r0 = (threadIdx.x >> 5) * 16 + g;
    const uint32_t *a0 = a + r0 * lda, *a1 = a0 + 8 * lda;
#pragma unroll
    for (int u = 0; u < NT; u++)
        d[u][0] = d[u][1] = d[u][2] = d[u][3] = 0.f;
    for (int k0 = 0; k0 < kc; k0 += 16) {
        const int wa = k0 / 2 + t, wb = wa + 4;
        const uint32_t fa[4] = {a0[wa], a1[wa], a0[wb], a1[wb]};
#pragma unroll
        for (int u = 0; u < NT; u++)
            if (u < nt_used) {
                const uint32_t *bc = b + (8 * u + g) * ldb;
                const uint32_t fb[2] = {bc[wa], bc[wb]};
                mma_bf16(d[u], fa, fb);
            }
    }
}

/* Stores the warp's rows < L of a 64 x 128 product, rounded to bf16 (st),
   to dst (row stride PS_K). */
__device__ __forceinline__ void store_st_rows(float *dst, const float (&d)[16][4], int L)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int r0 = (threadIdx.x >> 5) * 16 + g, r1 = r0 + 8;
#pragma unroll
    for (int u = 0; u < 16; u++) {
        const int c = 8 * u + 2 * t;
        if (r0 < L)
            *reinterpret_cast<float2 *>(dst + r0 * PS_K + c) =
                make_float2(bf16_round(d[u][0]), bf16_round(d[u][1]));
        if (r1 < L)
            *reinterpret_cast<float2 *>(dst + r1 * PS_K + c) =
                make_float2(bf16_round(d[u][2]), bf16_round(d[u][3]));
    }
}

__global__ void __launch_bounds__(PS_THREADS, PS_BLOCKS)
    gdn_chunk_prep_smem_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    float *G = reinterpret_cast<float *>(sm), *gam = G + PS_C, *bet = gam + PS_C;
    uint32_t *r1 = sm + PS_VEC;
    float *r3 = reinterpret_cast<float *>(r1 + PS_R1);
    uint32_t *Kw = r1, *KBw = Kw + PS_C * PS_LDF, *Qw = KBw + PS_C * PS_LDF;

    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const cws w = make_cws(g, PS_C, PS_K, PS_K, hl, c);
    const int L = chunk_rows(h, PS_C, c);
    const bool bwd = g.bwd;
    const int64_t t0 = c * PS_C;
    const float *k = h.k + t0 * h.qs, *q = h.q + t0 * h.qs, *v = h.v + t0 * h.vs,
                *gg = h.g + t0 * h.gs, *beta = h.beta + t0 * h.gs;

    for (int i = threadIdx.x; i < PS_C; i += PS_THREADS)
        bet[i] = i < L ? beta[i * h.gs] : 0.f, G[i] = 0.f;
    __syncthreads();
    if (threadIdx.x == 0) { /* the CPU's running sum, in its order */
        float run = 0.f;
#pragma unroll 8
        for (int i = 0; i < L; i++) {
            run = __fadd_rn(run, gg[i * h.gs]);
            G[i] = run;
        }
    }
    /* K, Kb = diag(beta) K, Q */
    stage_rows(Kw, k, h.qs, L, [](int, float4 x) { return x; });
    stage_rows(KBw, k, h.qs, L, [&](int r, float4 x) { return scale4(x, bet[r]); });
    stage_rows(Qw, q, h.qs, L, [](int, float4 x) { return x; });
    __syncthreads();
    for (int i = threadIdx.x; i < PS_C; i += PS_THREADS) {
        gam[i] = i < L ? expf(G[i]) : 0.f;
        if (i < L)
            w.G[i] = G[i], w.gam[i] = gam[i];
    }

    /* A = Kb K^T and P = Q K^T; the warp's column tiles past its diagonal
       block are zero after the masks and are not computed. */
    {
        const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, gq = lane >> 2, t = lane & 3;
        const int used = 2 * warp + 2;
        float da[8][4], dp[8][4];
        warp_mm_pairs<8>(da, KBw, PS_LDF, Kw, PS_LDF, PS_K, used);
        warp_mm_pairs<8>(dp, Qw, PS_LDF, Kw, PS_LDF, PS_K, used);
#pragma unroll
        for (int u = 0; u < 8; u++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = warp * 16 + gq + 8 * (e >> 1), j = 8 * u + 2 * t + (e & 1);
                const bool on = u < used;
                const float dm = on ? decay(G, L, i, j) : 0.f;
                const float am = (on && i < L && j < i) ? __fmul_rn(da[u][e], dm) : 0.f;
                r3[i * PS_C + j] = am;
                if (i < L && j < L)
                    w.P[i * PS_C + j] = (on && j <= i) ? __fmul_rn(dp[u][e], dm) : 0.f;
                if (bwd)
                    w.A[i * PS_C + j] = am, w.Dm[i * PS_C + j] = dm;
            }
    }
    __syncthreads();
    inv_fwdsubst_smem(r3, r3, PS_C, reinterpret_cast<float *>(r1)); /* ends synchronised */

    /* T (st on j <= i < L), Y = diag(gamma) Kb, X = diag(beta) V */
    uint32_t *Tw = r1, *Yw = Tw + PS_C * PS_LDT, *Xw = Yw + PS_K * PS_LDT;
    for (int e = threadIdx.x; e < PS_C * PS_C / 2; e += PS_THREADS) {
        const int i = e / (PS_C / 2), j = 2 * (e % (PS_C / 2));
        const float x0 = r3[i * PS_C + j], x1 = r3[i * PS_C + j + 1];
        Tw[i * PS_LDT + j / 2] = bf16x2_rn(x0, x1);
        if (bwd)
            *reinterpret_cast<float2 *>(w.T + i * PS_C + j) =
                make_float2((i < L && j <= i) ? bf16_round(x0) : x0,
                            (i < L && j + 1 <= i) ? bf16_round(x1) : x1);
    }
    stage_cols(Yw, k, h.qs, L, [&](int r, float4 x) { return scale4(scale4(x, bet[r]), gam[r]); });
    stage_cols(Xw, v, h.vs, L, [&](int r, float4 x) { return scale4(x, bet[r]); });
    if (bwd)
        for (int e = threadIdx.x; e < L * PS_K / 4; e += PS_THREADS) {
            const int r = e / (PS_K / 4), c4 = 4 * (e % (PS_K / 4));
            const float4 kb = scale4(*reinterpret_cast<const float4 *>(k + r * h.qs + c4), bet[r]);
            *reinterpret_cast<float4 *>(w.Kb + r * PS_K + c4) = kb;
            *reinterpret_cast<float4 *>(w.Y + r * PS_K + c4) = scale4(kb, gam[r]);
            *reinterpret_cast<float4 *>(w.X + r * PS_K + c4) =
                scale4(*reinterpret_cast<const float4 *>(v + r * h.vs + c4), bet[r]);
        }
    __syncthreads();

    /* W = st(T Y), U = st(T X) over the L tokens */
    float d[16][4];
    warp_mm_pairs<16>(d, Tw, PS_LDT, Yw, PS_LDT, L, 16);
    store_st_rows(w.W, d, L);
    warp_mm_pairs<16>(d, Tw, PS_LDT, Xw, PS_LDT, L, 16);
    store_st_rows(w.U, d, L);
}

} // namespace ra_gpu

using ra_gpu::group;

bool ra_gpu_gdn_chunk_prep_smem_serves(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    auto al16 = [](const float *p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; };
    return prec == RA_GPU_PREC_BF16 && g->C == ra_gpu::PS_C && a->s.K == ra_gpu::PS_K &&
           a->s.V == ra_gpu::PS_K && g->inv == RA_CPU_INV_FWDSUBST && al16(a->q) && al16(a->k) &&
           al16(a->v) && al16(g->ws);
}

cudaError_t ra_gpu_gdn_chunk_prep_smem(const ra_gpu_gdn_args *a, const group *g)
{
    const size_t bytes = ra_gpu::PS_WORDS * sizeof(uint32_t);
    cudaError_t e = cudaFuncSetAttribute(ra_gpu::gdn_chunk_prep_smem_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess)
        return e;
    ra_gpu::gdn_chunk_prep_smem_kernel<<<(unsigned)(g->nh * g->nch), ra_gpu::PS_THREADS, bytes>>>(
        *a, *g);
    return cudaGetLastError();
}
