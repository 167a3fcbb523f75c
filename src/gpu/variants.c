/* The built-in CUDA variants: one list over the operations' row tables. */

/*
 * Each operation keeps its CUDA rows in a table of its own with the
 * kernels' configuration and the CPU twin (gdn_cuda_rows.c); this list
 * makes each one an ra_variant whose data is that row, so the registry
 * reads CUDA and CPU variants alike.  Compiled only with CUDA
 * (variants_none.c otherwise).  The variants create their CUDA context on
 * first use, in the process that runs them.
 */

#include "gpu/gpu.h"

#include "gpu/gdn_cuda.h"
#include "recaudit/gdn.h"

/* One of gdn_cuda.h's entry points on the row's configuration. */
typedef ra_status gdn_entry(const ra_gpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                            int device, double *kernel_ms);

static ra_status gdn_call(gdn_entry *f, const ra_variant *self, const ra_case *c, ra_tensors *out,
                          ra_run *run)
{
    const ra_gpu_gdn_row *row = self->data;
    return f(&row->cfg, c, out, run ? run->device : 0, run ? &run->elapsed_ms : NULL);
}

static ra_status gdn_forward(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    return gdn_call(ra_gpu_gdn_forward, self, c, out, run);
}

static ra_status gdn_backward(const ra_variant *self, const ra_case *c, ra_tensors *grads,
                              ra_run *run)
{
    return gdn_call(ra_gpu_gdn_backward, self, c, grads, run);
}

static ra_status gdn_forward_backward(const ra_variant *self, const ra_case *c, ra_tensors *out,
                                      ra_run *run)
{
    return gdn_call(ra_gpu_gdn_forward_backward, self, c, out, run);
}

/* The declared precision class of a configuration (recaudit/plugin.h). */
static const char *gdn_pclass(const ra_gpu_gdn_cfg *cfg)
{
    if (cfg->algo == RA_GPU_GDN_SEQ)
        return "f32";
    switch (cfg->prec) {
    case RA_GPU_PREC_TF32:
        return "tf32";
    case RA_GPU_PREC_TF32X3:
        return "tf32x3";
    case RA_GPU_PREC_BF16:
        return "bf16";
    case RA_GPU_PREC_IEEE:
        break;
    }
    return "ieee";
}

static ra_variant rows[RA_GPU_MAX_VARIANTS];
static size_t nrows;

/* The registry is built on one thread: filled on first use. */
static void fill(void)
{
    if (nrows)
        return;
    for (size_t i = 0; i < ra_gpu_gdn_nrows && nrows < RA_GPU_MAX_VARIANTS; i++) {
        const ra_gpu_gdn_row *r = &ra_gpu_gdn_rows[i];
        rows[nrows++] = (ra_variant){
            .name = r->name,
            .op = "gdn",
            .doc = r->doc,
            .device = RA_CUDA,
            .pclass = gdn_pclass(&r->cfg),
            .caps = RA_FWD | RA_BWD | RA_GDN_CAPS_ALL | (r->unit_keys ? RA_GDN_NEEDS_UNIT_KEYS : 0),
            .data = r,
            .forward = gdn_forward,
            .backward = gdn_backward,
            .forward_backward = gdn_forward_backward,
        };
    }
}

size_t ra_gpu_variant_count(void)
{
    fill();
    return nrows;
}

const ra_variant *ra_gpu_variant_at(size_t i)
{
    fill();
    return i < nrows ? &rows[i] : NULL;
}
