/* Chunked CUDA gdn: the states pass of the production head in bf16, the state in registers. */

/*
 * gdn_chunk_states_kernel (gdn_chunk_pass.cu) for the group::wpairs
 * configuration.  There a block of 256 threads keeps a 16-column tile of
 * the state in shared memory and meets at six barriers per chunk.  Here
 * each warp runs the recursion on its own 16 columns, transposed, with
 * S^T (its columns as rows, the 128 features as columns) in mma
 * accumulator tiles:
 *
 *   V'^T = U^T - S'^T W^T    A = S'^T: the accumulators rounded to bf16
 *                            where they are (acc_to_a); B^T = W, the
 *                            prep's pair tile cws::Wp;
 *   S^T  = gC S^T + V'd^T K  A = V'd^T, again from accumulators;
 *                            B^T = K^T, the prep's pair tile cws::Ktp;
 *
 * (V'd: V' with row i decayed by exp(G_last - G_i)), so a chunk needs
 * nothing from the other warps.  The block's warps share only the staged
 * tiles of W and K^T, which a warp of their own copies (cp.async)
 * SB_STAGES - 1 chunks ahead; G is read from global memory.
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

/* Warps per block: SB_WARPS run the recursion on 16 state columns each,
   one more copies the operands (cp.async) SB_STAGES - 1 chunks ahead.
   A stage is W (64 rows along the features) and K^T (128 rows along the
   tokens): 35 KB, so two blocks of three stages fit an SM. */
constexpr int SB_WARPS = 2, SB_THREADS = 32 * (SB_WARPS + 1), SB_COLS = 16 * SB_WARPS;
constexpr int SB_STAGES = 3;
constexpr int SB_W = PC * LDK, SB_KT = PK * LDC, SB_STAGE = SB_W + SB_KT;
constexpr int SB_WORDS = SB_STAGES * SB_STAGE;

/* Starts copying chunk c's W and K^T into stage buf (the copying warp
   calls it).  W's rows at or past L, which the prep leaves unwritten,
   are zeroed instead; K^T comes zero-padded from the prep. */
__device__ __forceinline__ void sb_issue(uint32_t *buf, const group &g, int64_t hl, int64_t c,
                                         int L)
{
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int lane = threadIdx.x & 31;
    uint32_t *Wb = buf, *Kb = buf + SB_W;
    constexpr int WQ = PK / 8, KQ = PC / 8; /* 16-byte copies a row */
#pragma unroll 4
    for (int e = lane; e < PC * WQ; e += 32) {
        const int r = e / WQ, x = 4 * (e % WQ);
        if (r < L)
            cp_async16(Wb + r * LDK + x, w.Wp + r * LDK + x);
        else
            *reinterpret_cast<uint4 *>(Wb + r * LDK + x) = make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll 4
    for (int e = lane; e < PK * KQ; e += 32) {
        const int r = e / KQ, x = 4 * (e % KQ);
        cp_async16(Kb + r * LDC + x, w.Ktp + r * LDC + x);
    }
}

__global__ void __launch_bounds__(SB_THREADS, 1)
    gdn_chunk_states_bf16_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    constexpr int TILES = PK / SB_COLS;
    const int64_t hl = blockIdx.x / TILES;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const bool copier = warp == SB_WARPS;
    /* the warp's first column: its accumulator rows are v0 + g, v0 + g + 8 */
    const int v0 = (int)(blockIdx.x % TILES) * SB_COLS + 16 * warp;
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    /* S^T, element (v, k) of state row k, column v, in s[k / 8] */
    float s[PK / 8][4];
    /* a chunk's U at the lane's V'^T positions and its gates G_last,
       G_lane, G_lane+32, loaded a chunk ahead: the decays' expf and the
       V' step would otherwise wait a memory latency every chunk */
    float u[PC / 8][4], gl = 0.f, ga = 0.f, gb = 0.f;
    const auto load_chunk = [&](int64_t c) {
        const cws w = make_cws(g, PC, PK, PK, hl, c);
        const int L = chunk_rows(h, PC, c);
        for_frags<PC / 8>(
            v0, 0, [&](int n, int e, int v, int i) { u[n][e] = i < L ? w.U[i * PK + v] : 0.f; });
        gl = w.G[L - 1];
        ga = lane < L ? w.G[lane] : 0.f;
        gb = lane + 32 < L ? w.G[lane + 32] : 0.f;
    };
    if (copier) {
#pragma unroll
        for (int c = 0; c < SB_STAGES - 1; c++) {
            if (c < g.nch)
                sb_issue(sm + c * SB_STAGE, g, hl, c, chunk_rows(h, PC, c));
            cp_commit();
        }
        cp_wait<SB_STAGES - 2>(); /* chunk 0 */
    } else {
        for_frags<PK / 8>(
            v0, 0, [&](int uu, int e, int v, int k) { s[uu][e] = h.h0 ? h.h0[k * PK + v] : 0.f; });
        load_chunk(0);
    }
    for (int64_t c = 0; c < g.nch; c++) {
        const cws w = make_cws(g, PC, PK, PK, hl, c);
        const int L = chunk_rows(h, PC, c);
        __syncthreads(); /* chunk c's stage is in; chunk c - 1's is free */
        if (copier) {
            const int64_t n = c + SB_STAGES - 1;
            if (n < g.nch)
                sb_issue(sm + (n % SB_STAGES) * SB_STAGE, g, hl, n, chunk_rows(h, PC, n));
            cp_commit();
            cp_wait<SB_STAGES - 2>(); /* chunk c + 1, for the next barrier */
            continue;
        }
        /* the row decays exp(G_last - G_i) of rows lane and lane + 32 */
        const float gC = expf(gl), dec0 = lane < L ? expf(__fsub_rn(gl, ga)) : 0.f,
                    dec1 = lane + 32 < L ? expf(__fsub_rn(gl, gb)) : 0.f;
        const uint32_t *Wb = sm + (c % SB_STAGES) * SB_STAGE, *Kb = Wb + SB_W;

        /* S' = st(S): the A fragments, and the workspace's copy (the
           pairs' halves are the bf16-rounded values) */
        uint32_t sa[PK / 16][4];
        acc_to_a(sa, s);
        for_frags<PK / 8>(v0, 0, [&](int uu, int e, int v, int k) {
            const uint32_t x = sa[uu / 2][(uu & 1) * 2 + (e >> 1)];
            w.Sst[k * PK + v] = __uint_as_float((e & 1) ? x & 0xffff0000u : x << 16);
        });
        /* V'^T = U^T - S'^T W^T over the first L tokens */
        float p[PC / 8][4];
        zero_tiles(p);
        warp_mm_regs_add(p, sa, Wb, LDK, PK, (L + 7) / 8);
        for_frags<PC / 8>(v0, 0, [&](int n, int e, int v, int i) {
            const float dec = row_value(dec0, dec1, n, e & 1);
            float vd = 0.f;
            if (i < L) {
                const float vp = __fsub_rn(u[n][e], p[n][e]);
                w.Vp[i * PK + v] = vp;
                vd = __fmul_rn(vp, dec);
            }
            p[n][e] = vd;
        });
        if (c + 1 < g.nch)
            load_chunk(c + 1);
        /* S^T = gC S^T + V'd^T K over the first L tokens */
        uint32_t va[PC / 16][4];
        acc_to_a(va, p);
#pragma unroll
        for (int uu = 0; uu < PK / 8; uu++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[uu][e] = __fmul_rn(s[uu][e], gC);
        warp_mm_regs_add(s, va, Kb, LDC, L, PK / 8);
    }
    if (h.ht && !copier)
        for_frags<PK / 8>(v0, 0, [&](int uu, int e, int v, int k) { h.ht[k * PK + v] = s[uu][e]; });
}

} // namespace ra_gpu

using ra_gpu::group;

cudaError_t ra_gpu_gdn_chunk_states_bf16(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return launch_blocks(gdn_chunk_states_bf16_kernel, (unsigned)(g->nh * (PK / SB_COLS)),
                         SB_THREADS, SB_WORDS, g, a);
}

int64_t ra_gpu_gdn_chunk_states_bf16_bytes(void)
{
    return (int64_t)ra_gpu::SB_WORDS * (int64_t)sizeof(uint32_t);
}
