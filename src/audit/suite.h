/* Conformance suites: data/suites/<name>.tsv, the grid validate runs. */
#ifndef RA_AUDIT_SUITE_H
#define RA_AUDIT_SUITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "core/status.h"
#include "core/table.h"

/*
 * A suite file is tab-separated (syntax of src/audit/tsv.h) with header
 *     op  shape  regime  dtype  direction  seed  flags
 * op: a name of the operation table; shape: in the op's syntax (gdn:
 * B=..,T=..,Hk=..,Hv=..,K=..,V=..); regime: one of the op's regimes;
 * dtype: the input dtype (f64, f32, bf16, f16); direction: `fwd` (outputs
 * only) or `fwd+bwd` (outputs and gradients); seed: a non-negative
 * integer; flags: `-` or a comma list of the op's generation flags (gdn:
 * `h0`, generate an initial state; `l2norm`, the kernel normalises q/k;
 * `no-dht`, no final-state cotangent) and case parameters KEY=VALUE (gdn:
 * `scale=0.3`), as `gen --param KEY=VALUE` sets them.
 * The first comment line of the file is its one-line description.
 * Every field is checked when the file is read (ra_case_spec_check: the
 * op's shape parser, regime table and spec check), errors naming the file
 * and line, so a suite never fails half-way through a long run on a typo.
 */

typedef struct ra_suite_row {
    ra_case_spec spec; /* checked: op, canonical shape, regime, flags */
    int line;
} ra_suite_row;

typedef struct ra_suite {
    size_t n, cap;
    ra_suite_row *rows;
    char *path;
    char doc[160];
} ra_suite;

void ra_suite_init(ra_suite *s);
void ra_suite_clear(ra_suite *s);

/* name_or_path: a suite name ("quick", "full": data/suites/NAME.tsv) or,
   when it contains '/' or ends in ".tsv", a file path. */
ra_status ra_suite_load(ra_suite *s, const char *name_or_path);
ra_status ra_suite_parse(ra_suite *s, const char *text, const char *what);

/* `recaudit list suites`: name, rows, description, coverage of the
   feature matrix (src/audit/gdn_matrix.h), path of every
   data/suites/NAME.tsv (sorted by name). */
ra_status ra_suite_table(ra_table **out);
/* The same as a `recaudit list` row (ra_list_fill_fn); takes no plugins. */
ra_status ra_list_suites(ra_table **out, const char *const *plugins);

#endif
