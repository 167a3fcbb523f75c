/* CPU bigdn kernels in float: the bigdn templates instantiated for fp32 arithmetic and P0/P1/P2. */

/*
 * fp32 throughout, as the seed's kernels accumulate: every product is an
 * explicit fmaf chain of gdn_tmpl_linalg.h's RN(mm) with its operands
 * rounded by the mode (none, TF32, bf16), elementwise work in float (the
 * build has -ffp-contract=off, so no other fusion happens).
 */

#include "cpu/bigdn_f32.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "cpu/gdn_variants.h"

#define R float
#define RN(x) x##_f32
#define API(x) x
#define R_EXP expf
#define R_FMA fmaf
#define R_SQRT sqrtf
#define R_IS_F64 0

#include "cpu/gdn_tmpl_linalg.h"
#include "cpu/bigdn_tmpl_fwd.h"
#include "cpu/bigdn_tmpl_bwd.h"
