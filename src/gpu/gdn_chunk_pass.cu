/* Chunked CUDA gdn: the two sequential passes (states, dstates) per column tile, tiles staged. */

/*
 * The states pass (forward) and the dstates pass (backward) walk the
 * chunks of one head in order on a tile of state columns (gdn_chunk.cuh
 * says why the columns are independent).  Per chunk their products read
 * whole C x K (and C x C) tiles that do not depend on the pass's state:
 * W and K (states), P, K, Q and W (dstates).  Read straight from global
 * memory the products waited on every fragment load (38 and 57 us per
 * chunk at K = V = 128 on the H200).  Here the running state, the pass's
 * per-column arrays and the tiles live in shared memory, and each tile is
 * copied there with cp.async as soon as its buffer is free, so that the
 * next chunk's copy runs under this chunk's products:
 *
 *   states   W(c) is needed by V' = U - W S', K(c) by the state update,
 *            U(c)'s columns and G(c) by the step between them; W(c+1) is
 *            issued once V' is formed, K, U and G of c+1 once S is updated;
 *   dstates  P(c), K(c), dO(c), G(c), gamma(c) feed dV', Q(c), W(c) the
 *            dS recursion; each group of the previous chunk is issued once
 *            its buffers are read.
 *
 * So no step of a chunk waits on a global load but the products that read
 * unstaged tiles.  The products run on the staged copies: mm_cols16 for
 * full chunks (no bounds tests: the kernels were mostly index arithmetic
 * before), pass_mm_fixed.cuh's forms instead at C = 64, K = V = 128 for
 * IEEE, tf32 and 3xtf32, else blk_mm_direct; the same operand values in
 * the same k-steps every way, so the same bits.  A tile that does not fit the
 * block's shared-memory budget (K = 256 with chunks of 128; Q and W of
 * dstates at K = 128 when the grid is sized for two blocks per SM,
 * pass_setup) is read from global memory as before; the host decides per
 * tile (pass_layout).  The column tile is 16 wide: on the H200, 32 columns
 * (one block per SM, half the blocks) made the forward at B=4, T=4096,
 * Hv=16, K=V=128 slower (9.07 against 7.15 ms before staging).
 */

#include <cstdint>
#include <type_traits>

#include "gpu/cp_async.cuh"
#include "gpu/gdn_chunk.cuh"
#include "gpu/gdn_chunk_kernels.h"
#include "gpu/pass_mm_fixed.cuh"

namespace ra_gpu
{

/* Blocks per SM the passes aim for when the grid has more blocks than
   SMs.  Why: at K = V = 128 the dstates block with all four tiles staged
   needs 177 KB, one block per SM, so B=1, T=8192, Hv=32 (256 blocks) ran
   in two waves (7.1 ms on the H200); two blocks per SM with P and K
   staged and Q, W read in place put the grid in one wave. */
constexpr int PASS_BLOCKS_PER_SM = 2;

/* 256 threads (8 warps for a chunk's 8 to 16 product tiles), their
   registers capped for PASS_BLOCKS_PER_SM blocks; against 128 threads,
   ncu at B=1, T=8192, Hv=32, K=V=128, bf16: states 1.65 to 1.21 ms,
   dstates 3.04 to 1.92 ms. */
constexpr int PASS_THREADS = 256, PASS_COLS = 16;

/* A full chunk's C and K in instance FIX when fixed at compile time, else 0
   (pass_mm's FM, FK). */
template <int FIX> constexpr int full_C = FIX == FIX_C64_KV128 ? 64 : 0;
template <int FIX> constexpr int full_K = FIX == FIX_C64_KV128 ? 128 : 0;

/* Row stride of the column arrays: a fragment's lanes hit distinct banks. */
constexpr int PASS_LDC = PASS_COLS + 8;
static_assert(PASS_THREADS == 256, "pass_mm_fixed.cuh's products give a block 256 output slots");

/* Waits until at most one group (the most recent) is in flight, then
   synchronises the block so that every thread's copies are visible. */
__device__ __forceinline__ void cp_wait_all_but_last()
{
    cp_wait<1>();
    __syncthreads();
}

/* Starts copying rows x cols of src (row stride lds) to dst (row stride
   ldd): 16-byte copies when both sides are 16-byte aligned row by row,
   else 4-byte ones.  Every thread calls it. */
__device__ void tile_async(float *dst, int ldd, const float *src, int64_t lds, int rows, int cols)
{
    const bool v4 = cols % 4 == 0 && ldd % 4 == 0 && lds % 4 == 0 &&
                    (reinterpret_cast<uintptr_t>(src) & 15) == 0 &&
                    (reinterpret_cast<uintptr_t>(dst) & 15) == 0;
    if (v4) {
        const int cq = cols / 4, n = rows * cq;
        for (int e = threadIdx.x; e < n; e += blockDim.x) {
            const int r = e / cq, x = 4 * (e % cq);
            cp_async16(dst + r * ldd + x, src + r * lds + x);
        }
    } else {
        const int n = rows * cols;
        for (int e = threadIdx.x; e < n; e += blockDim.x) {
            const int r = e / cols, x = e % cols;
            cp_async4(dst + r * ldd + x, src + r * lds + x);
        }
    }
}

/* An operand tile of one chunk: in shared memory (sm, row stride ld) when
   staged, else read in place. */
struct tile {
    float *sm;
    int ld;
};

/* Shared-memory layout of a pass block: the per-column arrays (nc
   columns, row stride PASS_LDC), then the staged tiles.  Row strides of the tiles: +4 for tiles
   read along their rows by the fragments, +8 for tiles read down their
   columns (transposed operands). */
struct pass_layout {
    int nc, ldc; /* columns of the tile, row stride of the column arrays */
    int ntile;   /* tiles of the pass: 2 (states) or 4 (dstates) */
    int rows[4], cols[4], ld[4];
    bool staged[4];
    int64_t fixed;  /* the column arrays and per-chunk vectors, before the tiles */
    int64_t floats; /* total */
};

/* The pass's tiles, in order of benefit: states W (rows), K (columns);
   dstates P (columns), K (rows), Q (columns), W (columns).  Arrays of
   nc columns: states S, S', V', U (K, K, C, C rows); dstates dS, dSn,
   W^T dV' (K rows each) and dV', tV, dO (C rows each).  Vectors of C:
   states G; dstates G, gamma. */
static pass_layout make_pass_layout(bool bwd, int C, int K, int64_t budget_floats)
{
    pass_layout p;
    p.nc = PASS_COLS, p.ldc = PASS_LDC;
    p.fixed = bwd ? (int64_t)(3 * K + 3 * C) * p.ldc + 2 * C : (int64_t)(2 * K + 2 * C) * p.ldc + C;
    p.floats = p.fixed;
    p.ntile = bwd ? 4 : 2;
    for (int i = 0; i < p.ntile; i++) {
        const bool along = bwd ? (i == 1) : (i == 0); /* states W, dstates K */
        p.rows[i] = C;
        p.cols[i] = (bwd && i == 0) ? C : K;
        p.ld[i] = p.cols[i] + (along ? 4 : 8);
        const int64_t need = (int64_t)p.rows[i] * p.ld[i];
        p.staged[i] = p.floats + need <= budget_floats;
        if (p.staged[i])
            p.floats += need;
    }
    return p;
}

/* Pointers of a block's tiles. */
__device__ inline tile pass_tile(float *smem, const pass_layout &p, int i)
{
    int64_t off = p.fixed;
    for (int j = 0; j < i; j++)
        if (p.staged[j])
            off += (int64_t)p.rows[j] * p.ld[j];
    return tile{p.staged[i] ? smem + off : nullptr, p.ld[i]};
}

/* Copies rows x cols of src into t when t is staged; nothing otherwise. */
__device__ __forceinline__ void tile_issue(const tile &t, const float *src, int64_t lds, int rows,
                                           int cols)
{
    if (t.sm)
        tile_async(t.sm, t.ld, src, lds, rows, cols);
}

/* A chunk's operand: its staged copy (row stride t.ld) or, when the
   tile is not staged, the matrix in place (row stride ldg). */
struct opnd {
    const float *p;
    int64_t ld;
    bool staged;
};

__device__ __forceinline__ opnd tile_op(const tile &t, const float *g, int64_t ldg)
{
    return t.sm ? opnd{t.sm, t.ld, true} : opnd{g, ldg, false};
}

/* C (m x 16 column arrays, row stride ldc) = (acc ? C : 0) + A B with
   A(i, p) = a.p[i * a.ld + p] (a.p[p * a.ld + i] when TA), B the column
   arrays b (row stride ldc): mm_cols16 when every index is in range
   (full, m and kc multiples of 16), else blk_mm_direct on the block's nv
   columns (the same bits on those columns).  FM and FK, when not zero,
   are m and kc of a full chunk, where IEEE, tf32 and 3xtf32 take
   pass_mm_fixed.cuh's products (A staged, or in place, transposed and
   8-byte aligned). */
template <int P, bool TA, int FM = 0, int FK = 0>
__device__ __forceinline__ void pass_mm(bool full, float *c, int ldc, opnd a, const float *b, int m,
                                        int nv, int kc, bool acc)
{
    if constexpr (P != RA_GPU_PREC_BF16 && FM > 0) {
        const auto fixed = [&](auto ag) {
            constexpr bool AG = decltype(ag)::value;
            if constexpr (P == RA_GPU_PREC_IEEE)
                mm_cols16_ieee_fixed<FM, FK, TA, AG, PASS_LDC>(c, a.p, (int)a.ld, b, acc);
            else
                mm_cols16_tf32_fixed<P, FM, FK, TA, AG, PASS_LDC>(c, a.p, (int)a.ld, b, acc);
        };
        if (full && a.staged) {
            fixed(std::false_type());
            return;
        }
        if constexpr (TA)
            if (full && a.ld % 2 == 0 && (reinterpret_cast<uintptr_t>(a.p) & 7) == 0) {
                fixed(std::true_type());
                return;
            }
    }
    if (full && m % 16 == 0 && kc % 16 == 0)
        mm_cols16<P, TA>(c, ldc, a.p, (int)a.ld, b, ldc, m, kc, acc);
    else
        blk_mm_direct<P>(c, ldc, 0, m, nv, kc, TA ? mk(a.p, 1, a.ld) : mk(a.p, a.ld, 1),
                         mk(b, ldc, 1), acc, 1);
}

/* Column tile of this block. */
__device__ __forceinline__ void pass_cols(const group &g, int V, int nc, int64_t &hl, int &j0,
                                          int &nv)
{
    const int tiles = (V + nc - 1) / nc;
    hl = blockIdx.x / tiles, j0 = (int)(blockIdx.x % tiles) * nc;
    nv = V - j0 < nc ? V - j0 : nc;
}

/* The passes' column arrays hold PASS_COLS columns whatever the block's
   nv: columns past nv start at zero, are never loaded from or stored to
   global memory, and feed only themselves (every product and step acts
   column by column), so the loops below run on all PASS_COLS columns
   and their index arithmetic is shifts.  zero_cols clears n rows. */
constexpr int NC = PASS_COLS;

__device__ __forceinline__ void zero_cols(float *x, int ldc, int n)
{
    for (int e = threadIdx.x; e < n * ldc; e += blockDim.x)
        x[e] = 0.f;
}

/* dst(r, j) = src(r, j) for r < rows, j < nv (row strides ldd, lds): a
   state's column tile between global memory and the column arrays. */
__device__ __forceinline__ void copy_cols(float *dst, int64_t ldd, const float *src, int64_t lds,
                                          int rows, int nv)
{
    for (int e = threadIdx.x; e < rows * NC; e += blockDim.x) {
        const int r = e / NC, j = e % NC;
        if (j < nv)
            dst[r * ldd + j] = src[r * lds + j];
    }
}

template <int P, int FIX>
__global__ void __launch_bounds__(PASS_THREADS, PASS_BLOCKS_PER_SM)
    gdn_chunk_states_kernel(const ra_gpu_gdn_args a, const group g, const pass_layout pl)
{
    extern __shared__ __align__(16) float smem[];
    __builtin_assume(blockDim.x == PASS_THREADS);
    int64_t hl;
    int j0, nv;
    pass_cols(g, (int)a.s.V, pl.nc, hl, j0, nv);
    const head h = make_head<FIX>(a, g.h0 + hl);
    const int K = h.K, V = h.V, C = fixed_C<FIX>(g), ldc = pl.ldc;
    constexpr int FC = full_C<FIX>, FK = full_K<FIX>;
    float *S = smem, *Sst = S + K * ldc, *Vp = Sst + K * ldc, *Us = Vp + C * ldc,
          *Gs = Us + C * ldc;
    const tile tw = pass_tile(smem, pl, 0), tk = pass_tile(smem, pl, 1);
    auto issue_w = [&](int64_t cc, int Lc) {
        tile_issue(tw, make_cws(g, C, K, V, hl, cc).W, K, Lc, K);
    };
    zero_cols(smem, ldc, 2 * K + 2 * C);
    __syncthreads();
    /* The second group of a chunk: K, U's columns, G (U and G are read
       after V' is formed, so they cannot share W's buffer turn). */
    auto issue2 = [&](int64_t c) {
        const cws w = make_cws(g, C, K, V, hl, c);
        const int L = chunk_rows(h, C, c);
        tile_issue(tk, h.k + c * C * h.qs, h.qs, L, K);
        tile_async(Us, ldc, w.U + j0, V, L, nv);
        tile_async(Gs, C, w.G, C, 1, L);
    };
    if (h.h0)
        copy_cols(S, ldc, h.h0 + j0, V, K, nv);
    {
        issue_w(0, chunk_rows(h, C, 0));
        cp_commit();
        issue2(0);
        cp_commit();
    }
    for (int64_t c = 0; c < g.nch; c++) {
        const cws w = make_cws(g, C, K, V, hl, c);
        const int64_t t0 = c * C;
        const int L = chunk_rows(h, C, c);
        const bool more = c + 1 < g.nch, full = L == C;
        const int Ln = more ? chunk_rows(h, C, c + 1) : 0;
        __syncthreads();
        for (int e = threadIdx.x; e < K * NC; e += blockDim.x) {
            const int r = e / NC, j = e % NC;
            const float x = st<P>(S[r * ldc + j]);
            Sst[r * ldc + j] = x;
            if (j < nv)
                w.Sst[r * V + j0 + j] = x;
        }
        cp_wait_all_but_last(); /* W(c) */
        pass_mm<P, false, FC, FK>(full, Vp, ldc, tile_op(tw, w.W, K), Sst, L, nv, K, false);
        __syncthreads();
        if (more)
            issue_w(c + 1, Ln);
        cp_commit();
        cp_wait_all_but_last(); /* K, U, G of c */
        const float gl = Gs[L - 1], gC = expf(gl);
        ew(
            L, NC,
            /* (V', its decayed copy) */
            [&](int i, int j) {
                const float u = j < nv ? Us[i * ldc + j] : 0.f;
                const float vp = __fsub_rn(u, Vp[i * ldc + j]);
                return make_float2(vp, __fmul_rn(vp, expf(__fsub_rn(gl, Gs[i]))));
            },
            [&](int i, int j, float2 r) {
                if (j < nv)
                    w.Vp[i * V + j0 + j] = r.x;
                Vp[i * ldc + j] = r.y;
            });
        for (int e = threadIdx.x; e < K * NC; e += blockDim.x) {
            float *x = &S[e / NC * ldc + e % NC];
            *x = __fmul_rn(*x, gC);
        }
        __syncthreads();
        pass_mm<P, true, FK, FC>(full, S, ldc, tile_op(tk, h.k + t0 * h.qs, h.qs), Vp, K, nv, L,
                                 true);
        __syncthreads();
        if (more)
            issue2(c + 1);
        cp_commit();
    }
    __syncthreads();
    if (h.ht)
        copy_cols(h.ht + j0, V, S, ldc, K, nv);
}

/* One chunk of the dstates pass: the chunk's end cotangent (dS, K x nv
   in shared memory) into the slice, (1) dV' = s P^T dO + diag(delta) K dS
   into the slice, then (5) dS <- s Q^T diag(gamma) dO + gC dS - W^T dV'. */
template <int P, int FIX>
__global__ void __launch_bounds__(PASS_THREADS, PASS_BLOCKS_PER_SM)
    gdn_chunk_dstates_kernel(const ra_gpu_gdn_args a, const group g, const pass_layout pl)
{
    extern __shared__ __align__(16) float smem[];
    __builtin_assume(blockDim.x == PASS_THREADS);
    int64_t hl;
    int j0, nv;
    pass_cols(g, (int)a.s.V, pl.nc, hl, j0, nv);
    const head h = make_head<FIX>(a, g.h0 + hl);
    const int K = h.K, V = h.V, C = fixed_C<FIX>(g), ldc = pl.ldc;
    constexpr int FC = full_C<FIX>, FK = full_K<FIX>;
    const float s = h.scale;
    float *dS = smem, *dSn = dS + K * ldc, *WtdV = dSn + K * ldc, *dVp = WtdV + K * ldc,
          *tV = dVp + C * ldc, *dOs = tV + C * ldc, *Gs = dOs + C * ldc, *gams = Gs + C;
    const tile tp = pass_tile(smem, pl, 0), tk = pass_tile(smem, pl, 1),
               tq = pass_tile(smem, pl, 2), tw = pass_tile(smem, pl, 3);
    const tile tdo{dOs, ldc};
    zero_cols(smem, ldc, 3 * K + 3 * C);
    __syncthreads();
    if (h.dht)
        copy_cols(dS, ldc, h.dht + j0, V, K, nv);
    /* The first and second groups of a chunk: P, K, dO, G, gamma; then Q, W. */
    auto issue1 = [&](int64_t c) {
        const cws w = make_cws(g, C, K, V, hl, c);
        const int L = chunk_rows(h, C, c);
        tile_issue(tp, w.P, C, L, L);
        tile_issue(tk, h.k + c * C * h.qs, h.qs, L, K);
        tile_issue(tdo, h.dO + c * C * h.vs + j0, h.vs, L, nv);
        tile_async(Gs, C, w.G, C, 1, L);
        tile_async(gams, C, w.gam, C, 1, L);
    };
    auto issue2 = [&](int64_t c) {
        const cws w = make_cws(g, C, K, V, hl, c);
        const int L = chunk_rows(h, C, c);
        tile_issue(tq, h.q + c * C * h.qs, h.qs, L, K);
        tile_issue(tw, w.W, K, L, K);
    };
    issue1(g.nch - 1);
    cp_commit();
    issue2(g.nch - 1);
    cp_commit();
    for (int64_t c = g.nch - 1; c >= 0; c--) {
        const cws w = make_cws(g, C, K, V, hl, c);
        const int64_t t0 = c * C;
        const int L = chunk_rows(h, C, c);
        const bool full = L == C;
        __syncthreads();
        copy_cols(w.dS + j0, V, dS, ldc, K, nv);
        cp_wait_all_but_last(); /* P, K, dO of c */
        pass_mm<P, true, FC, FC>(full, dVp, ldc, tile_op(tp, w.P, C), dOs, L, nv, L, false);
        pass_mm<P, false, FC, FK>(full, tV, ldc, tile_op(tk, h.k + t0 * h.qs, h.qs), dS, L, nv, K,
                                  false);
        __syncthreads();
        const float gl = Gs[L - 1], gC = expf(gl);
        ew(
            L, NC,
            /* (dV', gamma dO) */
            [&](int i, int j) {
                const int x = i * ldc + j;
                return make_float2(fmaf(expf(__fsub_rn(gl, Gs[i])), tV[x], __fmul_rn(s, dVp[x])),
                                   __fmul_rn(gams[i], dOs[x]));
            },
            [&](int i, int j, float2 r) {
                const int x = i * ldc + j;
                dVp[x] = r.x;
                if (j < nv)
                    w.dVp[i * V + j0 + j] = r.x;
                tV[x] = r.y;
            });
        __syncthreads();
        if (c > 0)
            issue1(c - 1);
        cp_commit();
        cp_wait_all_but_last(); /* Q, W of c */
        pass_mm<P, true, FK, FC>(full, dSn, ldc, tile_op(tq, h.q + t0 * h.qs, h.qs), tV, K, nv, L,
                                 false);
        pass_mm<P, true, FK, FC>(full, WtdV, ldc, tile_op(tw, w.W, K), dVp, K, nv, L, false);
        __syncthreads();
        if (c > 0)
            issue2(c - 1);
        cp_commit();
        for (int e = threadIdx.x; e < K * NC; e += blockDim.x) {
            const int x = e / NC * ldc + e % NC;
            dS[x] = __fsub_rn(__fadd_rn(__fmul_rn(s, dSn[x]), __fmul_rn(gC, dS[x])), WtdV[x]);
        }
    }
    __syncthreads();
    if (h.dh0)
        copy_cols(h.dh0 + j0, V, dS, ldc, K, nv);
}

/* The pass's layout and grid: the tiles that fit the block's share of the
   shared memory are staged (the whole opt-in amount when the grid fits
   one block per SM). */
static cudaError_t pass_setup(bool bwd, const ra_gpu_gdn_args *a, const group *g, pass_layout &pl,
                              unsigned &grid)
{
    int dev = 0, optin = 0, per_sm = 0, sms = 0, reserved = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
    if (e != cudaSuccess)
        return e;
    const int V = (int)a->s.V, nc = PASS_COLS;
    grid = (unsigned)(g->nh * ((V + nc - 1) / nc));
    int64_t budget = optin;
    if ((int64_t)grid > sms) {
        const int64_t share = per_sm / PASS_BLOCKS_PER_SM - reserved;
        budget = share < budget ? share : budget;
    }
    pl = make_pass_layout(bwd, g->C, (int)a->s.K, budget / (int64_t)sizeof(float));
    if (pl.floats * (int64_t)sizeof(float) > optin)
        return cudaErrorInvalidConfiguration; /* K beyond even the column arrays */
    return cudaSuccess;
}

template <typename KER>
static cudaError_t pass_launch(KER kernel, unsigned grid, const pass_layout &pl,
                               const ra_gpu_gdn_args *a, const group *g)
{
    const size_t bytes = (size_t)pl.floats * sizeof(float);
    cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess)
        return e;
    kernel<<<grid, PASS_THREADS, bytes>>>(*a, *g, pl);
    return cudaGetLastError();
}

/* Sets up and launches the states (BWD false) or dstates pass. */
template <bool BWD> static cudaError_t pass_run(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    pass_layout pl;
    unsigned grid = 0;
    cudaError_t e = pass_setup(BWD, a, g, pl, grid);
    if (e != cudaSuccess)
        return e;
    cudaError_t le = cudaSuccess;
    e = by_prec(prec, [&](auto p) {
        by_fix(*a, *g, [&](auto f) {
            constexpr int P = decltype(p)::value, FIX = decltype(f)::value;
            le = pass_launch(BWD ? gdn_chunk_dstates_kernel<P, FIX>
                                 : gdn_chunk_states_kernel<P, FIX>,
                             grid, pl, a, g);
        });
    });
    return e != cudaSuccess ? e : le;
}

} // namespace ra_gpu

using ra_gpu::group;

int64_t ra_gpu_gdn_chunk_pass_bytes(int bwd, int C, int K)
{
    return ra_gpu::make_pass_layout(bwd != 0, C, K, 0).floats * (int64_t)sizeof(float);
}

cudaError_t ra_gpu_gdn_chunk_states(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    if (g->wpairs)
        return ra_gpu_gdn_chunk_states_bf16(a, g);
    return ra_gpu::pass_run<false>(prec, a, g);
}

cudaError_t ra_gpu_gdn_chunk_dstates(int prec, const ra_gpu_gdn_args *a, const group *g)
{
    if (g->wpairs)
        return ra_gpu_gdn_chunk_dstates_bf16(a, g);
    return ra_gpu::pass_run<true>(prec, a, g);
}
