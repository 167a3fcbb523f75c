/* Chunked CUDA gdn: IEEE prep and output of the production head, fp32 tiles in shared memory. */

/*
 * chunk_prep + chunk_p and chunk_output (gdn_chunk.cuh) for IEEE operands
 * at chunk 64, K = V = 128, T by forward substitution.  The general
 * kernels pass every intermediate (Kb, A, D, T, Y, X, QS) through the
 * fp32 workspace and stage each product's operands into blk_mm's panels
 * again; here each kernel copies its operands once into shared memory by
 * cp.async and runs the products as register tiles (ffma_tile.cuh: each
 * thread 16 to 32 chains side by side).  The workspace gets what the
 * general kernels after it read, as the general prep writes it: G, gamma,
 * W and U (rows below L), P (rows below L; the general prep leaves its
 * columns from L on unwritten, this one zero, so that the output kernel
 * copies whole rows), and when the group runs the backward also D, A, T
 * (whole), Kb, Y and X (rows below L).
 *
 * The arithmetic is the general kernels', so are the bits:
 *   - every elementwise value is the same fp32 operation (__fmul_rn,
 *     __fsub_rn, __fadd_rn, expf) on the same inputs;
 *   - every product element is the same fmaf chain in increasing p from
 *     zero: A and P over the 128 features, QS over the state's 128 rows;
 *     W, U and P V' run over all 64 tokens where blk_mm stops at L, and
 *     the extra terms are products of zeros (T is zero above its
 *     diagonal, the staged rows past L are zero), which leave a running
 *     sum unchanged unless it is -0 (reachable only by a product that
 *     underflows to -0 from +0);
 *   - T comes from inv_fwdsubst_pairs, the routine the general prep calls
 *     at chunk 64, on the same A.
 */

#include "gpu/cp_async.cuh"
#include "gpu/ffma_tile.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_kernels.h"

namespace ra_gpu
{

/* Both kernels: 256 threads, two blocks per SM (about 100 KB of shared
   memory each), fp32 rows of 128 (LDF) or 64 (LDS) floats plus four, so
   that eight consecutive rows' 16-byte words sit in distinct banks. */
constexpr int IE_THREADS = 256, IE_BLOCKS = 2, IE_WARPS = IE_THREADS / 32;
static_assert(IE_THREADS == FFMA_THREADS, "ffma_tile.cuh's 16 x 16 grid");
constexpr int LDF = PK + 4, LDS = PC + 4;

/* prep's shared memory (floats):
     vec  G, gamma, beta of the chunk's 64 tokens;
     K    K's rows, then Y = diag(gamma) Kb in place;
     Q    Q's rows, then V's (copied while the substitution runs), then
          X = diag(beta) V in place;
     A    masked A in inv_fwdsubst_pairs' layout;
     T    T's rows. */
constexpr int IP_K = 3 * PC, IP_Q = IP_K + PC * LDF, IP_A = IP_Q + PC * LDF, IP_T = IP_A + PC * LDS,
              IP_WORDS = IP_T + PC * LDS;
static_assert(IP_K % 4 == 0 && IP_A % 4 == 0 && IP_T % 4 == 0, "16-byte aligned tiles");

/* Warps 4..7 copy V and form Y and X while warps 0..3 run the
   substitution (its 2 PC lanes). */
constexpr int IP_SIDE = IE_WARPS / 2;
static_assert(2 * PC == 32 * (IE_WARPS - IP_SIDE), "the substitution's lanes are warps 0..3");

/* BWD: the group runs the backward (group::bwd); then the prep also
   writes what only the general gradients kernel reads. */
template <bool BWD>
__global__ void __launch_bounds__(IE_THREADS, IE_BLOCKS)
    gdn_chunk_prep_ieee_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) float sf[];
    float *G = sf, *gam = G + PC, *bet = gam + PC;
    float *Ks = sf + IP_K, *Qs = sf + IP_Q, *As = sf + IP_A, *Ts = sf + IP_T;

    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int L = chunk_rows(h, PC, c), warp = threadIdx.x >> 5;
    const int64_t t0 = c * PC;

    constexpr int RW = PC / IE_WARPS; /* rows a warp copies */
    warp_copy_rows_upto<RW, PK / 4, LDF>(Ks, h.k + t0 * h.qs, h.qs, RW * warp, L);
    warp_copy_rows_upto<RW, PK / 4, LDF>(Qs, h.q + t0 * h.qs, h.qs, RW * warp, L);
    cp_commit();
    stage_gates<IE_THREADS>(bet, G, h, t0, L);
    __syncthreads();
    for (int i = threadIdx.x; i < PC; i += IE_THREADS) {
        gam[i] = i < L ? expf(G[i]) : 0.f;
        if (i < L)
            w.G[i] = G[i], w.gam[i] = gam[i];
    }
    cp_wait<0>();
    __syncthreads();

    const int ti = ffma_ti(), tj = ffma_tj();
    /* A = Kb K^T (Kb formed in the loads) and P = Q K^T, masked by D */
    {
        float d[2][4][4];
#pragma unroll
        for (int z = 0; z < 2; z++)
            ffma_zero(d[z]);
        const float *const ops[2] = {Ks, Qs};
        ffma_nt<2, 4, 4, PK, LDF, LDF>(d, ops, Ks, [&](int z, int r, float4 x) {
            return z == 0 ? scale4(x, bet[ti + 16 * r]) : x;
        });
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int cc = 0; cc < 4; cc++) {
                const int i = ti + 16 * r, j = tj + 16 * cc;
                const float dm = decay(G, L, i, j);
                const float am = (i < L && j < i) ? __fmul_rn(d[0][r][cc], dm) : 0.f;
                As[pairs_at<PC, LDS>(i, j)] = am;
                if (i < L) /* every column: the output kernel copies whole rows */
                    w.P[i * PC + j] = j <= i ? __fmul_rn(d[1][r][cc], dm) : 0.f;
                if (BWD)
                    w.Dm[i * PC + j] = dm, w.A[i * PC + j] = am;
            }
    }
    __syncthreads();

    if (warp >= IE_WARPS - IP_SIDE) {
        /* V's rows over Q's; Y = diag(gamma) Kb in place of K while they
           come, then X = diag(beta) V in place of V */
        constexpr int RV = PC / IP_SIDE, NS = 32 * IP_SIDE;
        const int s = threadIdx.x - (IE_THREADS - NS);
        warp_copy_rows_upto<RV, PK / 4, LDF>(Qs, h.v + t0 * h.vs, h.vs,
                                             RV * (warp - (IE_WARPS - IP_SIDE)), L);
        cp_commit();
        for (int e = s; e < PC * PK / 4; e += NS) {
            const int i = e / (PK / 4), x = 4 * (e % (PK / 4));
            float4 *kp = reinterpret_cast<float4 *>(Ks + i * LDF + x);
            const float4 kb = scale4(*kp, bet[i]), y = scale4(kb, gam[i]);
            *kp = y;
            if (BWD && i < L) {
                *reinterpret_cast<float4 *>(w.Kb + i * PK + x) = kb;
                *reinterpret_cast<float4 *>(w.Y + i * PK + x) = y;
            }
        }
        cp_wait<0>();
        team_sync<IP_SIDE>(0); /* the four warps' copies of V have landed */
        for (int e = s; e < PC * PK / 4; e += NS) {
            const int i = e / (PK / 4), x = 4 * (e % (PK / 4));
            float4 *vp = reinterpret_cast<float4 *>(Qs + i * LDF + x);
            const float4 xv = scale4(*vp, bet[i]);
            *vp = xv;
            if (BWD && i < L)
                *reinterpret_cast<float4 *>(w.X + i * PK + x) = xv;
        }
    } else {
        /* T column by column, two lanes a column: the entry's row parity
           stores it (every entry, zero above the diagonal) */
        const int j = threadIdx.x >> 1, p = threadIdx.x & 1;
        inv_fwdsubst_pairs<PC, LDS>(As, [&](int m, float t) {
            if (p != (m & 1))
                return;
            Ts[m * LDS + j] = t;
            if (BWD)
                w.T[m * PC + j] = t;
        });
    }
    __syncthreads();

    /* W = T Y, U = T X, rows below L */
    float d[4][8];
#pragma unroll 1
    for (int u = 0; u < 2; u++) {
        ffma_zero(d);
        ffma_nn<4, 2, PC, LDS, LDF>(d, Ts, u == 0 ? Ks : Qs);
        float *dst = u == 0 ? w.W : w.U;
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int i = ti + 16 * r;
            if (i >= L)
                continue;
#pragma unroll
            for (int hh = 0; hh < 2; hh++)
                *reinterpret_cast<float4 *>(dst + i * PK + 64 * hh + 4 * tj) =
                    make_float4(d[r][4 * hh], d[r][4 * hh + 1], d[r][4 * hh + 2], d[r][4 * hh + 3]);
        }
    }
}

/* output: a block per (head, chunk, half of the value columns), 64 x 64
   of o: Q's rows, S' and V' on the half's columns, P, gamma (floats). */
constexpr int IO_Q = 0, IO_S = IO_Q + PC * LDF, IO_P = IO_S + PK * LDS, IO_V = IO_P + PC * LDS,
              IO_G = IO_V + PC * LDS, IO_WORDS = IO_G + PC;

__global__ void __launch_bounds__(IE_THREADS, IE_BLOCKS)
    gdn_chunk_output_ieee_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) float sf[];
    float *Qs = sf + IO_Q, *Ss = sf + IO_S, *Ps = sf + IO_P, *Vs = sf + IO_V, *gam = sf + IO_G;

    const int64_t e = blockIdx.x >> 1, hl = e / g.nch, c = e % g.nch;
    const int half = blockIdx.x & 1;
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int L = chunk_rows(h, PC, c), warp = threadIdx.x >> 5;
    const int64_t t0 = c * PC;

    constexpr int RW = PC / IE_WARPS, RS = PK / IE_WARPS;
    warp_copy_rows_upto<RW, PK / 4, LDF>(Qs, h.q + t0 * h.qs, h.qs, RW * warp, L);
    warp_copy_rows<RS, PC / 4, LDS>(Ss + RS * warp * LDS, w.Sst + RS * warp * PK + 64 * half, PK);
    warp_copy_rows_upto<RW, PC / 4, LDS>(Ps, w.P, PC, RW * warp, L);
    warp_copy_rows_upto<RW, PC / 4, LDS>(Vs, w.Vp + 64 * half, PK, RW * warp, L);
    cp_commit();
    for (int i = threadIdx.x; i < PC; i += IE_THREADS)
        gam[i] = i < L ? w.gam[i] : 0.f;
    cp_wait<0>();
    __syncthreads();

    /* o = (gamma * (Q S')) s + (P V') s */
    float qs[4][4], pv[4][4];
    ffma_zero(qs);
    ffma_zero(pv);
    ffma_nn<4, 1, PK, LDF, LDS>(qs, Qs, Ss);
    ffma_nn<4, 1, PC, LDS, LDS>(pv, Ps, Vs);
    const int ti = ffma_ti(), tj = ffma_tj();
    const float s = h.scale;
    float *o = h.o + t0 * h.vs + 64 * half + 4 * tj;
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int i = ti + 16 * r;
        if (i >= L)
            continue;
        float y[4];
#pragma unroll
        for (int x = 0; x < 4; x++)
            y[x] = __fadd_rn(__fmul_rn(__fmul_rn(gam[i], qs[r][x]), s), __fmul_rn(pv[r][x], s));
        *reinterpret_cast<float4 *>(o + i * h.vs) = make_float4(y[0], y[1], y[2], y[3]);
    }
}

} // namespace ra_gpu

using ra_gpu::group;

bool ra_gpu_gdn_chunk_ieee_serves(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    const int words = IP_WORDS > IO_WORDS ? IP_WORDS : IO_WORDS;
    return prec == RA_GPU_PREC_IEEE && !g->wpairs && production_head(a, g) &&
           (int64_t)words * 4 <= smem_optin();
}

cudaError_t ra_gpu_gdn_chunk_prep_ieee(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return g->bwd ? launch_smem(gdn_chunk_prep_ieee_kernel<true>, IE_THREADS, IP_WORDS, g, a)
                  : launch_smem(gdn_chunk_prep_ieee_kernel<false>, IE_THREADS, IP_WORDS, g, a);
}

cudaError_t ra_gpu_gdn_chunk_output_ieee(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return launch_blocks(gdn_chunk_output_ieee_kernel, (unsigned)(2 * g->nh * g->nch), IE_THREADS,
                         IO_WORDS, g, a);
}
