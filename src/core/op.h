/* The operation descriptor: everything generic code needs to know about one operation. */
#ifndef RA_CORE_OP_H
#define RA_CORE_OP_H

/*
 * Every operation the suite audits is one ra_op row (the way a generic
 * ring hangs off a method table): its case layout, parameters, generation
 * flags, regimes, capability bits, shape syntax, generator, reference and
 * gradient-check hooks, and the test of whether a variant can serve a
 * case.  The commands, the audit, suites, gates, certification, the cache
 * and the finite-difference engine read the row and never name an
 * operation; an operation's own files (src/core/<op>_*.c, src/ref/<op>*.c,
 * ...) fill it in, and src/core/ops.c lists the rows.  docs/develop.md
 * walks through adding one.
 *
 * A case to generate (or the identity of a case read from a file) is one
 * ra_case_spec: op, canonical shape text, regime, input dtype, seed,
 * the op's generation flags as bits, and whether gradients are wanted.
 */

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/status.h"
#include "recaudit/plugin.h"

struct ra_ref_op;
struct ra_gc_op;
struct ra_derive_set;

/* Role of a tensor in the operation's files. */
typedef enum ra_role {
    RA_ROLE_INPUT,     /* in a case file; differentiable unless the row lists it in nondiff */
    RA_ROLE_COTANGENT, /* in a case file: d<output> */
    RA_ROLE_OUTPUT,    /* in a result or reference */
    RA_ROLE_GRADIENT   /* in a result or reference: d<input> */
} ra_role;

typedef struct ra_op_tensor {
    const char *name;  /* "q" */
    ra_role role;
    const char *shape; /* axes as dimension names, outermost first: "B,T,Hk,K" */
    int optional;      /* may be absent (h0, dht, dh0) */
    int state;         /* stored in f32 whatever the case dtype (f64 when it is f64) */
} ra_op_tensor;

/* A named item with a one-line doc: parameters, flags, regimes. */
typedef struct ra_op_item {
    const char *name;
    const char *doc;
} ra_op_item;

/* A capability bit of the operation (RA_CAP_OP(i) of recaudit/plugin.h). */
typedef struct ra_op_cap {
    unsigned bit;
    const char *name; /* "h0": as `list variants` prints it */
    const char *doc;
} ra_op_cap;

#define RA_SPEC_SHAPE_MAX 96
#define RA_SPEC_REGIME_MAX 64 /* gdn composites: strong-decay+aligned-keys+... */
#define RA_SPEC_PARAMS_MAX 96

/* A case: enough to regenerate it with one command. */
typedef struct ra_case_spec {
    char op[16];
    char shape[RA_SPEC_SHAPE_MAX];   /* canonical text ("-" when unknown) */
    char regime[RA_SPEC_REGIME_MAX]; /* "-" when unknown */
    char dtype[8];                   /* input dtype: the gates' dtype column */
    unsigned long long seed;
    int has_seed;   /* 0 for a case read from a file without a seed */
    unsigned flags; /* bit i: the op's flags[i] ("h0", "l2norm" for gdn) */
    int bwd;        /* gradients wanted */
    /* case parameters to set, "key=value,key=value" ("" when none): each
       key one of the op's params, set after generation (`--param`, a
       suite's flags column) */
    char params[RA_SPEC_PARAMS_MAX];
} ra_case_spec;

typedef struct ra_op {
    const char *name; /* "gdn" */
    const char *doc;  /* one line: what it computes, where it is specified */
    const ra_op_tensor *tensors; /* ends with a NULL name */
    /* inputs without a gradient (constant tables), NULL-terminated; NULL:
       every input is differentiable */
    const char *const *nondiff;
    const ra_op_item *params;    /* case parameters; doc says the default */
    const ra_op_item *flags;     /* generation flags, bit i = flags[i] */
    const ra_op_item *regimes;   /* the first is the default */
    const ra_op_cap *caps;       /* capability bits beyond RA_FWD/RA_BWD */
    const char *shape_example;   /* "B=1,T=64,Hk=1,Hv=2,K=16,V=16" */
    const char *bench_shape;     /* bench-ref's default shape */
    /* gradcheck's default shapes: element-wise, then directional/dot */
    const char *gradcheck_shapes[2];

    /* Parses a --shape text (errors name the field) into its canonical
       form. */
    ra_status (*shape_canon)(char *buf, size_t len, const char *text);
    /* Refuses a spec the generator cannot serve (beyond an unknown regime
       or a bad shape, which generic code checks), so that a suite fails
       on load, not half-way through a run.  May be NULL. */
    ra_status (*spec_check)(const ra_case_spec *s);
    /* The canonical shape of one independent unit of work of a shape
       (gdn: one head), on which bench-ref measures per-core rates. */
    ra_status (*unit_shape)(char *buf, size_t len, const char *shape);
    /* Fills an empty case from a spec (deterministic in the seed). */
    ra_status (*generate)(ra_case *c, const ra_case_spec *s);
    /* The shape text and the flags of a case read from a file ("-" and 0
       when the case does not say); never fails. */
    void (*identify)(ra_case_spec *s, const ra_case *c);
    /* 1 if variant v (of this op, whose generic capabilities are checked
       already) can serve c; else 0 with the reason in why. */
    int (*supports)(const ra_variant *v, const ra_case *c, char *why, size_t len);
    /* Nominal floating-point operations of one forward (bwd = 0) or one
       backward (bwd = 1) of c, for `bench`'s TFLOP/s: one count per
       operation whatever the variant's algorithm, so the rate is
       proportional to 1/time; flops_doc states the formula.  NULL: bench
       prints no rate. */
    double (*flops)(const ra_case *c, int bwd);
    const char *flops_doc;

    const struct ra_ref_op *ref;      /* MPFR reference (src/ref/refop.h) */
    const struct ra_gc_op *gradcheck; /* finite-difference hooks, or NULL */
    /* closed-form formula sets `recaudit derive` checks (src/gradcheck/
       derive.h), NULL-terminated; NULL: none */
    const struct ra_derive_set *const *derive;
} ra_op;

/* Every operation, NULL-terminated. */
const ra_op *const *ra_ops(void);
/* The row for name, or NULL. */
const ra_op *ra_op_find(const char *name);
/* The row for name; RA_ENOTFOUND naming the known operations (the
   message starts with what, e.g. "--op"). */
ra_status ra_op_require(const ra_op **out, const char *name, const char *what);

/* Lookups in a row; -1 / NULL when absent.  ra_op_regime also finds
   NAME for "NAME:PARAM", a regime with a parameter (scan's
   "rotation:0.25"), and the first NAME of "NAME+NAME2+...", a composite
   (gdn's); whether the regime takes either, and which, is for the op's
   spec_check to say. */
int ra_op_flag_index(const ra_op *op, const char *name);
const ra_op_item *ra_op_regime(const ra_op *op, const char *name);
const ra_op_tensor *ra_op_tensor_find(const ra_op *op, const char *name);
/* 1 when input `name` of op has no gradient (ra_op.nondiff). */
int ra_op_input_nondiff(const ra_op *op, const char *name);
/* Names of the tensors of one role, NULL-terminated, in layout order
   (n >= their count + 1). */
size_t ra_op_tensor_names(const char **out, size_t n, const ra_op *op, ra_role role);

/* "fwd,bwd,h0,gqa" for a capability mask of a variant of op (op NULL:
   the generic bits only; unknown bits as 0x..). */
void ra_op_caps_format(char *buf, size_t len, const ra_op *op, unsigned caps);
/* Every capability bit op defines, with RA_FWD and RA_BWD. */
unsigned ra_op_caps_known(const ra_op *op);

/* --- case specs ------------------------------------------------------------------ */

void ra_case_spec_init(ra_case_spec *s);
/* The spec of a case read from a file: op, shape and flags (the op's
   identify), regime and seed from its metadata, the input dtype from its
   first input tensor. */
void ra_case_spec_from_case(ra_case_spec *s, const ra_case *c, int bwd);
/* Sets flag `name` of s's op: RA_EINVAL naming the op's flags. */
ra_status ra_case_spec_set_flag(ra_case_spec *s, const ra_op *op, const char *name);
/* Sets case parameter "key=value" of s (replacing an earlier value of
   key): RA_EINVAL unless key is one of op's params and value is non-empty
   without ',' or blanks. */
ra_status ra_case_spec_set_param(ra_case_spec *s, const ra_op *op, const char *kv);
/* The value of case parameter key in s (copied to buf), or NULL. */
const char *ra_case_spec_param(char *buf, size_t len, const ra_case_spec *s, const char *key);
/* Joins the names of the set flags and then the parameters, each
   preceded by prefix (" --" gives command options, a parameter then
   " --param key=value"; " " a list, "key=value"). */
void ra_case_spec_flags_format(char *buf, size_t len, const ra_case_spec *s, const char *prefix);
/* Checks a spec against its op and canonicalises its shape: the op is
   known, the shape parses, the regime is the op's, the dtype is one,
   the parameters are the op's, the op's spec_check passes.  Messages
   start with what. */
ra_status ra_case_spec_check(ra_case_spec *s, const char *what);
/* Generates the case a checked spec describes: the op's generator, then
   the spec's parameters. */
ra_status ra_case_spec_generate(ra_case *c, const ra_case_spec *s);
/* Removes c's tensors of one role of op (`gen --fwd-only`: the
   cotangents). */
void ra_case_drop_role(ra_case *c, const ra_op *op, ra_role role);

#endif
