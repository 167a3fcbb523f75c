/* The CPU bigdn variant table: seed 003's phase kernels in P0/P1/P2, for bigdn and bigdn.core. */

/*
 * A thin wrapper over the plain-array kernels of bigdn_f32.h: the case is
 * validated and read by ra_bigdn_problem_init (the one reader every bigdn
 * consumer shares), each input is rounded once to float in its own layout
 * (the kernels take the case's row-major layouts as they are), the
 * kernel runs in the row's mode, and every result is stored in f32, the
 * kernels' own storage (as the other CPU tables store theirs).  The
 * seed's wrapper finally casts out and dqkv to the activations' dtype;
 * that cast is not the kernel's arithmetic, and leaving it out keeps the
 * audit measuring what P0, P1 and P2 differ in (a bf16 store adds at most
 * 2^-9 relative per element on top of the figures).
 *
 * Names follow op.algorithm.precision: bigdn.cpu.f32.p<m> and
 * bigdn.core.cpu.f32.p<m>, "f32" for the fp32 state and accumulation the
 * three modes share, p<m> the seed's dot_precision.  The declared class is
 * the operand rounding of the products: ieee (P0), tf32 (P1), bf16 (P2,
 * which also stores the bridges I - P, I - Pz and A in bf16).
 */

#include "cpu/bigdn_variants.h"

#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/bigdn_case.h"
#include "core/tensor.h"

/* Inputs (7), dout, out and up to 7 gradients, as float arrays. */
enum { NIN = RA_BIGDN_NIN, DOUT = NIN, OUT = NIN + 1, GRAD = NIN + 2, NBUF = GRAD + NIN };

/* Gradients the kernel returns: bigdn's RoPE tables are not differentiated. */
static int ngrads(ra_bigdn_kind kind) { return kind == RA_BIGDN_FULL ? RA_BIGDN_COS : NIN; }

static ra_status call_kernel(const ra_cpu_bigdn_cfg *cfg, const ra_bigdn_problem *p,
                             const ra_bigdn_dims *d, float *const *f, int backward)
{
    const ra_bigdn_prec m = cfg->mode;
    if (p->kind == RA_BIGDN_FULL)
        return backward
                   ? ra_cpu_bigdn_backward(d, m, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[DOUT],
                                           f[GRAD], f[GRAD + 1], f[GRAD + 2], f[GRAD + 3],
                                           f[GRAD + 4])
                   : ra_cpu_bigdn_forward(d, m, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[OUT]);
    return backward
               ? ra_cpu_bigdn_core_backward(d, m, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[DOUT],
                                            f[GRAD], f[GRAD + 1], f[GRAD + 2], f[GRAD + 3],
                                            f[GRAD + 4], f[GRAD + 5], f[GRAD + 6])
               : ra_cpu_bigdn_core_forward(d, m, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[OUT]);
}

ra_status ra_cpu_bigdn_run(const ra_cpu_bigdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                           int backward)
{
    ra_bigdn_problem p;
    RA_TRY(ra_bigdn_problem_init(&p, c, backward ? RA_BIGDN_NEED_COTANGENTS : 0, "cpu bigdn"));
    const ra_bigdn_shape *s = &p.s;
    const ra_bigdn_dims d = {.B = s->B,
                             .F = s->F,
                             .S = s->S,
                             .H = s->H,
                             .D = s->D,
                             .k_scale = (float)p.k_scale,
                             .norm_eps = (float)p.norm_eps,
                             .eps = (float)p.eps};
    const int ng = ngrads(p.kind);
    const int64_t out_shape[4] = {s->B, s->F * s->S, s->H, s->D};
    int64_t n[NBUF] = {0};
    for (int j = 0; j < NIN; j++)
        n[j] = p.in[j]->numel;
    n[DOUT] = backward ? p.dout->numel : 0;
    n[OUT] = backward ? 0 : s->B * s->F * s->S * s->H * s->D;
    for (int j = 0; backward && j < ng; j++)
        n[GRAD + j] = n[j];
    float *f[NBUF] = {NULL};
    ra_status st = RA_OK;
    for (int i = 0; i < NBUF && st == RA_OK; i++)
        if (n[i] > 0 && (!ra_alloc_plausible((uint64_t)n[i], sizeof(float)) ||
                         !(f[i] = malloc((size_t)n[i] * sizeof(float)))))
            st = RA_ENOMEM;
    if (st != RA_OK)
        RA_REPORTF(st,
                   "cpu bigdn: cannot allocate the float copies (B=%lld, N=%lld, H=%lld, D=%lld)",
                   (long long)s->B, (long long)(s->F * s->S), (long long)s->H, (long long)s->D);
    if (st == RA_OK) {
        for (int j = 0; j < NIN; j++)
            ra_tensor_to_floats(f[j], p.in[j]);
        if (backward)
            ra_tensor_to_floats(f[DOUT], p.dout);
        st = call_kernel(cfg, &p, &d, f, backward);
    }
    ra_tensor *t;
    if (st == RA_OK && !backward &&
        (st = ra_tensors_new(out, &t, "out", RA_F32, 4, out_shape)) == RA_OK)
        ra_tensor_from_floats(t, f[OUT]);
    for (int j = 0; st == RA_OK && backward && j < ng; j++) {
        char name[16];
        snprintf(name, sizeof name, "d%s", ra_bigdn_in_name(p.kind, j));
        if ((st = ra_tensors_new(out, &t, name, RA_F32, p.in[j]->ndim, p.in[j]->shape)) == RA_OK)
            ra_tensor_from_floats(t, f[GRAD + j]);
    }
    for (int i = 0; i < NBUF; i++)
        free(f[i]);
    return st;
}

/* The kernels' parallel loops take OpenMP's thread count: run->threads
   (when > 0) for this call, restored afterwards (results do not depend on
   it). */
static ra_status run_row(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run,
                         int backward)
{
#ifdef _OPENMP
    const int before = omp_get_max_threads();
    if (run && run->threads > 0)
        omp_set_num_threads(run->threads);
#else
    (void)run;
#endif
    const ra_status st = ra_cpu_bigdn_run(self->data, c, out, backward);
#ifdef _OPENMP
    omp_set_num_threads(before);
#endif
    return st;
}

ra_status ra_cpu_bigdn_forward_row(const ra_variant *self, const ra_case *c, ra_tensors *out,
                                   ra_run *run)
{
    return run_row(self, c, out, run, 0);
}

ra_status ra_cpu_bigdn_backward_row(const ra_variant *self, const ra_case *c, ra_tensors *grads,
                                    ra_run *run)
{
    return run_row(self, c, grads, run, 1);
}

#define CFG(m) (&(const ra_cpu_bigdn_cfg){m})
#define ROW(name, op, pclass, m, doc)                                                              \
    {                                                                                              \
        name, op, doc, RA_CPU, pclass, RA_FWD | RA_BWD, CFG(m), ra_cpu_bigdn_forward_row,          \
            ra_cpu_bigdn_backward_row, NULL                                                        \
    }

const ra_variant ra_cpu_bigdn_variants[] = {
    ROW("bigdn.cpu.f32.p0", "bigdn", "ieee", RA_BIGDN_P0,
        "seed 003's phases A, B, C and C-bar, B-bar, A-bar, RoPE/ReLU/RMSNorm VJPs: IEEE fp32 "
        "products, fp32 state and accumulation"),
    ROW("bigdn.cpu.f32.p1", "bigdn", "tf32", RA_BIGDN_P1,
        "as p0, operands of every product rounded to TF32 (rna)"),
    ROW("bigdn.cpu.f32.p2", "bigdn", "bf16", RA_BIGDN_P2,
        "as p0, bf16 product operands, bridges I - P, I - Pz and A stored bf16, fp32 state (the "
        "seed's default)"),
    ROW("bigdn.core.cpu.f32.p0", "bigdn.core", "ieee", RA_BIGDN_P0,
        "seed 003's phase kernels from Q, K, Qr, Kr, V: IEEE fp32 products, fp32 state and "
        "accumulation"),
    ROW("bigdn.core.cpu.f32.p1", "bigdn.core", "tf32", RA_BIGDN_P1,
        "as p0, operands of every product rounded to TF32 (rna)"),
    ROW("bigdn.core.cpu.f32.p2", "bigdn.core", "bf16", RA_BIGDN_P2,
        "as p0, bf16 product operands, bridges I - P, I - Pz and A stored bf16, fp32 state (the "
        "seed's default)"),
};

const size_t ra_cpu_bigdn_nvariants =
    sizeof ra_cpu_bigdn_variants / sizeof ra_cpu_bigdn_variants[0];
