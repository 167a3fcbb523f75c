/* recaudit public types: status codes, dtypes, tensors, cases (C ABI). */
#ifndef RECAUDIT_TYPES_H
#define RECAUDIT_TYPES_H

/*
 * These structures are shared by the suite and by variant plugins, so their
 * layout is part of the plugin ABI (RA_PLUGIN_ABI_VERSION in plugin.h): any
 * change to them bumps that version.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ra_status {
    RA_OK = 0,
    RA_EINVAL = 1,       /* bad argument or inconsistent input (shapes, values) */
    RA_EFORMAT = 2,      /* malformed or truncated file */
    RA_EIO = 3,          /* open/read/write failed */
    RA_ENOMEM = 4,       /* allocation failed */
    RA_EOVERFLOW = 5,    /* size arithmetic overflowed */
    RA_ENOTFOUND = 6,    /* missing tensor, parameter, variant, file */
    RA_EUNSUPPORTED = 7, /* valid request this build or operation cannot serve */
    RA_EINTERNAL = 8,    /* an invariant of the library itself failed */
    RA_ENUMERIC = 9      /* NaN/Inf or precision cap reached where not allowed */
} ra_status;

typedef enum ra_dtype { RA_F64 = 0, RA_F32 = 1, RA_BF16 = 2, RA_F16 = 3 } ra_dtype;
#define RA_NDTYPES 4
#define RA_MAX_DIMS 8

/* A named, dense, row-major tensor; data holds nbytes bytes (little-endian,
   bf16/f16 as their 16-bit patterns). */
typedef struct ra_tensor {
    char *name;
    ra_dtype dtype;
    int ndim;
    int64_t shape[RA_MAX_DIMS];
    int64_t numel;
    size_t nbytes;
    void *data;
} ra_tensor;

/* An ordered collection of tensors, owning them. */
typedef struct ra_tensors {
    size_t n, cap;
    ra_tensor **items;
} ra_tensors;

/* An ordered string-to-string map (case parameters, file metadata). */
typedef struct ra_kv {
    size_t n, cap;
    char **keys;
    char **vals;
} ra_kv;

/* A case: an operation, its parameters and its named tensors (inputs and
   cotangents for a case file; outputs and gradients for a result file). */
typedef struct ra_case {
    char *op;
    ra_kv params;
    ra_tensors tensors;
} ra_case;

#ifdef __cplusplus
}
#endif

#endif
