/* Chunked CUDA gdn: the states pass of the production head in bf16, the state in registers. */

/*
 * gdn_chunk_states_kernel (gdn_chunk_pass.cu) for the group::wpairs
 * configuration.  There a block of 256 threads keeps a 16-column tile of
 * the state in shared memory and meets at six barriers per chunk.  Here
 * a team of warps runs the recursion on its own 16 columns, transposed,
 * with S^T (its columns as rows, the 128 features as columns) in mma
 * accumulator tiles:
 *
 *   V'^T = U^T - S'^T W^T    A = S'^T: the accumulators rounded to bf16
 *                            where they are (acc_to_a); B^T = W, the
 *                            prep's pair tile cws::Wp;
 *   S^T  = gC S^T + V'd^T K  A = V'd^T, again from accumulators;
 *                            B^T = K^T, the prep's pair tile cws::Ktp;
 *
 * (V'd: V' with row i decayed by exp(G_last - G_i)), so a chunk needs
 * nothing from the other teams.  S' and V' go to the workspace in fp32
 * for the backward's kernels and/or, for the output kernel, as its
 * fragment tiles S'^T and V'^T (cws::Stp, cws::Vtp; pair_tile.cuh):
 * their A fragments, a warp's k-step in one 512-byte store.  As pair tiles
 * (rows of words along the features or tokens) they took 24 scattered
 * 4-byte stores a lane and chunk, and the next chunk's first instruction
 * waited on registers those stores and the U loads behind them still
 * held (17% of the pass's stall samples, ncu); as fragment tiles the
 * pass takes 0.273 ms at the first bench shape, against 0.347.  The
 * block's teams share only the staged tiles of W and K^T, which a warp
 * of their own copies (cp.async) STAGES - 1 chunks ahead; G is read from
 * global memory.
 *
 * Bits: every output element sees the same bf16 operand pairs, summed in
 * the same k-steps from the same start (zero for V', the decayed state
 * for S), as in the general kernel; transposing a product only swaps the
 * roles of the mma's A and B operands.  The elementwise steps are its
 * fp32 operations.  A last chunk of L < 64 rows reads rows < L of W
 * (the rest are zeroed) and takes the k-steps of 16 while k0 < L, as
 * blk_mm_direct does there.
 */

#include <cstdint>

#include "gpu/cp_async.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_kernels.h"
#include "gpu/pair_tile.cuh"

namespace ra_gpu
{

/* Warps per block: SB_TEAMS teams of NW warps (2 or 4) run the
   recursion on 16 state columns each, one more copies the operands
   (cp.async) STAGES - 1 chunks ahead.  A stage is W (64 rows along the
   features) and K^T (128 rows along the tokens): 35 KB.  Warp tw of a
   team keeps the state's features 128 / NW tw .. 128 / NW (tw + 1) - 1
   and forms V' for the tokens 64 / NW tw .., so each product is 1 / NW
   of a warp's; the team trades the A fragments the others need (S' for
   V', V'd for the state) through shared memory, a uint4 a lane per
   k-step. */
constexpr int SB_TEAMS = 2, SB_COLS = 16 * SB_TEAMS;
template <int NW> constexpr int sb_threads() { return 32 * (NW * SB_TEAMS + 1); }
constexpr int SB_W = PC * LDK, SB_KT = PK * LDC, SB_STAGE = SB_W + SB_KT;
constexpr int SB_KS = PK / 16, SB_KV = PC / 16; /* k-steps of S' (features), V'd (tokens) */
constexpr int SB_XW = (SB_KS + SB_KV) * 32 * 4; /* a team's exchange, words */
template <int STAGES> constexpr int sb_words() { return STAGES * SB_STAGE + SB_TEAMS * SB_XW; }

/* Starts copying chunk c's W and K^T into stage buf (the copying warp
   calls it); K^T comes zero-padded from the prep. */
__device__ __forceinline__ void sb_issue(uint32_t *buf, const group &g, int64_t hl, int64_t c,
                                         int L)
{
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int lane = threadIdx.x & 31;
    const unsigned ks = smem_addr(buf) + 4u * SB_W;
    constexpr int KQ = PC / 8; /* 16-byte copies a row */
    warp_stage_w(buf, w.Wp, L);
#pragma unroll 4
    for (int e = lane; e < PK * KQ; e += 32) {
        const int r = e / KQ, x = 4 * (e % KQ);
        cp_async16_s(ks + 4u * (r * LDC + x), w.Ktp + r * LDC + x);
    }
}

/* STAGES: 3 when the grid is one block per SM, 2 for two blocks per SM;
   NW: warps a team; GRAD: group::bwd, S' and V' in fp32; OUT: group::out,
   S'^T and V'^T as the output kernel's fragment tiles.  They are template
   parameters: with the storage chosen at run time, per element, the
   backward group's states pass took 0.408 ms at the first bench shape,
   against 0.317 as a template parameter (ncu, one call). */
template <int STAGES, bool GRAD, bool OUT, int NW>
__global__ void __launch_bounds__(sb_threads<NW>(), STAGES == 2 ? 2 : 1)
    gdn_chunk_states_bf16_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    constexpr int TILES = PK / SB_COLS, KH = PK / NW, TH = PC / NW; /* a warp's features, tokens */
    const int64_t hl = blockIdx.x / TILES;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, team = warp / NW, tw = warp % NW;
    const bool copier = warp == NW * SB_TEAMS;
    /* the team's first column: its accumulator rows are v0 + g, v0 + g + 8 */
    const int v0 = (int)(blockIdx.x % TILES) * SB_COLS + 16 * team;
    const int k0 = KH * tw, i0 = TH * tw; /* the warp's first feature and token */
    uint4 *xs = reinterpret_cast<uint4 *>(sm + STAGES * SB_STAGE + team * SB_XW),
          *xv = xs + SB_KS * 32;
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    /* S^T, element (v, k) of state row k, column v, in s[(k - k0) / 8] */
    float s[KH / 8][4];
    /* a chunk's U at the lane's V'^T positions and its gates G_last and
       G_(i0 + lane), loaded a chunk ahead: the decays' expf and the V'
       step would otherwise wait a memory latency every chunk */
    float u[TH / 8][4], gl = 0.f, gi = 0.f;
    /* Chunk c's workspace is chunk 0's pointers plus c * CH floats, and
       the lane's U loads go from one address at constant offsets
       (for_frags_t): address arithmetic, per load and through make_cws
       each chunk, was 30% of the pass's instructions (ncu: integer
       multiply-adds and LEAs). */
    const cws w0 = make_cws(g, PC, PK, PK, hl, 0);
    const int64_t CH = ws_chunk_len(PC, PK, PK);
    const int64_t lt = frag_t_at(v0, i0, PK), lk = frag_t_at(v0, k0, PK); /* the lane's first */
    const auto load_chunk = [&](int64_t off, int L) {
        const float *ub = w0.U + off + lt;
        for_frags_t<TH / 8>(v0, i0, PK, [&](int n, int e, int, int i, int64_t o) {
            u[n][e] = i < L ? ub[o] : 0.f;
        });
        gl = w0.G[off + L - 1];
        gi = i0 + lane < L ? w0.G[off + i0 + lane] : 0.f;
    };
    if (copier) {
#pragma unroll
        for (int c = 0; c < STAGES - 1; c++) {
            if (c < g.nch)
                sb_issue(sm + c * SB_STAGE, g, hl, c, chunk_rows(h, PC, c));
            cp_commit();
        }
        cp_wait<STAGES - 2>(); /* chunk 0 */
    } else {
        for_frags<KH / 8>(
            v0, k0, [&](int uu, int e, int v, int k) { s[uu][e] = h.h0 ? h.h0[k * PK + v] : 0.f; });
        load_chunk(0, chunk_rows(h, PC, 0));
    }
    for (int64_t c = 0; c < g.nch; c++) {
        const int64_t off = c * CH;
        const int L = chunk_rows(h, PC, c);
        __syncthreads(); /* chunk c's stage is in; chunk c - 1's is free */
        if (copier) {
            const int64_t n = c + STAGES - 1;
            if (n < g.nch)
                sb_issue(sm + (n % STAGES) * SB_STAGE, g, hl, n, chunk_rows(h, PC, n));
            cp_commit();
            cp_wait<STAGES - 2>(); /* chunk c + 1, for the next barrier */
            continue;
        }
        /* the decays exp(G_last - G_i) of the warp's tokens, i = i0 + lane */
        const float gC = expf(gl), dec = i0 + lane < L ? expf(__fsub_rn(gl, gi)) : 0.f;
        const uint32_t *Wb = sm + (c % STAGES) * SB_STAGE, *Kb = Wb + SB_W;

        /* S' = st(S): the A fragments (the team's parts traded), and the
           workspace's copy of this warp's part (the bf16-rounded values) */
        uint32_t sa[SB_KS][4];
        {
            uint32_t own[SB_KS / NW][4];
            acc_to_a(own, s);
            if (GRAD)
                for_frags_t<KH / 8>(v0, k0, PK, [&](int uu, int e, int, int, int64_t o) {
                    const uint32_t x = own[uu / 2][(uu & 1) * 2 + (e >> 1)];
                    w0.Sst[off + lk + o] = (e & 1) ? bf16_hi(x) : bf16_lo(x);
                });
            if (OUT) /* this warp's k-steps of S'^T as the output's fragment tile */
                store_frags(frag_tile<SB_KS>(reinterpret_cast<uint4 *>(w0.Stp + off), v0),
                            SB_KS / NW * tw, own);
            team_trade<SB_KS, NW>(sa, own, xs, team, tw);
        }
        /* V'^T = U^T - S'^T W^T for the warp's tokens below L */
        float p[TH / 8][4];
        zero_tiles(p);
        warp_mm_regs_add(p, sa, Wb + i0 * LDK, LDK, PK, warp_ntiles<TH / 8>(L, i0));
        float vt[TH / 8][4]; /* V', zero from row L */
        for_frags_t<TH / 8>(v0, i0, PK, [&](int n, int e, int, int i, int64_t o) {
            const float dc = row_value(dec, dec, n, e & 1);
            float vp = 0.f;
            if (i < L) {
                vp = __fsub_rn(u[n][e], p[n][e]);
                if (GRAD)
                    w0.Vp[off + lt + o] = vp;
            }
            vt[n][e] = vp;
            p[n][e] = __fmul_rn(vp, dc);
        });
        if (OUT) { /* this warp's k-steps of V'^T (tokens) as the output's fragment tile */
            uint32_t vf[TH / 16][4];
            acc_to_a(vf, vt);
            store_frags(frag_tile<SB_KV>(reinterpret_cast<uint4 *>(w0.Vtp + off), v0), TH / 16 * tw,
                        vf);
        }
        if (c + 1 < g.nch)
            load_chunk(off + CH, chunk_rows(h, PC, c + 1));
        /* S^T = gC S^T + V'd^T K over the first L tokens, for the warp's
           features */
        uint32_t va[SB_KV][4];
        {
            uint32_t own[SB_KV / NW][4];
            acc_to_a(own, p);
            team_trade<SB_KV, NW>(va, own, xv, team, tw);
        }
#pragma unroll
        for (int uu = 0; uu < KH / 8; uu++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[uu][e] = __fmul_rn(s[uu][e], gC);
        warp_mm_regs_add(s, va, Kb + k0 * LDC, LDC, L, KH / 8);
    }
    if (h.ht && !copier)
        for_frags<KH / 8>(v0, k0,
                          [&](int uu, int e, int v, int k) { h.ht[k * PK + v] = s[uu][e]; });
}

} // namespace ra_gpu

using ra_gpu::group;

template <int STAGES, int NW> static cudaError_t sb_launch(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    const unsigned blocks = (unsigned)(g->nh * (PK / SB_COLS));
    const auto go = [&](auto kernel) {
        return launch_blocks(kernel, blocks, sb_threads<NW>(), sb_words<STAGES>(), g, a);
    };
    if (!g->bwd)
        return go(gdn_chunk_states_bf16_kernel<STAGES, false, true, NW>);
    return g->out ? go(gdn_chunk_states_bf16_kernel<STAGES, true, true, NW>)
                  : go(gdn_chunk_states_bf16_kernel<STAGES, true, false, NW>);
}

/* When the grid fits one block per SM: three stages and teams of four
   warps, eight computing warps an SM (with teams of two, one warp a
   scheduler ran each chunk's chain of instructions alone); else two
   stages and teams of two, so that two blocks fit an SM. */
cudaError_t ra_gpu_gdn_chunk_states_bf16(const ra_gpu_gdn_args *a, const group *g)
{
    bool one = false;
    const cudaError_t e = ra_gpu::fits_one_wave(g->nh * (ra_gpu::PK / ra_gpu::SB_COLS), one);
    if (e != cudaSuccess)
        return e;
    return one ? sb_launch<3, 4>(a, g) : sb_launch<2, 2>(a, g);
}

int64_t ra_gpu_gdn_chunk_states_bf16_bytes(void)
{
    return (int64_t)ra_gpu::sb_words<3>() * (int64_t)sizeof(uint32_t);
}
