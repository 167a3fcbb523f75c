/* The CPU gdn variant table: configurations of two kernels, one row each. */

/*
 * Each row carries its configuration (gdn_variants.h) as its data pointer;
 * the two row functions pass it to ra_cpu_gdn_forward/backward, which
 * dispatch to the float or double instance of the kernels.  Names follow
 * op.algorithm.precision[.inverse]; the default inverse (fwdsubst) has no
 * suffix.  Storage: f64/f32 sequential variants store everything in their
 * own type; chunked ieee/tf32 store all in f32; chunked bf16 stores o, dq,
 * dk, dv in bf16 and ht, dh0, dg, dbeta in f32 (as fla).  The rows of
 * NKI's inverses (neumann, schur) declare the RA_UNIT_KEYS requirement, as
 * gdn_cte does; measured here, unnormalised keys cost neumann most (raw-keys
 * regime, T=64, K=16: o rel_rms 4e-6 ieee, 2e-2 tf32, 0.14 bf16, against
 * 1e-6 / 6e-4 / 5e-3 for fwdsubst), since N^2, N^4, N^8 grow far beyond the
 * inverse they sum to.
 */

#include "cpu/gdn_variants.h"

#include <string.h>

#include "cpu/gdn_impl.h"
#include "recaudit/gdn.h"

ra_status ra_cpu_gdn_forward(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             ra_run *run)
{
    return cfg->f64 ? ra_cpu_gdn_run_f64(cfg, c, out, run, 0)
                    : ra_cpu_gdn_run_f32(cfg, c, out, run, 0);
}

ra_status ra_cpu_gdn_backward(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *grads,
                              ra_run *run)
{
    return cfg->f64 ? ra_cpu_gdn_run_f64(cfg, c, grads, run, 1)
                    : ra_cpu_gdn_run_f32(cfg, c, grads, run, 1);
}

ra_status ra_cpu_gdn_forward_row(const ra_variant *self, const ra_case *c, ra_tensors *out,
                                 ra_run *run)
{
    return ra_cpu_gdn_forward(self->data, c, out, run);
}

ra_status ra_cpu_gdn_backward_row(const ra_variant *self, const ra_case *c, ra_tensors *grads,
                                  ra_run *run)
{
    return ra_cpu_gdn_backward(self->data, c, grads, run);
}

#define SEQ(f64, dt, span)                                                                         \
    (&(const ra_cpu_gdn_cfg){RA_CPU_SEQ, f64, 0, RA_CPU_ROUND_IEEE, RA_CPU_INV_FWDSUBST, dt, dt,   \
                             0, span, RA_CPU_STORE_AUTO, RA_CPU_STORE_AUTO})
#define CHUNK(c, rnd, inv, act)                                                                    \
    (&(const ra_cpu_gdn_cfg){RA_CPU_CHUNK, 0, c, rnd, inv, act, RA_F32, 0, 0, RA_CPU_STORE_AUTO,   \
                             RA_CPU_STORE_AUTO})

#define CAPS (RA_FWD | RA_BWD | RA_GDN_CAPS_ALL)
#define ROW(name, pclass, cfg, doc)                                                                \
    {                                                                                              \
        name, "gdn", doc, RA_CPU, pclass, CAPS, cfg, ra_cpu_gdn_forward_row,                       \
            ra_cpu_gdn_backward_row, NULL                                                          \
    }
/* NKI's algorithms are defined for L2-normalised keys only (gdn_cte docs). */
#define ROW_NKI(name, pclass, cfg, doc)                                                            \
    {                                                                                              \
        name, "gdn", doc, RA_CPU, pclass, CAPS | RA_GDN_NEEDS_UNIT_KEYS, cfg,                      \
            ra_cpu_gdn_forward_row, ra_cpu_gdn_backward_row, NULL                                  \
    }
/* A reversal backward is defined where inverting a step is stable. */
#define ROW_REV(name, pclass, cfg, doc)                                                            \
    {                                                                                              \
        name, "gdn", doc, RA_CPU, pclass, CAPS | RA_GDN_NEEDS_STABLE_STEPS, cfg,                   \
            ra_cpu_gdn_forward_row, ra_cpu_gdn_backward_row, NULL                                  \
    }

const ra_variant ra_cpu_gdn_variants[] = {
    ROW("gdn.cpu.f64", "f64", SEQ(1, RA_F64, 0),
        "sequential recurrence and adjoint in double, fma accumulation"),
    ROW("gdn.cpu.f32", "f32", SEQ(0, RA_F32, 0),
        "sequential recurrence and adjoint in fp32 (fmaf, expf): the usual naive reference"),
    /* A study subject (reports/reversal.md): its error grows like the
       product of 1/(a_t min(1, |1 - beta_t |k_t|^2|)) over the up to 7 steps
       it walks back, far past the f32 gates on the default, strong-decay
       and raw-keys regimes; it declares the stable-steps requirement, so
       the audit gates it only where that product stays below 8. */
    ROW_REV("gdn.cpu.f32.reversal", "f32", SEQ(0, RA_F32, 8),
            "as gdn.cpu.f32, backward keeps every 8th state and recovers the others by inverting "
            "the step (Sherman-Morrison), error growing with the steps walked back"),
    ROW("gdn.cpu.chunk64.ieee", "ieee", CHUNK(64, RA_CPU_ROUND_IEEE, RA_CPU_INV_FWDSUBST, RA_F32),
        "chunked C=64, fp32 IEEE matmuls, T by forward substitution"),
    ROW("gdn.cpu.chunk64.tf32", "tf32", CHUNK(64, RA_CPU_ROUND_TF32, RA_CPU_INV_FWDSUBST, RA_F32),
        "chunked C=64, matmul operands rounded to TF32 (rna), T by forward substitution"),
    ROW("gdn.cpu.chunk64.bf16", "bf16", CHUNK(64, RA_CPU_ROUND_BF16, RA_CPU_INV_FWDSUBST, RA_BF16),
        "chunked C=64, bf16 matmul operands, T/W/U/chunk states stored bf16 (fla), fwdsubst"),
    ROW_NKI("gdn.cpu.chunk64.ieee.neumann", "ieee",
            CHUNK(64, RA_CPU_ROUND_IEEE, RA_CPU_INV_NEUMANN, RA_F32),
            "chunked C=64, fp32 IEEE matmuls, T by 16x16 Neumann blocks (NKI)"),
    ROW_NKI("gdn.cpu.chunk64.tf32.neumann", "tf32",
            CHUNK(64, RA_CPU_ROUND_TF32, RA_CPU_INV_NEUMANN, RA_F32),
            "chunked C=64, TF32 matmul operands, T by 16x16 Neumann blocks (NKI)"),
    ROW_NKI("gdn.cpu.chunk64.bf16.neumann", "bf16",
            CHUNK(64, RA_CPU_ROUND_BF16, RA_CPU_INV_NEUMANN, RA_BF16),
            "chunked C=64, bf16 operands and intermediates, T by 16x16 Neumann blocks (NKI)"),
    ROW_NKI("gdn.cpu.chunk128.ieee.schur", "ieee",
            CHUNK(128, RA_CPU_ROUND_IEEE, RA_CPU_INV_SCHUR, RA_F32),
            "chunked C=128, fp32 IEEE matmuls, T by recursive 2x2 block merge (NKI schur)"),
    ROW_NKI("gdn.cpu.chunk128.tf32.schur", "tf32",
            CHUNK(128, RA_CPU_ROUND_TF32, RA_CPU_INV_SCHUR, RA_F32),
            "chunked C=128, TF32 matmul operands, T by recursive 2x2 block merge (NKI schur)"),
    ROW_NKI("gdn.cpu.chunk128.bf16.schur", "bf16",
            CHUNK(128, RA_CPU_ROUND_BF16, RA_CPU_INV_SCHUR, RA_BF16),
            "chunked C=128, bf16 operands and intermediates, T by recursive block merge"),
    ROW("gdn.cpu.chunk64.tf32x3", "tf32x3",
        CHUNK(64, RA_CPU_ROUND_TF32X3, RA_CPU_INV_FWDSUBST, RA_F32),
        "chunked C=64, 3xTF32 matmuls (big*big + big*small + small*big), fwdsubst"),
};

const size_t ra_cpu_gdn_nvariants = sizeof ra_cpu_gdn_variants / sizeof ra_cpu_gdn_variants[0];

const ra_variant *ra_cpu_gdn_variant(const char *name)
{
    for (size_t i = 0; name && i < ra_cpu_gdn_nvariants; i++)
        if (strcmp(ra_cpu_gdn_variants[i].name, name) == 0)
            return &ra_cpu_gdn_variants[i];
    return NULL;
}

const ra_cpu_gdn_cfg *ra_cpu_gdn_variant_cfg(const char *name)
{
    const ra_variant *v = ra_cpu_gdn_variant(name);
    return v ? v->data : NULL;
}
