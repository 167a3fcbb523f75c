/* CPU gdn kernels in double: the templates instantiated for fp64 arithmetic. */

/*
 * Serves gdn.cpu.f64 (the sequential recurrence in double, with fma
 * accumulation) and the test-only double chunked configuration, which
 * checks the chunk algebra and its VJP against the sequential adjoint
 * without fp32 roundoff.  Operand rounding does not exist here: the driver
 * refuses any mode but IEEE.
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

#define R double
#define RN(x) x##_f64
#define R_EXP exp
#define R_FMA fma
#define R_SQRT sqrt
#define R_IS_F64 1

#include "cpu/gdn_tmpl_linalg.h"
#include "cpu/gdn_tmpl_inverse.h"
#include "cpu/gdn_tmpl_head.h"
#include "cpu/gdn_tmpl_seq.h"
#include "cpu/gdn_tmpl_chunk.h"
#include "cpu/gdn_tmpl_chunk_bwd.h"
#include "cpu/gdn_tmpl_driver.h"

ra_status ra_cpu_gdn_run_f64(const ra_cpu_gdn_cfg *cfg, const ra_case *c, ra_tensors *out,
                             ra_run *run, int backward)
{
    return ra_cpu_gdn_run_impl_f64(cfg, c, out, run, backward);
}

ra_status ra_cpu_gdn_inverse_f64(double *tinv, const double *a, int n, ra_cpu_inverse inv)
{
    if (n < 1)
        RA_ERRORF(RA_EINVAL, "cpu gdn inverse: size %d must be positive", n);
    int64_t d = inv_pad16_f64(n);
    double *scr = malloc((size_t)(inv_scratch_len_f64(n) + 2 * d * d) * sizeof *scr);
    if (!scr)
        RA_ERRORF(RA_ENOMEM, "cpu gdn inverse: cannot allocate scratch for n = %d", n);
    mmws_f64 ws = {scr + inv_scratch_len_f64(n), scr + inv_scratch_len_f64(n) + d * d, NULL,
                   NULL};
    inverse_f64(tinv, a, n, inv, RA_CPU_ROUND_IEEE, scr, &ws);
    free(scr);
    return RA_OK;
}
