/* CPU bigdn kernels in double: the same phases as bigdn_f32.c without fp32 roundoff (mode P0). */

/*
 * Not a registered variant: tests use it as a reference of the phase
 * algebra (checked by finite differences to ~1e-9) and to measure the
 * fp32 modes' gradient errors against.
 */

#include "cpu/bigdn_f32.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "cpu/gdn_variants.h"

#define R double
#define RN(x) x##_f64
#define API(x) x##_f64
#define R_EXP exp
#define R_FMA fma
#define R_SQRT sqrt
#define R_IS_F64 1

#include "cpu/gdn_tmpl_linalg.h"
#include "cpu/bigdn_tmpl_fwd.h"
#include "cpu/bigdn_tmpl_bwd.h"
