/* Internal: the table of operations that have an MPFR reference, and the cache. */
#ifndef RA_REF_REFOP_H
#define RA_REF_REFOP_H

#include <stdint.h>

#include <mpfr.h>

#include "core/case.h"
#include "core/progress.h"
#include "core/status.h"
#include "ref/mparr.h"
#include "ref/ref.h"

/*
 * An operation's reference is four functions: prepare validates a case
 * and converts its inputs (once), run evaluates every output at one
 * precision into MPFR arrays, release frees the prepared state.  The
 * certification driver (certify.c) is generic over them: it calls run at
 * two precisions, compares, raises precision, rounds to f64.  An
 * operation's row of the operation table (src/core/op.h) points at its
 * ra_ref_op.
 */

#define RA_REF_MAX_OUTS 16
#define RA_REF_MAX_PRECS 2

typedef struct ra_ref_out {
    char name[32];
    int ndim;
    int64_t shape[RA_MAX_DIMS];
    ra_mparr a; /* empty in a layout */
} ra_ref_out;

/* Outputs in a fixed order (forward outputs, then gradients). */
typedef struct ra_ref_outs {
    size_t n;
    ra_ref_out t[RA_REF_MAX_OUTS];
} ra_ref_outs;

void ra_ref_outs_clear(ra_ref_outs *o); /* frees every array; keeps names */

typedef struct ra_ref_op {
    const char *name;
    /* Validates c (messages name `what`) and fills layout with every output
       the run will produce (names, shapes). grads: gradients are produced
       when the case has the cotangents the backward needs. */
    ra_status (*prepare)(void **state, ra_ref_outs *layout, const ra_case *c, int grads,
                         const char *what);
    /* Work units per precision of a run (progress bar total). */
    int64_t (*units)(const void *state);
    /* Every output of layout at each precision precs[i] into outs[i] (same
       order); nprec <= RA_REF_MAX_PRECS.  One call for several precisions
       lets the op balance all of their work over the threads together. */
    ra_status (*run)(ra_ref_outs *outs, const mpfr_prec_t *precs, int nprec, const void *state,
                     int threads, ra_progress *prog);
    void (*release)(void *state);
    /* MPFR arithmetic calls of one run at one precision (bench-ref's
       per-core rates): the forward alone, and what the gradients add when
       the state was prepared with them (0 otherwise). */
    void (*op_count)(const void *state, double *fwd, double *bwd);
} ra_ref_op;

extern const ra_ref_op ra_ref_op_gdn;
extern const ra_ref_op ra_ref_op_glr;
extern const ra_ref_op ra_ref_op_bigdn, ra_ref_op_bigdn_core;

/* The row for op, or NULL. */
const ra_ref_op *ra_ref_op_find(const char *op);

/* --- cache (cache.c) ------------------------------------------------------------------------ */

/* Directory of the cache: o->cache_dir, else $RECAUDIT_CACHE, else
   $HOME/.cache/recaudit (malloc'ed). */
ra_status ra_ref_cache_dir(char **out, const ra_ref_opts *o);

/* Looks key up under dir.  *hit = 1 and ref filled when an entry exists
   and passes verification (parses; op; metadata cache_key == key; exactly
   the layout's tensors, f64, with its shapes; content_hash matches the
   tensors and the metadata, certificate included).  An entry that fails
   is left for the caller to overwrite: *hit = 0, *stale = 1 and a note
   naming the file and the reason goes to the error handler.  Absent:
   *hit = 0, *stale = 0. */
ra_status ra_ref_cache_lookup(ra_case *ref, int *hit, int *stale, const char *dir, const char *key,
                              const char *op, const ra_ref_outs *layout);

/* Writes ref (which must carry cache_key = key and its content_hash) as
   <dir>/<key>.safetensors atomically, creating dir as needed. */
ra_status ra_ref_cache_store(const ra_case *ref, const char *dir, const char *key);

/* Hex XXH3-128 of a reference's op, metadata (sorted by key; all but
   content_hash and cache, so the certificate is covered) and tensors
   (sorted by name: name, dtype, shape, bytes).  RA_ENOMEM only. */
ra_status ra_ref_content_hash(char hex[33], const ra_case *ref);

/* ra_ref_cache_key with a given reference-code version (tests show that
   the version is part of the key). */
void ra_ref_cache_key_for(char hex[33], const ra_case *c, const ra_ref_opts *o,
                          const char *code_version);

#endif
