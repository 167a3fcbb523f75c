/* Acceptance gates: data/gates.tsv, selection of the rows that apply. */
#ifndef RA_AUDIT_GATES_H
#define RA_AUDIT_GATES_H

#include <stddef.h>

#include "core/status.h"

/*
 * A gates file is tab-separated text.  Lines starting with '#' and blank
 * lines are comments; the first other line is the header
 *     op  class  refine  dtype  tensor  metric  threshold  why
 * and every later line one gate.  `class` is a precision class, one of
 * RA_PCLASSES (recaudit/plugin.h); `refine` is `*` (a CLASS row) or a
 * glob over variant names (a REFINEMENT row); `dtype` is the case's input
 * dtype (f64, f32, bf16, f16) or `*`; `tensor` a tensor name or `*`;
 * `metric` one of ra_metric_names(); `threshold` a finite number >= 0;
 * `why` the reason, non-empty (tabs are separators, so it holds none).
 * A refinement may be keyed by the case's regime as well: `GLOB@RGLOB`
 * applies where the variant name matches GLOB and the regime name matches
 * RGLOB, `GLOB@!RGLOB` where it does not (a class's harsh composite
 * regimes keep the class envelope while every other regime gets a tighter
 * gate).  Such a row, like every refinement, only tightens.
 *
 * Selection (ra_gates_select): the variant's DECLARED precision class
 * (ra_variant.pclass, or `check --class`) picks the gates, never its name.
 * For a result tensor each metric is gated by exactly one row: the most
 * specific class row of that op and class whose dtype and tensor match
 * (equal or `*`; an exact tensor beats `*`, then an exact dtype beats
 * `*`; two rows of equal specificity would repeat each other, which is
 * refused when the file is read).  The
 * refinement rows of the same op and class whose glob matches the variant
 * name (fnmatch; and the regime, for keyed ones) and whose dtype and
 * tensor match may each only tighten it, and the STRICTEST of them
 * replaces it, whatever their order in the file or the lengths of their
 * keys (among equally strict ones the most specific names the gate: most
 * literal characters of the glob, a bracket expression counting one, then
 * tensor, then dtype).  A matching refinement that is looser than the
 * class gate, or has no class gate to tighten, is an error naming the
 * lines: a name can tighten its class's gates, never loosen or create
 * them.  Rows with the same op,
 * class, refine, dtype, tensor and metric are refused when the file is
 * read.
 *
 * A gate passes when value <= threshold (value >= threshold for metrics
 * where higher is better: cos).  NaN never passes.
 */

typedef struct ra_gate {
    char *op, *pclass, *refine, *dtype, *tensor, *metric, *why;
    double threshold;
    int line;         /* line number in the file, for messages */
    int refines;      /* refine is a glob, not `*` */
    int glob_literal; /* specificity of refine (0 for class rows) */
    char *vglob;      /* refine's variant glob (refinements only) */
    char *rglob;      /* refine's regime glob after '@', or NULL */
    int rglob_not;    /* the row applies where the regime does NOT match */
} ra_gate;

typedef struct ra_gates {
    size_t n, cap;
    ra_gate *rows;
    char *path; /* the file, for messages */
} ra_gates;

void ra_gates_init(ra_gates *g);
void ra_gates_clear(ra_gates *g);

/* Reads a gates file; path NULL reads the shipped data/gates.tsv. */
ra_status ra_gates_load(ra_gates *g, const char *path);
/* Parses gates text (what names it in messages). */
ra_status ra_gates_parse(ra_gates *g, const char *text, const char *what);

#define RA_GATES_MAX_METRICS 8

/* The gates for (op, class pclass, variant name, input dtype, tensor): at
   most one row per metric, in the order of ra_metric_names().  *n = 0 when
   no row matches or pclass is NULL; variant NULL matches no refinement. */
ra_status ra_gates_select(const ra_gate **out, size_t *n, const ra_gates *g, const char *op,
                          const char *pclass, const char *variant, const char *dtype,
                          const char *tensor);

/* As ra_gates_select, for a case of the given regime (NULL: no regime,
   so no regime-keyed refinement applies). */
ra_status ra_gates_select_case(const ra_gate **out, size_t *n, const ra_gates *g, const char *op,
                               const char *pclass, const char *variant, const char *regime,
                               const char *dtype, const char *tensor);

/* 1 if value passes the gate. */
int ra_gate_pass(const ra_gate *gate, double value);

#endif
