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
 * a plugin whose ra_plugin_abi_version it does not know (below 3, above its
 * own), naming both versions.  The functions declared below are exported
 * by the recaudit executable, which the plugin links against at load time
 * (build the plugin with unresolved ra_* symbols allowed, the default for
 * shared objects).
 *
 * Contract of forward(self, c, out, run): self is the variant's own row
 * (its data pointer carries the configuration, so one function serves
 * many rows); read the inputs of case c (tensors by the names the
 * operation's document in docs/ gives them, parameters by key), add every
 * output tensor to out in the variant's storage dtype (for gdn: o
 * [B,T,Hv,V] and ht [B,Hv,K,V]), return RA_OK or an ra_status after
 * reporting why with ra_error.  backward(self, c, grads, run): c also holds
 * the cotangents (for gdn: do, dht); add the gradient of every
 * differentiable input (for gdn: dq, dk, dv, dg, dbeta, and dh0 when c has
 * h0).  A variant that cannot serve a case (a shape outside its envelope,
 * a missing capability) returns RA_EUNSUPPORTED; validate reports that row
 * as skipped, not passed.
 *
 * Names: op.algorithm.precision[.inverse], e.g. gdn.chunk64.tf32.neumann,
 * by convention, for readers.  The row DECLARES its arithmetic as its
 * precision class (pclass), one of RA_PCLASSES: "f64" and "f32"
 * (sequential arithmetic in that type), "ieee" (chunked, fp32 products),
 * "tf32", "tf32x3", "bf16" (chunked, matmul operands in that format, fp32
 * accumulation); `recaudit list variants` and every verdict row show it.
 * THE CLASS PICKS THE GATES: data/gates.tsv selects thresholds by op and
 * class, whatever the name says, so declare the arithmetic the kernel
 * really does (a TF32 product in a kernel declared "ieee" fails its
 * gates).  A name can only match a refinement row, which may tighten its
 * class's gate and never loosen it.
 *
 * ABI history: 1 — first version.  2 — the unit-keys requirement bit.
 * 3 — rows carry a data pointer and the functions receive their row;
 * rows declare their precision class; capability bits beyond
 * RA_FWD/RA_BWD are defined per operation (recaudit/gdn.h for gdn);
 * ra_run lost its test-only faults field.  The case-parameter readers
 * ra_case_param_bool/double/int were exported from the start (the
 * executable exports all of its ra_* API) and are declared here since;
 * a plugin that calls them loads into any version-3 recaudit.  4 — the
 * optional forward_backward (a training step in one call) at the end of
 * ra_variant; version-3 plugins still load (their rows have none).
 */

#include "recaudit/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RA_PLUGIN_ABI_VERSION 4

/* The precision classes a variant may declare (ra_variant.pclass). */
#define RA_PCLASSES "f64", "f32", "ieee", "tf32", "tf32x3", "bf16"

typedef enum ra_device { RA_CPU = 0, RA_CUDA = 1 } ra_device;

/* Capabilities (ra_variant.caps) every operation has. */
enum {
    RA_FWD = 1u << 0, /* forward: outputs */
    RA_BWD = 1u << 1  /* backward: gradients from cotangents */
};
/* Bit i of the operation's own capabilities and requirements; each
   operation's public header names its bits (recaudit/gdn.h), and
   `recaudit list ops` prints them. */
#define RA_CAP_OP(i) (1u << (8 + (i)))

/* Per-run settings and measurements, shared between harness and variant. */
typedef struct ra_run {
    int threads;       /* CPU threads the variant may use (0: its default) */
    int device;        /* CUDA device ordinal */
    double elapsed_ms; /* set by the variant if it times itself, else < 0 */
    void *user;        /* reserved for the variant */
} ra_run;

typedef struct ra_variant ra_variant;

/* forward and backward (see the contract above). */
typedef ra_status ra_variant_fn(const ra_variant *self, const ra_case *c, ra_tensors *out,
                                ra_run *run);

struct ra_variant {
    const char *name; /* "gdn.chunk64.tf32": op.algorithm.precision[.inverse] */
    const char *op;   /* "gdn" */
    const char *doc;  /* one line: what it computes and how */
    ra_device device;
    const char *pclass; /* declared arithmetic, one of RA_PCLASSES: picks the gates */
    unsigned caps;      /* RA_FWD, RA_BWD and the operation's RA_CAP_OP bits */
    const void *data; /* the implementation's configuration for this row */
    ra_variant_fn *forward;
    ra_variant_fn *backward; /* NULL without RA_BWD */
    /* Optional (ABI 4), only with RA_BWD: a training step, the outputs and
       the gradients in one call, the backward reusing what the forward
       kept (so it may skip recomputing it).  It must give the bits that
       forward then backward give: bench times it as the fwd+bwd row and
       refuses a row whose tensors differ from the separate calls'.  NULL:
       fwd+bwd is the forward's time plus the backward's. */
    ra_variant_fn *forward_backward;
};

typedef struct ra_registry ra_registry;

/* Adds a variant (the struct is copied; its strings, data and functions
   must stay valid while the registry lives).  Refused: a duplicate name,
   an operation this recaudit does not know, a precision class not in
   RA_PCLASSES, capability bits the operation does not define. */
ra_status ra_registry_add(ra_registry *r, const ra_variant *v);

/* Entry point a plugin exports. */
typedef ra_status ra_plugin_register_fn(ra_registry *r);

/* --- API exported to plugins ---------------------------------------------------- */

/* Errors: report the reason, then return the status. */
void ra_error(const char *reason, const char *file, int line, ra_status code);

/* Case access. */
ra_tensor *ra_tensors_find(const ra_tensors *ts, const char *name);
/* A parameter's text as the case file holds it; NULL when absent. */
const char *ra_case_param(const ra_case *c, const char *key);

/* Parameter readers, the ones the built-in variants use (the case checks),
   so that a plugin accepts and refuses exactly the texts the host does.
   An absent parameter gives dflt.  A present but malformed one is
   reported (ra_error, naming the parameter and its text) and refused with
   RA_EINVAL, *out untouched.  Accepted texts: booleans 1, true, yes, on /
   0, false, no, off in any case; doubles a whole strtod number that is
   finite (no overflow); integers a whole base-10 strtol number in range.
   Range checks of the operation (gdn: l2eps >= 0) are the caller's. */
ra_status ra_case_param_bool(int *out, const ra_case *c, const char *key, int dflt);
ra_status ra_case_param_double(double *out, const ra_case *c, const char *key, double dflt);
ra_status ra_case_param_int(long *out, const ra_case *c, const char *key, long dflt);

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
