/* Acceptance gates: data/gates.tsv, selection of the rows that apply. */
#ifndef RA_AUDIT_GATES_H
#define RA_AUDIT_GATES_H

#include <stddef.h>

#include "core/status.h"

/*
 * A gates file is tab-separated text.  Lines starting with '#' and blank
 * lines are comments; the first other line is the header
 *     op  variant-glob  dtype  tensor  metric  threshold  why
 * and every later line one gate.  `dtype` is the case's input dtype
 * (f64, f32, bf16, f16) or `*`; `tensor` a tensor name or `*`; `metric` one
 * of ra_metric_names(); `threshold` a finite number >= 0; `why` the reason,
 * non-empty (tabs are separators, so it holds none).
 *
 * Selection (ra_gates_select): for a result tensor of a variant on a case,
 * each metric is gated by exactly one row, the MOST SPECIFIC of the rows
 * that match (op equal, variant-glob matching the variant name with
 * fnmatch, dtype and tensor equal or `*`).  Specificity is compared in
 * this order: the number of literal characters of the variant glob (a
 * bracket expression counts as one), then an exact tensor over `*`, then
 * an exact dtype over `*`.  Two matching rows for one metric that tie on
 * all three are an error naming both lines: the file must say which one is
 * meant.  Rows with the same op, glob, dtype, tensor and metric are refused
 * when the file is read.
 *
 * A gate passes when value <= threshold (value >= threshold for metrics
 * where higher is better: cos).  NaN never passes.
 */

typedef struct ra_gate {
    char *op, *variant_glob, *dtype, *tensor, *metric, *why;
    double threshold;
    int line;         /* line number in the file, for messages */
    int glob_literal; /* specificity of variant_glob */
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

/* The gates for (op, variant, dtype, tensor): at most one row per metric,
   in the order of ra_metric_names().  *n = 0 when no row matches. */
ra_status ra_gates_select(const ra_gate **out, size_t *n, const ra_gates *g, const char *op,
                          const char *variant, const char *dtype, const char *tensor);

/* 1 if value passes the gate. */
int ra_gate_pass(const ra_gate *gate, double value);

#endif
