/* CPU gdn kernels in float: the templates instantiated for fp32 arithmetic. */

/*
 * fp32 throughout, as the fp32 kernels it mirrors: expf of the float gate,
 * sqrtf, and every accumulation an explicit fmaf chain (the build has
 * -ffp-contract=off, so no other fusion happens).  Serves gdn.cpu.f32 and
 * every gdn.cpu.chunk* variant; the operand rounding modes (IEEE, TF32,
 * TF32X3, bf16) only exist in this instance.
 */

#include "cpu/gdn_impl.h"

/* Every header the templates use, before R is defined (R must not reach
   any declaration outside the templates). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/gdn_case.h"
#include "core/tensor.h"
#include "cpu/faults.h"

#define R float
#define RN(x) x##_f32
#define R_EXP expf
#define R_FMA fmaf
#define R_SQRT sqrtf
#define R_IS_F64 0

#include "cpu/gdn_tmpl_linalg.h"
#include "cpu/gdn_tmpl_inverse.h"
#include "cpu/gdn_tmpl_head.h"
#include "cpu/gdn_tmpl_seq.h"
#include "cpu/gdn_tmpl_chunk.h"
#include "cpu/gdn_tmpl_chunk_bwd.h"
#include "cpu/gdn_tmpl_driver.h"

ra_status ra_cpu_gdn_run_f32(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             ra_run *run, int backward)
{
    return ra_cpu_gdn_run_impl_f32(cfg, c, out, run, backward);
}

ra_status ra_cpu_gdn_inverse_f32(float *tinv, const float *a, int n, ra_cpu_inverse inv,
                                 ra_cpu_round round)
{
    if (n < 1)
        RA_ERRORF(RA_EINVAL, "cpu gdn inverse: size %d must be positive", n);
    int64_t d = inv_pad16_f32(n);
    float *scr = malloc((size_t)(inv_scratch_len_f32(n) + 4 * d * d) * sizeof *scr);
    if (!scr)
        RA_ERRORF(RA_ENOMEM, "cpu gdn inverse: cannot allocate scratch for n = %d", n);
    float *m0 = scr + inv_scratch_len_f32(n);
    mmws_f32 ws = {m0, m0 + d * d, m0 + 2 * d * d, m0 + 3 * d * d};
    inverse_f32(tinv, a, n, inv, round, scr, &ws);
    free(scr);
    return RA_OK;
}
