/* The CPU glr variants: fp32 sequential with stored states, and chunked with recomputed chunk
 * states. */
#ifndef RA_CPU_GLR_VARIANTS_H
#define RA_CPU_GLR_VARIANTS_H

#include <stddef.h>

#include "recaudit/plugin.h"

typedef enum ra_cpu_glr_algo { RA_CPU_GLR_STORE, RA_CPU_GLR_CHUNK } ra_cpu_glr_algo;

/* A row's configuration (its data pointer). */
typedef struct ra_cpu_glr_cfg {
    ra_cpu_glr_algo algo;
    int chunk; /* RA_CPU_GLR_CHUNK: chunk length */
} ra_cpu_glr_cfg;

extern const ra_variant ra_cpu_glr_variants[];
extern const size_t ra_cpu_glr_nvariants;

#endif
