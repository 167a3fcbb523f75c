/* Chunked CUDA gdn: bf16 prep and output of the production head, tiles in shared memory. */

/*
 * chunk_prep + chunk_p and chunk_output (gdn_chunk.cuh) for the
 * configuration the bench shapes run: bf16 operands, chunk 64,
 * K = V = 128, T by forward substitution.  The general kernels pass every
 * intermediate (Kb, A, D, T, Y, X, QS, about 260 KB per chunk with W, U,
 * P) through the fp32 workspace and stage each product's panels again;
 * here each kernel stages its operands once in shared memory as the bf16
 * pair tiles of pair_tile.cuh and keeps the products in registers.  Only
 * what later kernels read goes to the workspace: prep writes G, gamma and
 * U, P as the output kernel's pair tile (cws::Pp; fp32 P too when the
 * backward's kernels read it), W and K^T as the pair tiles the
 * states pass reads (cws::Wp, cws::Ktp: 16 KB each to copy per chunk and
 * column tile instead of 32, and no conversion in its fragments; no
 * kernel of the group reads W in fp32; the dstates pass reads W's tile
 * too), and A, T and the pair tiles Q^T, P the dstates pass and grads
 * (gdn_chunk_bwd_bf16.cu, which forms
 * Kb, Y, X and D itself) read too when the group runs the backward
 * (group::bwd); output copies P, S'^T and V'^T as prep and the states
 * pass leave them (cws::Pp, the pair tile; Stp, Vtp, fragment tiles: 57 KB
 * a chunk instead of 112 KB of fp32; where make_cws puts them in a group
 * that runs the backward too) and writes o alone.
 *
 * The arithmetic is that of the general kernels, so the bits are:
 *   - every elementwise value is the same fp32 operation (__fmul_rn,
 *     __fsub_rn, __fadd_rn, expf) on the same inputs;
 *   - the products see the same bf16 operands in the same k-steps from
 *     zero (warp_mm_pairs): A and P over the 128 features, W and U over
 *     the chunk's L tokens, QS over the state's 128 rows, P V' over L;
 *   - T comes from inv_fwdsubst_pairs, the chains of inv_fwdsubst_smem (the
 *     routine chunk_prep calls) in another schedule.
 */

#include "gpu/cp_async.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_kernels.h"
#include "gpu/pair_tile.cuh"

namespace ra_gpu
{

/* prep: 128 threads, each warp owning 16 rows of every product; shared
   memory (70 KB, three blocks per SM):
     vec  G, gamma, beta of the chunk's 64 tokens;
     r1   K, Kb, Q along the features (for A and P); then T along the
          tokens and Y^T, X^T (for W and U);
     r3   A, masked, in inv_fwdsubst_pairs' layout (fp32).
   Reading stored inputs, the block copies V as stored into r1 from word
   PREP_VS while the substitution runs (and writes T from word PREP_TS),
   then forms Y^T from K's tile in r1 into r3 and X^T from V's into r1:
   no global load waits after the substitution. */
constexpr int PREP_THREADS = 2 * PC, PREP_BLOCKS = 3, LDA = PC + 4;
constexpr int PREP_VEC = 3 * PC, PREP_R1 = 3 * PC * LDK;
constexpr int PREP_R3 = (PC * LDA > PK * LDC) ? PC * LDA : PK * LDC; /* A, or Y^T */
constexpr int PREP_WORDS = PREP_VEC + PREP_R1 + PREP_R3;
constexpr int PREP_VS = PK * LDC, PREP_TS = PREP_R1 - PC * LDC;
static_assert(PC * LDC + 2 * PK * LDC <= PREP_R1, "T, Y^T and X^T fit r1");
static_assert(PC * LDK <= PREP_VS && PREP_VS + PC * LDK <= PREP_TS && PREP_VS % 4 == 0,
              "stored V above K's tile and X^T, below T, 16-byte aligned");
static_assert(PREP_VEC % 2 == 0, "8-byte aligned pair tiles (put_row_pairs)");
static_assert(PREP_VEC % 4 == 0 && PREP_TS % 4 == 0 && LDC % 4 == 0,
              "T's tile in 16-byte aligned rows (read back as uint4)");

/* BWD: the group runs the backward (group::bwd), a kernel of its own so
   that the forward's carries none of the backward's code; IN: float or
   uint16_t, q, k and v read widened or as stored (stored()). */
template <bool BWD, typename IN>
__global__ void __launch_bounds__(PREP_THREADS, PREP_BLOCKS)
    gdn_chunk_prep_bf16_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    float *G = reinterpret_cast<float *>(sm), *gam = G + PC, *bet = gam + PC;
    uint32_t *r1 = sm + PREP_VEC;
    float *r3 = reinterpret_cast<float *>(r1 + PREP_R1);
    uint32_t *Kw = r1, *KBw = Kw + PC * LDK, *Qw = KBw + PC * LDK;
    constexpr int NT = PREP_THREADS;

    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int L = chunk_rows(h, PC, c), warp = threadIdx.x >> 5, i0 = 16 * warp;
    const int64_t t0 = c * PC;
    const IN *k = stored<IN>(h.k, h.kb) + t0 * h.qs, *q = stored<IN>(h.q, h.qb) + t0 * h.qs,
             *v = stored<IN>(h.v, h.vb) + t0 * h.vs;

    constexpr bool ST = !std::is_same<IN, float>::value;
    if constexpr (ST) { /* K and Q as stored, in flight while beta and g load */
        stage_rows_as<PC, PK, NT>(Kw, k, h.qs, L);
        stage_rows_as<PC, PK, NT>(Qw, q, h.qs, L);
        cp_commit();
    }
    stage_gates<NT>(bet, G, h, t0, L);
    /* K, Kb = diag(beta) K from one load, Q; stored, Kb from K's tile
       (the same products) */
    if constexpr (ST) {
        cp_wait<0>();
        __syncthreads();
        scale_pairs<PC, PK, NT>(KBw, Kw, [&](int r, int) { return bet[r]; });
    } else {
        load_rows4<PC, PK, NT>(k, h.qs, L, PK, [&](int r, int col, float4 x) {
            put_row_pairs<LDK>(Kw, r, col, x, L, PK, same4);
            put_row_pairs<LDK>(KBw, r, col, x, L, PK,
                               [&](int i, float4 y) { return scale4(y, bet[i]); });
        });
        stage_rows<PC, PK, NT>(Qw, q, h.qs, L, PK, same4);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < PC; i += NT) {
        gam[i] = i < L ? expf(G[i]) : 0.f;
        if (i < L)
            w.G[i] = G[i], w.gam[i] = gam[i];
    }

    /* A = Kb K^T and P = Q K^T; the warp's column tiles past its diagonal
       block (j > i: zero after the masks) are not computed. */
    {
        const int lane = threadIdx.x & 31, gq = lane >> 2, t = lane & 3, used = 2 * warp + 2;
        float da[8][4], dp[8][4];
        warp_mm_pairs<8>(da, KBw + i0 * LDK, LDK, Kw, LDK, PK, used);
        warp_mm_pairs<8>(dp, Qw + i0 * LDK, LDK, Kw, LDK, PK, used);
#pragma unroll
        for (int u = 0; u < 8; u++) {
            float pm[4], am[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = i0 + gq + 8 * (e >> 1), j = 8 * u + 2 * t + (e & 1);
                const float dm = decay(G, L, i, j);
                am[e] = (i < L && j < i) ? __fmul_rn(da[u][e], dm) : 0.f;
                r3[pairs_at<PC, LDA>(i, j)] = am[e];
                pm[e] = (i < L && j <= i) ? __fmul_rn(dp[u][e], dm) : 0.f;
            }
            /* P as the pair tile the output kernel and, in the
               backward, the dstates pass (cws::Pbp, the same words)
               read, every row and column; in the backward A and P in
               fp32 too, whole (zero outside j <= i < L), two columns a
               store */
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int i = i0 + gq + 8 * hh, j = 8 * u + 2 * t;
                w.Pp[i * LDC + j / 2] = bf16x2_rn(pm[2 * hh], pm[2 * hh + 1]);
                if (BWD) {
                    *reinterpret_cast<float2 *>(w.P + i * PC + j) =
                        make_float2(pm[2 * hh], pm[2 * hh + 1]);
                    *reinterpret_cast<float2 *>(w.A + i * PC + j) =
                        make_float2(am[2 * hh], am[2 * hh + 1]);
                }
            }
        }
    }
    if constexpr (BWD && ST) /* Q^T for the dstates pass, from Q's tile before T goes over it */
        stage_cols<PC, PK, NT>(w.Qtp, reinterpret_cast<const uint16_t *>(Qw), 2 * LDK, L, same4);
    __syncthreads();
    if constexpr (ST) { /* V as stored, for X^T after the substitution */
        stage_rows_as<PC, PK, NT>(r1 + PREP_VS, v, h.vs, L);
        cp_commit();
    }

    /* T row by row, each row's pairs (j, j + 1) from the lanes of the even
       column: the tile along the tokens.  Then Y = diag(gamma) Kb,
       X = diag(beta) V, K^T and Q^T, which, from global memory, the warps
       of the later columns (less of the substitution) start first. */
    uint32_t *Tw = ST ? r1 + PREP_TS : r1,
             *Yw = ST ? reinterpret_cast<uint32_t *>(r3) : r1 + PC * LDC,
             *Xw = ST ? r1 : r1 + PC * LDC + PK * LDC;
    {
        const int j = threadIdx.x >> 1, p = threadIdx.x & 1;
        inv_fwdsubst_pairs<PC, LDA>(r3, [&](int i, float x0) {
            const float x1 = __shfl_down_sync(0xffffffffu, x0, 2); /* column j + 1 */
            if (p != (i & 1) || (j & 1))
                return;
            Tw[i * LDC + j / 2] = bf16x2_rn(x0, x1);
        });
    }
    if constexpr (ST)
        __syncthreads(); /* Y^T goes over A */
    /* K's and V's rows: as stored in shared memory, or from global */
    const auto kr = [&]() {
        if constexpr (ST)
            return reinterpret_cast<const uint16_t *>(Kw);
        else
            return k;
    }();
    const auto vr = [&]() {
        if constexpr (ST)
            return reinterpret_cast<const uint16_t *>(r1 + PREP_VS);
        else
            return v;
    }();
    const int kld = ST ? 2 * LDK : h.qs, vld = ST ? 2 * LDK : h.vs;
    load_row_pairs4<PC, PK, NT>(kr, kld, L, [&](int p, int col, float4 x0, float4 x1) {
        put_col_pairs<LDC>(Yw, p, col, x0, x1, L,
                           [&](int r, float4 y) { return scale4(scale4(y, bet[r]), gam[r]); });
        put_col_pairs<LDC>(w.Ktp, p, col, x0, x1, L, same4); /* for the states pass */
    });
    if constexpr (BWD && !ST)
        stage_cols<PC, PK, NT>(w.Qtp, q, h.qs, L, same4); /* for the dstates pass */
    if constexpr (ST) {
        cp_wait<0>();
        __syncthreads(); /* X^T goes over K's tile */
    }
    stage_cols<PC, PK, NT>(Xw, vr, vld, L, [&](int r, float4 x) { return scale4(x, bet[r]); });
    __syncthreads();

    /* W = st(T Y) (its pair tiles), U = st(T X) over the L tokens */
    const auto st_bf16 = [](int, int, float x) { return bf16_round(x); };
    float d[16][4];
    warp_mm_pairs<16>(d, Tw + i0 * LDC, LDC, Yw, LDC, L, 16);
    store_pairs<LDK>(w.Wp, d, i0, 0, L); /* for both passes */
    warp_mm_pairs<16>(d, Tw + i0 * LDC, LDC, Xw, LDC, L, 16);
    store_rows(w.U, PK, d, i0, 0, L, st_bf16);
    /* T for the gradients kernel, st(T) everywhere (it reads T as bf16,
       its rows and columns below L): the tile's words widened, written
       after the substitution rather than from its chain */
    if (BWD)
        for (int e = threadIdx.x; e < PC * PC / 8; e += NT) {
            const int i = e / (PC / 8), jw = 4 * (e % (PC / 8)); /* words jw .. jw + 3 */
            const uint4 x = *reinterpret_cast<const uint4 *>(Tw + i * LDC + jw);
            float4 *t = reinterpret_cast<float4 *>(w.T + i * PC + 2 * jw);
            t[0] = make_float4(bf16_lo(x.x), bf16_hi(x.x), bf16_lo(x.y), bf16_hi(x.y));
            t[1] = make_float4(bf16_lo(x.z), bf16_hi(x.z), bf16_lo(x.w), bf16_hi(x.w));
        }
}

/* output: 256 threads; warp w owns rows 16 (w % 4) and the value columns
   64 (w / 4) of o.  Shared memory (74 KB, two blocks per SM): Q along
   the features, S'^T as the states pass leaves it (a fragment tile over
   the state rows, for Q S'), P along the tokens and V'^T (a fragment tile
   over the tokens, for P V'), gamma.  The three tiles come by cp.async,
   all in flight while the block stages Q: copied through registers eight
   loads at a time, their stores' waits for the loads were a quarter of
   the kernel's stall samples (ncu). */
constexpr int OUT_THREADS = 256, OUT_BLOCKS = 2;
constexpr int OUT_SF = PK * PK / 2, OUT_VF = PK * PC / 2; /* the fragment tiles' words */
constexpr int OUT_WORDS = PC * LDK + OUT_SF + PC * LDC + OUT_VF + PC;

/* IN: as the prep's. */
template <typename IN>
__global__ void __launch_bounds__(OUT_THREADS, OUT_BLOCKS)
    gdn_chunk_output_bf16_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    uint32_t *Qw = sm, *Sf = Qw + PC * LDK, *Pw = Sf + OUT_SF, *Vf = Pw + PC * LDC;
    float *gam = reinterpret_cast<float *>(Vf + OUT_VF);
    constexpr int NT = OUT_THREADS;

    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int L = chunk_rows(h, PC, c), warp = threadIdx.x >> 5;
    const int i0 = 16 * (warp & 3), j0 = 64 * (warp >> 2);
    const int64_t t0 = c * PC;
    const float s = h.scale;

    {
        /* a warp's share: rows of P, 512-byte runs of the fragment tiles */
        constexpr int RP = PC / (NT / 32), RS = OUT_SF / 128 / (NT / 32),
                      RV = OUT_VF / 128 / (NT / 32);
        warp_copy_rows<RS, 32, 128>(Sf + warp * RS * 128, w.Stp + warp * RS * 128, 128);
        warp_copy_rows<RP, PC / 8, LDC>(Pw + warp * RP * LDC, w.Pp + warp * RP * LDC, LDC);
        warp_copy_rows<RV, 32, 128>(Vf + warp * RV * 128, w.Vtp + warp * RV * 128, 128);
        stage_rows_as<PC, PK, NT>(Qw, stored<IN>(h.q, h.qb) + t0 * h.qs, h.qs, L);
        cp_commit();
    }
    for (int i = threadIdx.x; i < PC; i += NT)
        gam[i] = i < L ? w.gam[i] : 0.f;
    cp_wait<0>();
    __syncthreads();

    /* o = (gamma * (Q S')) s + (P V') s, column half by column half of
       the warp's 64 to hold 32 accumulators per product */
    float *o = h.o + t0 * h.vs;
#pragma unroll 1
    for (int jh = j0; jh < j0 + 64; jh += 32) {
        float qs[4][4], pv[4][4];
        const uint4 *sf = frag_tile<PK / 16>(reinterpret_cast<const uint4 *>(Sf), jh),
                    *vf = frag_tile<PC / 16>(reinterpret_cast<const uint4 *>(Vf), jh);
        warp_mm_frags<4, PK / 16>(qs, Qw + i0 * LDK, LDK, sf, PK);
        warp_mm_frags<4, PC / 16>(pv, Pw + i0 * LDC, LDC, vf, L);
        const int g8 = (threadIdx.x & 31) >> 2;
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                qs[u][e] = __fadd_rn(__fmul_rn(__fmul_rn(gam[i0 + g8 + 8 * (e >> 1)], qs[u][e]), s),
                                     __fmul_rn(pv[u][e], s));
        store_rows(o, h.vs, qs, i0, jh, L, [](int, int, float x) { return x; });
    }
}

} // namespace ra_gpu

using ra_gpu::group;

bool ra_gpu_gdn_chunk_fwd_bf16_serves(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    if (!(prec == RA_GPU_PREC_BF16 && production_head(a, g)))
        return false;
    /* the group's passes are then the bf16 ones, and in the backward its
       grads (the prep leaves out what only the general one reads): their
       shared memory, and the backward's tensors */
    const int optin = smem_optin();
    if (ra_gpu_gdn_chunk_states_bf16_bytes() > optin)
        return false;
    if (!g->bwd)
        return true;
    return aligned16(a->do_) && aligned16(a->dqv) && aligned16(a->dkv) && aligned16(a->dv) &&
           ra_gpu_gdn_chunk_dstates_bf16_bytes() <= optin &&
           ra_gpu_gdn_chunk_grads_bf16_bytes() <= optin;
}

template <typename IN> static cudaError_t prep_launch(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return g->bwd
               ? launch_smem(gdn_chunk_prep_bf16_kernel<true, IN>, PREP_THREADS, PREP_WORDS, g, a)
               : launch_smem(gdn_chunk_prep_bf16_kernel<false, IN>, PREP_THREADS, PREP_WORDS, g, a);
}

cudaError_t ra_gpu_gdn_chunk_prep_bf16(const ra_gpu_gdn_args *a, const group *g)
{
    return ra_gpu::reads_stored_bf16(a) ? prep_launch<uint16_t>(a, g) : prep_launch<float>(a, g);
}

cudaError_t ra_gpu_gdn_chunk_output_bf16(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return reads_stored_bf16(a)
               ? launch_smem(gdn_chunk_output_bf16_kernel<uint16_t>, OUT_THREADS, OUT_WORDS, g, a)
               : launch_smem(gdn_chunk_output_bf16_kernel<float>, OUT_THREADS, OUT_WORDS, g, a);
}
