/* Checks every operation's case validator shares: shapes by axis, finiteness by index, KEY=VALUE
 * shapes. */
#ifndef RA_CORE_CASE_CHECK_H
#define RA_CORE_CASE_CHECK_H

#include <stdint.h>

#include "core/status.h"
#include "core/tensor.h"

/*
 * An operation's validator (ra_<op>_problem_init) reports the first
 * inconsistency of a case in words a user can act on: the tensor, the
 * axis by its dimension name, the element by its multi-index.  These are
 * the pieces every validator uses, so that all operations say it the same
 * way.
 */

/* t has ndim axes of the sizes want (axes names them); RA_EINVAL naming
   `what`, the tensor, the axis and both shapes otherwise. */
ra_status ra_case_check_shape(const ra_tensor *t, int ndim, const int64_t *want,
                              const char *const *axes, const char *what);
/* No NaN or Inf in t; RA_EINVAL naming the first one's multi-index. */
ra_status ra_case_check_finite(const ra_tensor *t, const char *what);

/* Parses a shape text "K1=v1,K2=v2,..." over the nkeys names keys (any
   order, each key at most once, every value a positive integer below
   2^31): val[i] and seen[i] for key i.  Errors name the field; `expect`
   is an example shown for an empty text. */
ra_status ra_shape_kv_parse(int64_t *val, int *seen, const char *text, const char *const *keys,
                            int nkeys, const char *expect);

#endif
