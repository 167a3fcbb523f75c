/* Cases: an operation, its string parameters and its named tensors. */
#ifndef RA_CORE_CASE_H
#define RA_CORE_CASE_H

#include "core/kv.h"
#include "core/status.h"
#include "core/tensor.h"

/*
 * A case file is a .safetensors file whose __metadata__ holds "op", the
 * format version "recaudit_format" and every parameter as a string
 * (README "File formats").  Result and reference files use the same layout,
 * with the producing variant or the reference's certificate in the metadata.
 */

#define RA_CASE_FORMAT_VERSION "1"

/* --- cases ----------------------------------------------------------------------- */

void ra_case_init(ra_case *c);
void ra_case_clear(ra_case *c);
ra_status ra_case_set_op(ra_case *c, const char *op);

/* Parameter readers: absent -> default; present but malformed -> RA_EINVAL
   naming the parameter and its text. */
ra_status ra_case_param_double(double *out, const ra_case *c, const char *key, double dflt);
ra_status ra_case_param_int(long *out, const ra_case *c, const char *key, long dflt);
ra_status ra_case_param_bool(int *out, const ra_case *c, const char *key, int dflt);
const char *ra_case_param(const ra_case *c, const char *key);

/* Load/save as .safetensors (metadata: op, recaudit_format, parameters).
   Loading a file without "op" is refused naming the file. */
ra_status ra_case_load(ra_case *c, const char *path);
ra_status ra_case_save(const ra_case *c, const char *path);

#endif
