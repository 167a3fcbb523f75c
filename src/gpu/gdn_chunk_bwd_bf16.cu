/* Chunked CUDA gdn: bf16 gradients of the production head, tiles in shared memory. */

/*
 * chunk_grads (gdn_chunk_bwd.cu: steps (2)..(10) of the CPU twin's
 * derivation) for the configuration of gdn_chunk_fwd_bf16.cu.  The general
 * kernel passes every intermediate (about 720 KB per chunk in fp32)
 * through the workspace and stages each product's panels from it again,
 * and there its warps wait on global loads.  Here one block per SM holds
 * the chunk's operands as bf16 pair tiles in shared memory (224 KiB, reused
 * over three phases), the products stay in registers (dk across the whole
 * kernel), and only the gradients go out.
 *
 * The arithmetic is the general kernel's, so the bits are:
 *   - each product sees the same bf16 operands in the same k-steps
 *     (warp_mm_pairs from zero; warp_mm_pairs_add carries dT and dk where
 *     the general kernel accumulates into them, an exact fp32 round trip
 *     there), zero past the chunk's L rows as blk_mm reads them;
 *   - each elementwise value is the same fp32 operation on the same
 *     inputs; Kb, Y, X and D are formed from k, v, beta, gamma and G as
 *     the prep forms them (the bf16 prep does not write them: no other
 *     kernel reads them);
 *   - the sums whose order is a rounding point are gdn_chunk_grads.cuh's,
 *     in the same order; their row dots read fp32 row buffers.
 *
 * 512 threads: warp w takes rows 16 (w % 4) of every product, columns
 * 16 (w / 4) of an L x L one and 32 (w / 4) of an L x 128 one.
 *   A  dO, V', S'^T, dS^T, K^T, Q^T: (2) dP and its pair terms (dP' =
 *      dP . M, the gate terms into F2, summed beside (3) dQc and dq),
 *      (4) dk, dKc; the row dots q.dQc and k.dKc and <dS, S'> beside
 *      the staging of B, the gate sums so far;
 *   B  dV', X, T^T, dV'^T: (6) dW, (7) dT from X, dX, dv; then Y and T:
 *      dT from Y, dY, dk's delta term, row dots v.dX and k.dY;
 *   C  Kb^T: (8) Z = dT T^T, dA = T^T Z, (9) its pair terms, tK, dk, the
 *      last row dot, (10) dg.
 */

#include <type_traits>

#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_bf16.cuh"
#include "gpu/gdn_chunk_grads.cuh"
#include "gpu/gdn_chunk_kernels.h"
#include "gpu/pair_tile.cuh"

namespace ra_gpu
{

/* 16 warps: four row groups of 16 by four column groups, which take 16
   columns of an L x L product (NC n-tiles) and 32 of an L x 128 one (NK):
   with one block per SM, 8 warps left most issue slots empty (ncu: a warp
   issued once per 13.3 cycles, 2.93 ms at the first bench shape). */
constexpr int GR_THREADS = 512, GR_WARPS = GR_THREADS / 32, CG = GR_WARPS / 4;
constexpr int NC = PC / CG / 8, NK = PK / CG / 8;
static_assert(GR_THREADS >= 2 * PC + DOT_LANES, "two row dots beside the <dS, S'> lanes");
/* fp32 row buffers for the row dots: a thread per row walks its row in
   float4 reads, rows four banks apart, so that eight lanes' reads hit
   distinct banks and the products' float2 stores conflict 2-way (at
   PK + 2: 2-way reads, 4-way stores; ncu found 53% of the kernel's shared
   store wavefronts were conflicts) */
constexpr int FLD = PK + 4;
/* Tile sizes in words: 64 rows along 128, 128 along 128, 128 along 64,
   64 along 64, a 64-row fp32 buffer. */
constexpr int T_R = PC * LDK, T_S = PK * LDK, T_T = PK * LDC, T_C = PC * LDC, T_F = PC * FLD;

/* Shared memory: vectors, K^T (phases A and C), two row buffers, then the
   phases' tiles from O_X.  A: S'^T rows, dO, V', dS^T rows, Q^T, dP'
   along its rows and along its columns.  B reuses what A no longer needs:
   dV' over dO, X then Y over V', T^T over dS, then dV'^T, dW along its
   rows and along its columns; reading stored inputs, v's rows over
   dV'^T from B's second step (Y, T) on.  C: dT' and T over S'^T, then
   Z^T, dA' along its rows and columns, Kb^T over dV' and Y. */
enum {
    V_G = 0,
    V_GAM = PC,
    V_BET = 2 * PC,
    V_EG = 3 * PC,
    V_DG = 4 * PC,
    V_DB = 5 * PC,
    V_C1 = 6 * PC,
    V_C2 = 7 * PC,
    V_RED = 8 * PC,
    V_END = V_RED + DOT_LANES
};
constexpr int O_KT = V_END, O_F = O_KT + T_T, O_F2 = O_F + T_F, O_X = O_F2 + T_F;
constexpr int A_SST = 0, A_DO = A_SST + T_S, A_VP = A_DO + T_R, A_DS = A_VP + T_R,
              A_QT = A_DS + T_S, A_DPR = A_QT + T_T, A_DPT = A_DPR + T_C, A_END = A_DPT + T_C;
constexpr int B_DVP = A_DO, B_XY = A_VP, B_TT = A_DS, B_DVPT = B_TT + T_C, B_DWR = B_DVPT + T_T,
              B_DWT = B_DWR + T_R, B_END = B_DWT + T_T;
constexpr int C_DTM = 0, C_TR = C_DTM + T_C, C_ZT = C_TR + T_C, C_DAR = C_ZT + T_C,
              C_DAT = C_DAR + T_C, C_KBT = C_DAT + T_C, C_END = C_KBT + T_T;
constexpr int GR_WORDS = O_X + A_END;
static_assert(B_END <= A_END && C_END <= A_END, "phases B and C fit phase A's region");
static_assert(O_F % 4 == 0 && O_F2 % 4 == 0 && FLD % 4 == 0, "16-byte rows for the row dots");
static_assert(O_X % 2 == 0, "8-byte aligned pair tiles (put_row_pairs)");
static_assert(C_TR + T_C <= A_DO, "T goes over S'^T, which phase B reads first");
static_assert(C_KBT >= B_DVP && C_END <= B_TT, "Kb^T goes over dV' and Y, below T^T");
static_assert(PC * LDK <= T_T && (O_X + B_DVPT) % 4 == 0 && C_END <= B_DVPT,
              "v's rows in dV'^T's space (16-byte aligned), which phase C does not write");

__device__ __forceinline__ float same(int, int, float x) { return x; }

/* IN: float or uint16_t, q, k, v and dO read widened or as stored (stored()). */
template <typename IN>
__global__ void __launch_bounds__(GR_THREADS, 1)
    gdn_chunk_grads_bf16_kernel(const ra_gpu_gdn_args a, const group g)
{
    extern __shared__ __align__(16) uint32_t sm[];
    float *vec = reinterpret_cast<float *>(sm);
    float *G = vec + V_G, *gam = vec + V_GAM, *bet = vec + V_BET, *eg = vec + V_EG,
          *dG = vec + V_DG, *dbs = vec + V_DB, *c1 = vec + V_C1, *c2 = vec + V_C2,
          *red = vec + V_RED;
    float *F = reinterpret_cast<float *>(sm + O_F), *F2 = reinterpret_cast<float *>(sm + O_F2);
    uint32_t *KT = sm + O_KT, *X0 = sm + O_X;
    constexpr int NT = GR_THREADS;

    int64_t hl, c;
    chunk_block(g, hl, c);
    const head h = make_head<FIX_C64_KV128>(a, g.h0 + hl);
    const cws w = make_cws(g, PC, PK, PK, hl, c);
    const int L = chunk_rows(h, PC, c), warp = threadIdx.x >> 5, tid = threadIdx.x;
    const int i0 = 16 * (warp & 3), jc = PC / CG * (warp >> 2), jk = PK / CG * (warp >> 2);
    const int64_t t0 = c * PC;
    const float s = h.scale;
    const IN *q = stored<IN>(h.q, h.qb) + t0 * h.qs, *k = stored<IN>(h.k, h.kb) + t0 * h.qs,
             *v = stored<IN>(h.v, h.vb) + t0 * h.vs, *dO = stored<IN>(h.dO, h.dOb) + t0 * h.vs;
    const float *beta = h.beta + t0 * h.gs;
    float *dq = h.dq + t0 * h.ks, *dk = h.dk + t0 * h.ks, *dv = h.dv + t0 * h.vs;

    uint32_t *Sst = X0 + A_SST, *dOw = X0 + A_DO, *Vpw = X0 + A_VP, *dSw = X0 + A_DS,
             *QT = X0 + A_QT, *dPr = X0 + A_DPR, *dPt = X0 + A_DPT;
    /* Stored, k's and q's values are K^T's and Q^T's (the prep's pair
       tiles of them, exact): their row dots and the tiles formed from k
       (Y, Kb^T) read K^T and Q^T in shared memory instead of global
       memory, the same floats in the same order (Q^T lasts until after
       its row dot). */
    constexpr bool ST = !std::is_same<IN, float>::value;
    const uint16_t *KT16 = reinterpret_cast<const uint16_t *>(KT);
    const auto x_dot = [&](const uint32_t *xt, const IN *x, int r, const float *y) {
        if constexpr (ST)
            return col_dot<PK>(reinterpret_cast<const uint16_t *>(xt) + r, 2 * LDC, y + r * FLD);
        else
            return row_dot_ld4<PK>(x + r * h.qs, y + r * FLD);
    };
    const auto k_dot = [&](int r, const float *y) { return x_dot(KT, k, r, y); };
    {
        /* K^T and Q^T (pair tiles), and dO when stored, by cp.async, in
           flight while the chunk's vectors load */
        constexpr int RT = PK / GR_WARPS;
        warp_copy_rows<RT, PC / 8, LDC>(KT + warp * RT * LDC, w.Ktp + warp * RT * LDC, LDC);
        warp_copy_rows<RT, PC / 8, LDC>(QT + warp * RT * LDC, w.Qtp + warp * RT * LDC, LDC);
        stage_rows_as<PC, PK, NT>(dOw, dO, h.vs, L);
        cp_commit();
    }
    /* P and A at the warp's fragments of (2) and (9), read while the
       tiles stage (in the products' epilogues each load waited its
       latency, the block with it); the prep writes both whole */
    float pf[NC][4], af[NC][4];
    {
        const int g8 = (tid & 31) >> 2, t = tid & 3;
#pragma unroll
        for (int u = 0; u < NC; u++)
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int o = (i0 + g8 + 8 * hh) * PC + jc + 8 * u + 2 * t;
                const float2 p = *reinterpret_cast<const float2 *>(w.P + o),
                             q = *reinterpret_cast<const float2 *>(w.A + o);
                pf[u][2 * hh] = p.x, pf[u][2 * hh + 1] = p.y;
                af[u][2 * hh] = q.x, af[u][2 * hh + 1] = q.y;
            }
    }
    for (int i = tid; i < PC; i += NT) {
        const bool in = i < L;
        G[i] = in ? w.G[i] : 0.f, gam[i] = in ? w.gam[i] : 0.f;
        bet[i] = in ? beta[i * h.gs] : 0.f, dG[i] = 0.f;
    }
    stage_rows<PC, PK, NT>(Vpw, w.Vp, PK, L, PK, same4);
    stage_rows<PK, PK, NT>(Sst, w.Sst, PK, PK, PK, same4);
    stage_rows<PK, PK, NT>(dSw, w.dS, PK, PK, PK, same4);
    cp_wait<0>();
    __syncthreads();
    const float gl = G[L - 1];
    for (int i = tid; i < PC; i += NT)
        eg[i] = i < L ? expf(__fsub_rn(gl, G[i])) : 0.f;

    /* (2) dP = s dO V'^T -> the gate terms y P into F2, dP' = y D (j <= i) */
    {
        float x[NC][4];
        warp_mm_pairs<NC>(x, dOw + i0 * LDK, LDK, Vpw + jc * LDK, LDK, PK, NC);
        for_frags<NC>(i0, jc, [&](int u, int e, int i, int j) {
            float r = 0.f;
            if (i < L && j <= i) {
                const float y = __fmul_rn(s, x[u][e]);
                if (j < i)
                    F2[i * FLD + j] = __fmul_rn(y, pf[u][e]);
                r = __fmul_rn(y, decay(G, L, i, j));
            }
            x[u][e] = r;
        });
        store_pairs<LDC>(dPr, x, i0, jc, PC);
        store_pairs_t<LDC>(dPt, x, i0, jc, PC);
    }
    __syncthreads();
    /* their gate sums (warps 0-1) beside (3) dq = dP' K + x, x = s gamma dO
       S'^T (dQc) into F; then (4) dk = dP'^T Q + x, x = exp(G_{L-1} - G) V'
       dS^T (dKc) into F2 */
    pair_gates_rows(dG, F2, FLD, L);
    float dkr[NK][4]; /* dk, in registers to the end */
    {
        float x[NK][4], d[NK][4];
        warp_mm_pairs<NK>(x, dOw + i0 * LDK, LDK, Sst + jk * LDK, LDK, PK, NK);
        map_frags(x, i0, jk,
                  [&](int i, int, float y) { return __fmul_rn(__fmul_rn(s, gam[i]), y); });
        warp_mm_pairs<NK>(d, dPr + i0 * LDC, LDC, KT + jk * LDC, LDC, L, NK);
        for_frags<NK>(i0, jk,
                      [&](int u, int e, int, int) { d[u][e] = __fadd_rn(d[u][e], x[u][e]); });
        store_rows(dq, h.ks, d, i0, jk, L, same);
        store_rows(F, FLD, x, i0, jk, L, same);
        __syncthreads(); /* the gate sums are done with F2 */
        warp_mm_pairs<NK>(dkr, dPt + i0 * LDC, LDC, QT + jk * LDC, LDC, L, NK);
        warp_mm_pairs<NK>(x, Vpw + i0 * LDK, LDK, dSw + jk * LDK, LDK, PK, NK);
        map_frags(x, i0, jk, [&](int i, int, float y) { return __fmul_rn(eg[i], y); });
        for_frags<NK>(i0, jk,
                      [&](int u, int e, int, int) { dkr[u][e] = __fadd_rn(dkr[u][e], x[u][e]); });
        store_rows(F2, FLD, x, i0, jk, L, same);
    }
    __syncthreads();
    if (tid < L)
        c1[tid] = x_dot(QT, q, tid, F);
    else if (tid >= PC && tid - PC < L)
        c2[tid - PC] = k_dot(tid - PC, F2);
    else if (tid >= NT - DOT_LANES) /* (5)'s <dS, S'> beside them */
        dot_lane<8>(w.dS, w.Sst, PK * PK, red, tid - (NT - DOT_LANES));
    /* Phase B, staged while the row dots run.  (6) dW = -dV' S^T; (7) dT = dV' X^T (+ dW Y^T
       below), dX = T^T dV', dv = beta dX, dX into F */
    uint32_t *dVpw = X0 + B_DVP, *XY = X0 + B_XY, *TT = X0 + B_TT, *dVpt = X0 + B_DVPT,
             *dWr = X0 + B_DWR, *dWt = X0 + B_DWT;
    stage_rows<PC, PK, NT>(dVpw, w.dVp, PK, L, PK, same4);
    stage_rows<PC, PK, NT>(XY, v, h.vs, L, PK, [&](int r, float4 x) { return scale4(x, bet[r]); });
    stage_cols<PC, PK, NT>(dVpt, w.dVp, PK, L, same4);
    /* T^T: T's rows from L on are zero, as blk_mm reads them; its columns
       from L on (this tile's rows) only reach product rows from L on,
       which are never stored */
    stage_cols<PC, PC, NT>(TT, w.T, PC, L, same4);
    const float sd = dot_tree(red); /* synchronises: the row dots and the tiles are in */
    for (int m = tid; m < L; m += NT) {
        float x = delta_gate(__fadd_rn(dG[m], c1[m]), c2, m, L);
        if (m == L - 1)
            x = __fadd_rn(x, __fmul_rn(expf(gl), sd));
        dG[m] = x;
    }

    float dt[NC][4];
    warp_mm_pairs<NC>(dt, dVpw + i0 * LDK, LDK, XY + jc * LDK, LDK, PK, NC);
    {
        float x[NK][4];
        warp_mm_pairs<NK>(x, dVpw + i0 * LDK, LDK, Sst + jk * LDK, LDK, PK, NK);
        map_frags(x, i0, jk, [&](int i, int, float y) { return i < L ? -y : 0.f; });
        store_pairs<LDK>(dWr, x, i0, jk, PC);
        store_pairs_t<LDC>(dWt, x, i0, jk, PC);
        warp_mm_pairs<NK>(x, TT + i0 * LDC, LDC, dVpt + jk * LDC, LDC, L, NK);
        store_rows(dv, h.vs, x, i0, jk, L,
                   [&](int i, int, float y) { return __fmul_rn(bet[i], y); });
        store_rows(F, FLD, x, i0, jk, L, same);
    }
    __syncthreads();
    /* Y = diag(gamma) Kb over X; T over S'^T.  Stored, v's rows for phase
       C's row dot v.dX go by cp.async into dV'^T's space, which phase B
       has finished with, in flight through this step's products (from
       global memory, that row dot's loads waited a latency with the
       block) */
    uint32_t *dTm = X0 + C_DTM, *TR = X0 + C_TR, *Vr = dVpt;
    if constexpr (ST) {
        stage_rows_as<PC, PK, NT>(Vr, v, h.vs, L);
        cp_commit();
        /* Y from K^T's columns (tokens) as rows, zero from L */
        load_row_pairs4<PK, PC, NT>(KT16, 2 * LDC, PK, [&](int p, int c, float4 x0, float4 x1) {
            const auto y = [&](float4 x) {
                const int t = 4 * c;
                return make_float4(__fmul_rn(__fmul_rn(x.x, bet[t]), gam[t]),
                                   __fmul_rn(__fmul_rn(x.y, bet[t + 1]), gam[t + 1]),
                                   __fmul_rn(__fmul_rn(x.z, bet[t + 2]), gam[t + 2]),
                                   __fmul_rn(__fmul_rn(x.w, bet[t + 3]), gam[t + 3]));
            };
            put_col_pairs<LDK>(XY, p, c, y(x0), y(x1), PK, same4);
        });
    } else {
        stage_rows<PC, PK, NT>(XY, k, h.qs, L, PK,
                               [&](int r, float4 x) { return scale4(scale4(x, bet[r]), gam[r]); });
    }
    stage_rows<PC, PC, NT>(TR, w.T, PC, L, L, same4);
    __syncthreads();
    /* dT += dW Y^T, strict lower part dT'; dY = T^T dW, dk += beta gamma dY,
       dY into F2 */
    warp_mm_pairs_add<NC>(dt, dWr + i0 * LDK, LDK, XY + jc * LDK, LDK, PK, NC);
    map_frags(dt, i0, jc, [&](int i, int j, float y) { return (i < L && j < i) ? y : 0.f; });
    store_pairs<LDC>(dTm, dt, i0, jc, PC);
    {
        float x[NK][4];
        warp_mm_pairs<NK>(x, TT + i0 * LDC, LDC, dWt + jk * LDC, LDC, L, NK);
        for_frags<NK>(i0, jk, [&](int u, int e, int i, int) {
            dkr[u][e] = fmaf(__fmul_rn(bet[i], gam[i]), x[u][e], dkr[u][e]);
        });
        store_rows(F2, FLD, x, i0, jk, L, same);
    }
    if constexpr (ST)
        cp_wait<0>();
    __syncthreads();

    /* Phase C.  The row dots v.dX and k.dY (warps 0-3) beside (8) Z = dT'
       T^T, whose transpose is dA's B^T */
    uint32_t *ZT = X0 + C_ZT, *dAr = X0 + C_DAR, *dAt = X0 + C_DAT, *KbT = X0 + C_KBT;
    if (tid < L) {
        if constexpr (ST)
            c1[tid] = row_dot_ld4<PK>(reinterpret_cast<const uint16_t *>(Vr) + tid * 2 * LDK,
                                      F + tid * FLD);
        else
            c1[tid] = row_dot_ld4<PK>(v + tid * h.vs, F + tid * FLD);
    } else if (tid >= PC && tid - PC < L)
        c2[tid - PC] = k_dot(tid - PC, F2);
    if constexpr (ST) /* K^T's tokens (columns) scaled, zero from L */
        scale_pairs<PK, PC, NT>(KbT, KT, [&](int, int t) { return bet[t]; });
    else
        stage_cols<PC, PK, NT>(KbT, k, h.qs, L, [&](int r, float4 x) { return scale4(x, bet[r]); });
    {
        float z[NC][4];
        warp_mm_pairs<NC>(z, dTm + i0 * LDC, LDC, TR + jc * LDC, LDC, L, NC);
        map_frags(z, i0, jc, [&](int i, int j, float y) { return (i < L && j < L) ? y : 0.f; });
        store_pairs_t<LDC>(ZT, z, i0, jc, PC);
    }
    __syncthreads();
    for (int i = tid; i < L; i += NT) {
        const float x = c1[i], y = c2[i], bg = __fmul_rn(bet[i], gam[i]);
        dbs[i] = __fadd_rn(__fadd_rn(0.f, x), __fmul_rn(gam[i], y));
        dG[i] = __fadd_rn(dG[i], __fmul_rn(bg, y));
    }
    /* dA = T^T Z; (9) its pair terms: y = -dA, the gate terms y A into F,
       dA' = y D (j < i) */
    {
        float x[NC][4];
        warp_mm_pairs<NC>(x, TT + i0 * LDC, LDC, ZT + jc * LDC, LDC, L, NC);
        for_frags<NC>(i0, jc, [&](int u, int e, int i, int j) {
            float r = 0.f;
            if (i < L && j < i) {
                const float y = -x[u][e];
                F[i * FLD + j] = __fmul_rn(y, af[u][e]);
                r = __fmul_rn(y, decay(G, L, i, j));
            }
            x[u][e] = r;
        });
        store_pairs<LDC>(dAr, x, i0, jc, PC);
        store_pairs_t<LDC>(dAt, x, i0, jc, PC);
    }
    __syncthreads();
    /* their gate sums (warps 0-1) beside tK = dA' K; dk += dA'^T Kb, then
       beta tK; tK into F2 */
    pair_gates_rows(dG, F, FLD, L);
    {
        float x[NK][4];
        warp_mm_pairs<NK>(x, dAr + i0 * LDC, LDC, KT + jk * LDC, LDC, L, NK);
        warp_mm_pairs_add<NK>(dkr, dAt + i0 * LDC, LDC, KbT + jk * LDC, LDC, L, NK);
        for_frags<NK>(i0, jk, [&](int u, int e, int i, int) {
            dkr[u][e] = fmaf(bet[i], x[u][e], dkr[u][e]);
        });
        store_rows(dk, h.ks, dkr, i0, jk, L, same);
        store_rows(F2, FLD, x, i0, jk, L, same);
    }
    __syncthreads();
    float *dbo = h.dbeta + t0 * h.gs;
    if (tid < L)
        dbo[tid * h.gs] = __fadd_rn(dbs[tid], k_dot(tid, F2));
    if (tid == NT - 1) /* (10) */
        rev_cumsum(h.dg + t0 * h.gs, h.gs, dG, L);
}

} // namespace ra_gpu

using ra_gpu::group;

int64_t ra_gpu_gdn_chunk_grads_bf16_bytes(void)
{
    return (int64_t)ra_gpu::GR_WORDS * (int64_t)sizeof(uint32_t);
}

cudaError_t ra_gpu_gdn_chunk_grads_bf16(const ra_gpu_gdn_args *a, const group *g)
{
    using namespace ra_gpu;
    return reads_stored_bf16(a)
               ? launch_smem(gdn_chunk_grads_bf16_kernel<uint16_t>, GR_THREADS, GR_WORDS, g, a)
               : launch_smem(gdn_chunk_grads_bf16_kernel<float>, GR_THREADS, GR_WORDS, g, a);
}
