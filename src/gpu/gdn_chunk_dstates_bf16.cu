/* Chunked CUDA gdn: the dstates pass of the production head in bf16, the cotangent in registers. */

/*
 * gdn_chunk_dstates_kernel (gdn_chunk_pass.cu) for the group::wpairs
 * configuration, transposed as gdn_chunk_states_bf16.cu transposes the
 * states pass: each team of NW warps (2 or 4) owns 16 columns v of the
 * state and holds dS^T (its columns as rows, the 128 features as
 * columns) in mma accumulator tiles, warp tw of the team the features
 * 128 / NW tw .. 128 / NW (tw + 1) - 1; it forms dV' and tV for the
 * tokens 64 / NW tw .., and the team trades the A fragments each product
 * needs from the others (team_trade).  Walking the chunks backwards, per
 * chunk:
 *
 *   dV'^T = s (dO^T P) + (dS^T K^T) diag(exp(G_last - G_i))
 *           A = dO^T (the lane's dO values, loaded in accumulator layout),
 *           B = P (the prep's pair tile cws::Pbp, staged, read by
 *           ldmatrix .trans);
 *           A = dS^T (acc_to_a), B = K^T (K's fp32 rows, staged, or its
 *           stored bf16 rows, a pair tile);
 *   dS^T <- s tV^T Q + gC dS^T - dV'^T W, tV = diag(gamma) dO
 *           A = tV^T, dV'^T from accumulators; B^T = Q^T, the prep's
 *           pair tile cws::Qtp; B = W, the pair tile cws::Wp the states
 *           pass reads too, read by ldmatrix .trans (a W^T tile cost the
 *           prep its transposed stores).
 *
 * The block's teams share only the staged tiles (K, P, Q^T, W: 77 KB
 * a chunk), which a warp of their own copies (cp.async) one chunk ahead; G
 * and gamma are read from global memory.
 *
 * Bits: each product sees the same bf16 operands (fp32 ones rounded by
 * bf16x2_rn where blk_mm rounds them) in the same k-steps from zero, and
 * every elementwise value is the general kernel's fp32 expression, so the
 * results are its bits.  In a last chunk of L < 64 rows the rows at or
 * past L of P and of the lane's dO are zero and the
 * products over the tokens take the k-steps while k0 < L, as
 * blk_mm_direct does there.
 */

#include <cstdint>
#include <type_traits>

#include "gpu/cp_async.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_kernels.h"
#include "gpu/pair_tile.cuh"

namespace ra_gpu
{

/* Teams of warps per block: W (a template parameter, 2 or 4) run the
   recursion on 16 state columns each, one more warp copies the next
   chunk's operands (cp.async); the staged tiles' row strides: fp32 K
   padded by 4 so that a fragment's lanes (g, t) read distinct banks.
   After the two stages, each team's exchange: the A fragments of dS'
   (8 k-steps), dO, tV and dV' (4 each). */
constexpr int DB_LDK = PK + 4;
constexpr int DB_K = PC * DB_LDK, DB_P = PC * LDC, DB_QT = PK * LDC, DB_W = PC * LDK;
constexpr int DB_STAGE = DB_K + DB_P + DB_QT + DB_W;
constexpr int DB_KS = PK / 16, DB_KV = PC / 16, DB_XW = (DB_KS + 3 * DB_KV) * 32 * 4;
template <int W> constexpr int db_words() { return 2 * DB_STAGE + W * DB_XW; }

/* A stage's tiles. */
struct db_stage {
    float *K;
    uint32_t *P, *Qt, *W;
};

__device__ __forceinline__ db_stage db_at(uint32_t *sm, int64_t c)
{
    db_stage b;
    b.K = reinterpret_cast<float *>(sm + (c & 1) * DB_STAGE);
    b.P = reinterpret_cast<uint32_t *>(b.K + DB_K), b.Qt = b.P + DB_P, b.W = b.Qt + DB_QT;
    return b;
}

/* Starts copying chunk c's tiles into its stage (the copying warp calls
   it).  In a chunk of L < 64 rows (the last, so the first this pass
   takes) K's and W's rows at or past L are zeroed (the prep leaves W's
   unwritten); P and Q^T come zero-padded from the prep.  IN: float, K's
   fp32 rows;
   uint16_t, K's stored bf16 rows, which are the pair tile along the
   features (LDK words a row) that dS^T K^T reads as its B^T. */
template <typename IN>
__device__ __forceinline__ void db_issue(uint32_t *sm, const group &g, const head &h, int64_t hl,
                                         int64_t c)
{
    constexpr bool F32 = std::is_same<IN, float>::value;
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int L = chunk_rows(h, PC, c), lane = threadIdx.x & 31;
    const db_stage b = db_at(sm, c);
    const float *k = h.k + c * PC * h.qs;
    if constexpr (!F32) {
        warp_copy_rows_upto<PC, PK / 8, 2 * LDK>(reinterpret_cast<uint16_t *>(b.K),
                                                 h.kb + c * PC * h.qs, h.qs, 0, L);
    } else {
        if (L == PC) {
            warp_copy_rows<PC, PK / 4, DB_LDK>(b.K, k, h.qs);
        } else {
#pragma unroll 4
            for (int e = lane; e < PC * (PK / 4); e += 32) {
                const int r = e / (PK / 4), x = 4 * (e % (PK / 4));
                if (r < L)
                    cp_async16(b.K + r * DB_LDK + x, k + (int64_t)r * h.qs + x);
                else
                    *reinterpret_cast<float4 *>(b.K + r * DB_LDK + x) =
                        make_float4(0.f, 0.f, 0.f, 0.f);
            }
        }
    }
    warp_copy_rows<PC, PC / 8, LDC>(b.P, w.Pbp, LDC);
    warp_copy_rows<PK, PC / 8, LDC>(b.Qt, w.Qtp, LDC);
    warp_stage_w(b.W, w.Wp, L);
}

/* d[n] += A B over the first `used` of NT n-tiles and the k-steps while
   16 s < kc, A's fragments fa[s] in registers and B's fp32 values
   bv(p, j) (contraction index p, output column j) rounded pair by pair
   as mma_tile rounds them. */
template <int NT, int KS, typename BV>
__device__ __forceinline__ void warp_mm_regs_f32b(float (&d)[NT][4], const uint32_t (&fa)[KS][4],
                                                  int kc, int used, BV bv)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int s = 0; s < KS; s++) {
        if (16 * s >= kc)
            continue;
        const int ka = 16 * s + 2 * t, kb = ka + 8;
#pragma unroll
        for (int n = 0; n < NT; n++)
            if (n < used) {
                const int j = 8 * n + g;
                const uint32_t fb[2] = {bf16x2_rn(bv(ka, j), bv(ka + 1, j)),
                                        bf16x2_rn(bv(kb, j), bv(kb + 1, j))};
                mma_bf16(d[n], fa[s], fb);
            }
    }
}

/* W teams of NW warps; IN: float or uint16_t, K staged from its fp32
   rows or as stored (db_issue). */
template <int W, int NW, typename IN>
__global__ void __launch_bounds__(32 * (NW * W + 1), 1)
    gdn_chunk_dstates_bf16_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    constexpr int TILES = PK / (16 * W), KH = PK / NW, TH = PC / NW; /* a warp's features, tokens */
    const int64_t hl = blockIdx.x / TILES;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, team = warp / NW, tw = warp % NW;
    const bool copier = warp == NW * W;
    const int v0 = (int)(blockIdx.x % TILES) * 16 * W + 16 * team;
    const int k0 = KH * tw, i0 = TH * tw; /* the warp's first feature and token */
    uint4 *xs = reinterpret_cast<uint4 *>(sm + 2 * DB_STAGE + team * DB_XW), *xo = xs + DB_KS * 32,
          *xt = xo + DB_KV * 32, *xv = xt + DB_KV * 32;
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const float sc = h.scale;
    /* dS^T, element (v, k) of cotangent row k, column v, in ds[(k - k0) / 8] */
    float ds[KH / 8][4];
    if (!copier)
        for_frags<KH / 8>(v0, k0, [&](int u, int e, int v, int k) {
            ds[u][e] = h.dht ? h.dht[k * PK + v] : 0.f;
        });
    if (copier) {
        db_issue<IN>(sm, g, h, hl, g.nch - 1);
        cp_commit();
        cp_wait<0>();
    }
    /* Chunk c's workspace is chunk 0's pointers plus c * CH floats; the
       lane's dO loads and dS, dV' stores go from one address each at
       fixed offsets (for_frags_t), as in the states pass */
    const cws w0 = make_cws(g, PC, PK, PK, hl, 0);
    const int64_t CH = ws_chunk_len(PC, PK, PK), lt = frag_t_at(v0, i0, PK),
                  lk = frag_t_at(v0, k0, PK); /* the lane's first dV', dS */
    const float *dOl = h.dO + frag_t_at(v0, i0, h.vs);
    for (int64_t c = g.nch - 1; c >= 0; c--) {
        const int64_t off = c * CH;
        const int L = chunk_rows(h, PC, c);
        /* dO at the lane's (v, token) positions, and G_last and G, gamma
           of token i0 + lane, loaded before the barrier; the decays' expf
           waits for them after the first products */
        float dof[TH / 8][4], gl = 0.f, gi = 0.f, gmi = 0.f;
        if (!copier) {
            const float *dO = dOl + c * PC * h.vs;
            for_frags_t<TH / 8>(v0, i0, h.vs, [&](int n, int e, int, int i, int64_t o) {
                dof[n][e] = i < L ? dO[o] : 0.f;
            });
            gl = w0.G[off + L - 1];
            gi = i0 + lane < L ? w0.G[off + i0 + lane] : 0.f;
            gmi = i0 + lane < L ? w0.gam[off + i0 + lane] : 0.f;
        }
        __syncthreads(); /* chunk c's stage is in; chunk c + 1's is free */
        if (copier) {
            if (c > 0)
                db_issue<IN>(sm, g, h, hl, c - 1);
            cp_commit();
            cp_wait<0>(); /* chunk c - 1, for the next barrier */
            continue;
        }
        const db_stage b = db_at(sm, c);
        const int used = warp_ntiles<TH / 8>(L, i0);

        for_frags_t<KH / 8>(
            v0, k0, PK, [&](int u, int e, int, int, int64_t o) { w0.dS[off + lk + o] = ds[u][e]; });
        /* dV'^T = s dO^T P + exp(G_last - G_i) (dS^T K^T), tV^T = dO^T diag(gamma),
           for the warp's tokens */
        uint32_t fa[DB_KS][4];
        {
            uint32_t own[DB_KS / NW][4];
            acc_to_a(own, ds);
            team_trade<DB_KS, NW>(fa, own, xs, team, tw);
        }
        float tv[TH / 8][4];
        zero_tiles(tv);
        if constexpr (std::is_same<IN, float>::value)
            warp_mm_regs_f32b(tv, fa, PK, used,
                              [&](int p, int j) { return b.K[(i0 + j) * DB_LDK + p]; });
        else /* the same bf16 pairs, already rounded (they are the stored values) */
            warp_mm_regs_add(tv, fa, reinterpret_cast<const uint32_t *>(b.K) + i0 * LDK, LDK, PK,
                             used);
        uint32_t fo[DB_KV][4];
        {
            uint32_t own[DB_KV / NW][4];
            acc_to_a(own, dof);
            team_trade<DB_KV, NW>(fo, own, xo, team, tw);
        }
        float dv[TH / 8][4];
        zero_tiles(dv);
        warp_mm_regs_add<TH / 8, DB_KV, true>(dv, fo, b.P + i0 / 2, LDC, L, used);
        const float gC = expf(gl), dec = i0 + lane < L ? expf(__fsub_rn(gl, gi)) : 0.f;
        for_frags_t<TH / 8>(v0, i0, PK, [&](int n, int e, int, int i, int64_t o) {
            const float dc = row_value(dec, dec, n, e & 1), gm = row_value(gmi, gmi, n, e & 1);
            float x = 0.f, y = 0.f;
            if (i < L) {
                x = fmaf(dc, tv[n][e], __fmul_rn(sc, dv[n][e]));
                w0.dVp[off + lt + o] = x;
                y = __fmul_rn(gm, dof[n][e]);
            }
            dv[n][e] = x, tv[n][e] = y;
        });
        /* dS^T <- s (tV^T Q) + gC dS^T - dV'^T W for the warp's features,
           two n-tiles at a time */
        uint32_t ft[DB_KV][4], fv[DB_KV][4];
        {
            uint32_t ot[DB_KV / NW][4], ov[DB_KV / NW][4];
            acc_to_a(ot, tv);
            acc_to_a(ov, dv);
            team_put<DB_KV, NW>(xt, ot, tw);
            team_put<DB_KV, NW>(xv, ov, tw);
            team_sync<NW>(team);
            team_get(ft, xt);
            team_get(fv, xv);
        }
#pragma unroll
        for (int m = 0; m < KH / 8; m += 2) {
            float q[2][4], x[2][4];
            zero_tiles(q);
            zero_tiles(x);
            warp_mm_regs_add(q, ft, b.Qt + (k0 + 8 * m) * LDC, LDC, L, 2);
            warp_mm_regs_add<2, DB_KV, true>(x, fv, b.W + (k0 + 8 * m) / 2, LDK, L, 2);
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    ds[m + r][e] = __fsub_rn(
                        __fadd_rn(__fmul_rn(sc, q[r][e]), __fmul_rn(gC, ds[m + r][e])), x[r][e]);
        }
    }
    if (h.dh0 && !copier)
        for_frags<KH / 8>(v0, k0,
                          [&](int u, int e, int v, int k) { h.dh0[k * PK + v] = ds[u][e]; });
}

} // namespace ra_gpu

using ra_gpu::group;

/* A block takes 16 W state columns of a head, in W teams of NW warps;
   its shared memory holds one block an SM. */
template <int W, int NW> static cudaError_t db_launch(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    const unsigned blocks = (unsigned)(g->nh * (PK / (16 * W)));
    return reads_stored_bf16(a) ? launch_blocks(gdn_chunk_dstates_bf16_kernel<W, NW, uint16_t>,
                                                blocks, 32 * (NW * W + 1), db_words<W>(), g, a)
                                : launch_blocks(gdn_chunk_dstates_bf16_kernel<W, NW, float>, blocks,
                                                32 * (NW * W + 1), db_words<W>(), g, a);
}

/* When the grid of two teams a block fits one wave, two teams of four
   warps; else four teams of two, so that it stays one block an SM.
   With one warp per 16 columns, two a block ran faster than four at the
   first bench shape (ncu, 64 blocks of four warps against 128 of two:
   1.007 and 0.882 ms). */
cudaError_t ra_gpu_gdn_chunk_dstates_bf16(const ra_gpu_gdn_args *a, const group *g)
{
    bool one = false;
    const cudaError_t e = ra_gpu::fits_one_wave(g->nh * (ra_gpu::PK / 32), one);
    if (e != cudaSuccess)
        return e;
    return one ? db_launch<2, 4>(a, g) : db_launch<4, 2>(a, g);
}

int64_t ra_gpu_gdn_chunk_dstates_bf16_bytes(void)
{
    return (int64_t)ra_gpu::db_words<4>() * (int64_t)sizeof(uint32_t);
}
