/* The audit pipeline: run a variant, compare with the reference, gate, verdicts. */
#ifndef RA_AUDIT_AUDIT_H
#define RA_AUDIT_AUDIT_H

#include <stddef.h>

#include "audit/gates.h"
#include "audit/isolate.h"
#include "audit/registry.h"
#include "audit/suite.h"
#include "core/case.h"
#include "core/metrics.h"
#include "core/op.h"
#include "core/progress.h"
#include "core/status.h"
#include "ref/ref.h"

/*
 * Every audit command ends in a list of verdict rows (ra_rows): one row per
 * gate applied to one tensor of one variant's result on one case, plus
 * rows for what could not be gated (a skipped variant, a variant that
 * failed to run, a missing tensor, a tensor no gate covers, an uncertified
 * reference).  `check` compares one result file, `audit` one generated case
 * against every matching variant, `validate` a whole suite; the commands
 * only parse options and print rows.  Tests call the same entry points on
 * registries of their own rows (planted defects: src/cpu/faults.h).
 *
 * Verdicts: PASS and FAIL for gate rows; FAIL also for a variant error, a
 * missing output, an uncertified reference and (when gates are required) a
 * tensor without a gate; SKIP when a variant cannot serve a case (missing
 * capability, or it returned RA_EUNSUPPORTED); INFO for metrics reported
 * without gates (check without a variant).
 */

typedef enum ra_verdict {
    RA_VERDICT_PASS,
    RA_VERDICT_FAIL,
    RA_VERDICT_SKIP,
    RA_VERDICT_INFO
} ra_verdict;

const char *ra_verdict_name(ra_verdict v); /* "pass", "FAIL", "skip", "-" */

typedef struct ra_row {
    char variant[96];
    char pclass[16]; /* the variant's declared precision class, "-" when unknown */
    ra_case_spec id;
    char tensor[32];  /* "-" for a row about the whole run */
    char metric[16];  /* the gated metric, "" when none */
    double value;     /* the metric's value (NaN when none) */
    double threshold; /* the gate's threshold (gated rows) */
    int gated;
    int higher_is_better;
    ra_verdict verdict;
    char note[512];  /* the gate's why, or the reason for skip/failure */
    int has_metrics; /* m and worst_at are filled */
    ra_metrics m;
    char worst_at[96]; /* multi-index of the worst element */
    int ndim;          /* shape of the tensor (has_metrics) */
    int64_t shape[RA_MAX_DIMS];
    char repro[1024]; /* one command reproducing the row */
} ra_row;

typedef struct ra_rows {
    size_t n, cap;
    ra_row *v;
    size_t passed, failed, skipped;
} ra_rows;

/* ulp_cls of a row with metrics: max|err| / (u rms(ref)), u the unit
   roundoff of the row's declared class (ra_pclass_unit): the largest error
   in units of the class's rounding at the tensor's scale.  Defined for
   every element (no conditioning), finite whenever rms(ref) > 0; NaN
   for an unknown class or a row without metrics. */
double ra_row_ulp_cls(const ra_row *r);

void ra_rows_init(ra_rows *rows);
void ra_rows_clear(ra_rows *rows);

/* --- running a variant --------------------------------------------------------- */

/* 1 if v can serve case c (the op, RA_BWD when bwd asks for the
   backward too, then the op's own capability test); else 0 with the
   reason in why. */
int ra_variant_supports(const ra_variant *v, const ra_case *c, int bwd, char *why, size_t len);

/* Runs v on c: the forward, then the backward when bwd is set, v has
   RA_BWD and c carries a cotangent of an output.  result (an empty case)
   gets c's op and parameters, "variant", and every output and gradient the
   variant produced.  Errors of the variant come back as its status (the
   variant has reported them). */
ra_status ra_variant_execute(ra_case *result, const ra_variant *v, const ra_case *c, int bwd,
                             ra_run *run);

/* 1 if c holds a cotangent ("d" + name) of one of the outputs in out. */
int ra_case_has_cotangent(const ra_case *c, const ra_tensors *out);

/* The two halves of ra_variant_execute, for callers that tell a forward
   failure from a backward one: the forward initialises result (op,
   parameters, "variant") and adds the outputs; the backward adds the
   gradients (a gradient named like an output is refused). */
ra_status ra_variant_run_forward(ra_case *result, const ra_variant *v, const ra_case *c,
                                 ra_run *run);
ra_status ra_variant_run_backward(ra_case *result, const ra_variant *v, const ra_case *c,
                                  ra_run *run);
/* Both in v's one call (forward_backward; RA_EINVAL for a variant without
   it): result initialised as by the forward, with the outputs and the
   gradients. */
ra_status ra_variant_run_forward_backward(ra_case *result, const ra_variant *v, const ra_case *c,
                                          ra_run *run);
/* Whether fb (forward_backward's result) holds exactly the tensors of the
   separate calls' results f and b (b NULL: f holds both), bit for bit:
   the one call may skip recomputing, never change a bit.  1 with the
   first difference in why, else 0. */
int ra_fused_differs(char *why, size_t len, const ra_case *fb, const ra_case *f, const ra_case *b);

/* Appends a row without metrics (a skip, an error, a missing tensor) with
   the note formatted from fmt and counts its verdict. */
ra_status ra_rows_note(ra_rows *rows, const char *variant, const ra_case_spec *id, const char *tensor,
                       const char *repro, ra_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* --- comparing a result with a reference -------------------------------------- */

typedef struct ra_check_opts {
    const ra_gates *gates;       /* NULL: metrics only (INFO rows) */
    const char *variant;         /* name the gates are selected for */
    int require_gates;           /* a tensor that no gate covers is a FAIL row */
    const char *const *expected; /* NULL-ended names the result must hold;
                                    NULL: the tensors the result has */
    const char *repro;           /* command copied into every row */
    const char *pclass;          /* precision class the gates are selected by;
                                    NULL: none (no gate applies) */
} ra_check_opts;

/* Metrics of every expected tensor of result against ref, then the gates:
   rows appended.  A result tensor the reference lacks is an error when it
   is expected, else ignored.  Shape mismatches and bad files are errors
   (returned); gate failures are rows. */
ra_status ra_check_compare(ra_rows *rows, const ra_case *result, const ra_case *ref,
                           const ra_case_spec *id, const ra_check_opts *o);

/* Names of the gradients in ref: "d<x>" for every tensor x of the case. */
int ra_is_gradient_of(const char *name, const ra_case *c);

/* Refuses (RA_ENUMERIC, naming what and the bits) a reference whose
   certified parameter is not "yes"; prints nothing else. */
ra_status ra_ref_require_certified(const ra_case *ref, const char *what);
/* 1 if ref may be compared against: representable in f64 (certified is
   not "not-representable": no finite truth to measure against, whatever
   allow_uncertified says) and certified "yes" unless allow_uncertified;
   else 0 with the reason, for a FAIL row, in why. */
int ra_ref_usable(const ra_case *ref, int allow_uncertified, char *why, size_t len);
/* Refuses (RA_ENUMERIC, naming what and the non-finite tensors) a
   reference that is not representable in f64. */
ra_status ra_ref_require_representable(const ra_case *ref, const char *what);
/* "o 113, ht 113, dq 112" from the certified_bits.* parameters. */
void ra_ref_bits_format(char *buf, size_t len, const ra_case *ref);

/* --- audit and validate ------------------------------------------------------------ */

typedef struct ra_audit_opts {
    const ra_gates *gates;  /* required */
    const char *gates_path; /* non-NULL: repro commands add --gates PATH */
    ra_ref_opts ref;
    int allow_uncertified;
    int threads;
    ra_progress *progress; /* advanced once per variant run (may be NULL) */
    ra_isolation iso;      /* child process per (variant, case), time limit */
} ra_audit_opts;

void ra_audit_opts_init(ra_audit_opts *o);

/* Generates the case described by id (a checked spec), takes its reference (through the
   cache) once, and runs, compares and gates every variant of r whose name
   matches glob and whose op is id->op.  Verdicts become rows; the return
   status is for failures that stop the audit itself (generation, the
   reference, memory). */
ra_status ra_audit_case(ra_rows *rows, const ra_registry *r, const char *glob, const ra_case_spec *id,
                        const ra_audit_opts *o);

/* ra_audit_case over every row of a suite.  RA_ENOTFOUND when no variant
   matches glob. */
ra_status ra_validate(ra_rows *rows, const ra_registry *r, const char *glob, const ra_suite *s,
                      const ra_audit_opts *o);

/* Variants matching glob that serve op: for progress totals. */
size_t ra_audit_count_variants(const ra_registry *r, const char *glob, const char *op);

#endif
