/* Feature matrices (gdn's, the only one so far) and covering arrays (pairwise suites) over them. */
#ifndef RA_AUDIT_GDN_MATRIX_H
#define RA_AUDIT_GDN_MATRIX_H

#include <stddef.h>

#include "audit/suite.h"
#include "core/status.h"

/*
 * A feature matrix lists the production features of an operation whose
 * combinations a kernel may get wrong (head dims, T against the internal
 * block sizes, grouped-head ratio, l2norm, h0, dht, parameters, batch,
 * regime, input dtype), each with a few values (classes).  Every suite row
 * of that op falls in exactly one class of every feature (numbers by
 * range: K=48 is in the K<=64 class), so a suite's coverage is the number
 * of (feature a = x, feature b = y) pairs that some row exhibits, out of
 * all pairs (docs/gdn.md, "Coverage"): a suite that covers every pair
 * catches every defect that needs at most two features to show.
 *
 * ra_matrix_generate builds a covering array: greedy (AETG-like), one row
 * at a time, the candidate with the most new pairs per second of
 * estimated validate time, so the big shapes (K = V = 256) go to rows
 * with small T and B; the size x size pairs whose cheapest row is over
 * the first phase's cost cap get rows of a second phase, under a higher
 * cap; the pairs admitted after those rows were measured (raw-keys with
 * big-beta) get rows of a third phase.  Deterministic: the same matrix gives the same rows on
 * every machine (its own LCG, no libc rand).
 */

/* Coverage of suite s by op's matrix: pairs covered and total.  *total =
   0 when op has no matrix. */
ra_status ra_matrix_coverage(const ra_suite *s, const char *op, size_t *covered, size_t *total);

/* The pairs no row of s covers, one line each ("K=256 & T>256"), into
   buf (truncated with "..." at len); returns how many. */
size_t ra_matrix_missing(const ra_suite *s, const char *op, char *buf, size_t len);

/* Writes the covering-array rows of op's matrix as suite TSV lines (no
   header) to buf (malloc'd; *nrows rows), seeds seed0, seed0 + 1, ...
   RA_EINVAL for an op without a matrix. */
ra_status ra_matrix_generate(char **text, size_t *nrows, const char *op, unsigned long long seed0);

/* The operation whose matrix `recaudit pairs` uses by default (gdn). */
const char *ra_matrix_default_op(void);

/* "gdn C/T pairs" for `list suites` ("-" when the
   suite has no rows of an op with a matrix). */
void ra_matrix_coverage_text(char *buf, size_t len, const ra_suite *s);

#endif
