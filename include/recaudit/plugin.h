/* recaudit kernel-variant C ABI: what a variant is and how a plugin adds one. */
#ifndef RECAUDIT_PLUGIN_H
#define RECAUDIT_PLUGIN_H

/*
 * A variant is one kernel implementation of one operation: a row of the
 * registry that `recaudit validate` loops over.  Built-in variants live in
 * the suite (src/cpu/, src/gpu/); a team adds its own without forking by
 * building a shared object that exports
 *
 *     const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION;
 *     int ra_plugin_register(ra_registry *r);   // calls ra_registry_add
 *
 * and running `recaudit validate --plugin ./libmine.so`.  The loader refuses
 * a plugin whose ra_plugin_abi_version differs from its own.  The functions
 * declared below are exported by the recaudit executable, which the plugin
 * links against at load time (build the plugin with unresolved ra_*
 * symbols allowed, the default for shared objects).
 *
 * Contract of forward(c, out, run): read the inputs of case c (tensors by
 * their documented names (docs/gdn.md), parameters by key), add every output tensor to out
 * (for gdn: o [B,T,Hv,V] and ht [B,Hv,K,V]) in the variant's storage dtype,
 * return RA_OK or an ra_status after reporting why with ra_error.
 * backward(c, grads, run): c also holds the cotangents (do, dht); add the
 * gradients (dq, dk, dv, dg, dbeta, and dh0 when c has h0).  A variant that
 * cannot serve a case (a shape outside its envelope, a missing capability)
 * returns RA_EUNSUPPORTED; validate reports that row as skipped, not passed.
 *
 * ABI history: 1 — first version.  2 — the RA_UNIT_KEYS requirement bit:
 * a recaudit of ABI 1 would ignore it and run such a variant on keys it
 * was never meant for, so a plugin that may set it must not load there.
 */

#include "recaudit/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RA_PLUGIN_ABI_VERSION 2

typedef enum ra_device { RA_CPU = 0, RA_CUDA = 1 } ra_device;

/* Capabilities (ra_variant.caps): what the variant can serve. */
enum {
    RA_FWD = 1u << 0,    /* forward: outputs */
    RA_BWD = 1u << 1,    /* backward: gradients from cotangents */
    RA_H0 = 1u << 2,     /* accepts an initial state h0 */
    RA_GQA = 1u << 3,    /* grouped value heads (Hv a multiple of Hk, > Hk) */
    RA_L2NORM = 1u << 4, /* in-kernel L2 normalisation of q and k */
    RA_TAIL = 1u << 5,   /* sequence length not a multiple of 64 */
    /* Requirement, not a capability: the variant is only defined for
       L2-normalised keys (NKI gdn_cte: "q/k MUST arrive L2-normalized";
       unnormalised keys put (I+A)^-1 out of range).  A case whose keys
       have |k|^2 > 1.01 somewhere and that does not ask for in-kernel
       l2norm is outside its envelope: the audit skips it, saying so. */
    RA_UNIT_KEYS = 1u << 6
};

/* Per-run settings and measurements, shared between harness and variant. */
typedef struct ra_run {
    int threads;       /* CPU threads the variant may use (0: its default) */
    int device;        /* CUDA device ordinal */
    unsigned faults;   /* planted defects, for the suite's sensitivity tests
                          only; 0 in every real run (see src/cpu/faults.h) */
    double elapsed_ms; /* set by the variant if it times itself, else < 0 */
    void *user;        /* reserved for the variant */
} ra_run;

typedef struct ra_variant {
    const char *name; /* "gdn.chunk64.tf32": op.algorithm.precision[.bwd] */
    const char *op;   /* "gdn" */
    const char *doc;  /* one line: what it computes and how */
    ra_device device;
    unsigned caps;
    ra_status (*forward)(const ra_case *c, ra_tensors *out, ra_run *run);
    ra_status (*backward)(const ra_case *c, ra_tensors *grads, ra_run *run);
} ra_variant;

typedef struct ra_registry ra_registry;

/* Adds a variant (the struct is copied; its strings and functions must stay
   valid while the registry lives).  A duplicate name is refused. */
ra_status ra_registry_add(ra_registry *r, const ra_variant *v);

/* Entry point a plugin exports. */
typedef ra_status ra_plugin_register_fn(ra_registry *r);

/* --- API exported to plugins ---------------------------------------------------- */

/* Errors: report the reason, then return the status. */
void ra_error(const char *reason, const char *file, int line, ra_status code);

/* Case access. */
ra_tensor *ra_tensors_find(const ra_tensors *ts, const char *name);
const char *ra_case_param(const ra_case *c, const char *key);

/* New zero tensor appended to ts (replacing one of the same name). */
ra_status ra_tensors_new(ra_tensors *ts, ra_tensor **out, const char *name, ra_dtype dtype,
                         int ndim, const int64_t *shape);

/* Element access: exact widening to double; rounding to nearest even on
   store. */
double ra_tensor_get(const ra_tensor *t, int64_t i);
void ra_tensor_set(ra_tensor *t, int64_t i, double x);

#ifdef __cplusplus
}
#endif

#endif
