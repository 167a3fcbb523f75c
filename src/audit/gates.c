/* Acceptance gates: parsing data/gates.tsv and picking the row per metric. */
#include <config.h>

#include "audit/gates.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audit/registry.h"
#include "audit/tsv.h"
#include "core/metrics.h"

/*
 * Rule (documented in gates.h and in the file's header): one row per
 * metric, the most specific match wins, ties are errors.  The specificity
 * of a glob is its count of literal characters, so `gdn.cpu.chunk64.bf16`
 * beats `gdn.*chunk*.bf16*`, which beats `gdn.*`.  Comparing specificity is
 * a lexicographic comparison of (glob literals, tensor exact, dtype exact).
 */

static const char *const gate_cols[] = {"op",     "variant-glob", "dtype", "tensor",
                                        "metric", "threshold",    "why"};

void ra_gates_init(ra_gates *g)
{
    g->n = g->cap = 0;
    g->rows = NULL;
    g->path = NULL;
}

static void gate_free(ra_gate *r)
{
    free(r->op);
    free(r->variant_glob);
    free(r->dtype);
    free(r->tensor);
    free(r->metric);
    free(r->why);
}

void ra_gates_clear(ra_gates *g)
{
    for (size_t i = 0; i < g->n; i++)
        gate_free(&g->rows[i]);
    free(g->rows);
    free(g->path);
    ra_gates_init(g);
}

/* Literal characters of a glob: '*' and '?' count nothing, a bracket
   expression counts one, a backslash escape counts its character. */
static int glob_literals(const char *p)
{
    int n = 0;
    while (*p) {
        if (*p == '*' || *p == '?') {
            p++;
        } else if (*p == '[') {
            const char *q = p + 1;
            if (*q == '!' || *q == '^')
                q++;
            if (*q == ']')
                q++;
            while (*q && *q != ']')
                q++;
            if (*q == ']') {
                n++;
                p = q + 1;
            } else { /* an unclosed '[' is a literal for fnmatch */
                n++;
                p++;
            }
        } else if (*p == '\\' && p[1]) {
            n++;
            p += 2;
        } else {
            n++;
            p++;
        }
    }
    return n;
}

static int metric_known(const char *m)
{
    for (const char *const *k = ra_metric_names(); *k; k++)
        if (strcmp(*k, m) == 0)
            return 1;
    return 0;
}

/* One row of the file (ra_tsv_row_fn; ctx: the ra_gates). */
static ra_status add_row(void *ctx, char **f, int line, const char *what)
{
    ra_gates *g = ctx;
    /* The canonical dtype spellings only: the column is compared as text. */
    if (strcmp(f[2], "*") && strcmp(f[2], "f64") && strcmp(f[2], "f32") && strcmp(f[2], "bf16") &&
        strcmp(f[2], "f16"))
        RA_ERRORF(RA_EFORMAT, "%s line %d: dtype '%s' is not f64, f32, bf16, f16 or *", what, line,
                  f[2]);
    if (!metric_known(f[4]))
        RA_ERRORF(RA_EFORMAT,
                  "%s line %d: unknown metric '%s' (max_abs, max_rel, rel_rms, cos, max_ulp, "
                  "p99_ulp, max_ulp_rms)",
                  what, line, f[4]);
    char *end;
    errno = 0;
    double thr = strtod(f[5], &end);
    if (end == f[5] || *end || errno == ERANGE || !isfinite(thr) || thr < 0)
        RA_ERRORF(RA_EFORMAT, "%s line %d: threshold '%s' is not a finite number >= 0", what, line,
                  f[5]);
    if (ra_metric_higher_is_better(f[4]) && thr > 1)
        RA_ERRORF(RA_EFORMAT, "%s line %d: a %s threshold above 1 can never pass", what, line,
                  f[4]);
    for (size_t i = 0; i < g->n; i++) {
        const ra_gate *o = &g->rows[i];
        if (!strcmp(o->op, f[0]) && !strcmp(o->variant_glob, f[1]) && !strcmp(o->dtype, f[2]) &&
            !strcmp(o->tensor, f[3]) && !strcmp(o->metric, f[4]))
            RA_ERRORF(RA_EFORMAT, "%s line %d: repeats the gate of line %d", what, line, o->line);
    }
    ra_gate *rows = ra_tsv_grow(g->rows, &g->cap, g->n, sizeof *rows);
    if (!rows)
        return RA_ENOMEM;
    g->rows = rows;
    ra_gate *r = &g->rows[g->n];
    memset(r, 0, sizeof *r);
    r->op = strdup(f[0]);
    r->variant_glob = strdup(f[1]);
    r->dtype = strdup(f[2]);
    r->tensor = strdup(f[3]);
    r->metric = strdup(f[4]);
    r->why = strdup(f[6]);
    if (!r->op || !r->variant_glob || !r->dtype || !r->tensor || !r->metric || !r->why) {
        gate_free(r);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    r->threshold = thr;
    r->line = line;
    r->glob_literal = glob_literals(f[1]);
    g->n++;
    return RA_OK;
}

ra_status ra_gates_parse(ra_gates *g, const char *text, const char *what)
{
    RA_TRY(ra_tsv_parse(text, what, gate_cols, 7, "gate", add_row, g));
    if (!(g->path = strdup(what ? what : "gates")))
        RA_ERROR("out of memory", RA_ENOMEM);
    return RA_OK;
}

static ra_status parse_text(void *g, const char *text, const char *what)
{
    return ra_gates_parse(g, text, what);
}

ra_status ra_gates_load(ra_gates *g, const char *path)
{
    return ra_tsv_load(path, "gates.tsv", parse_text, g);
}

/* > 0 if a is more specific than b, < 0 if less, 0 on a tie. */
static int specificity_cmp(const ra_gate *a, const ra_gate *b)
{
    if (a->glob_literal != b->glob_literal)
        return a->glob_literal > b->glob_literal ? 1 : -1;
    int ta = strcmp(a->tensor, "*") != 0, tb = strcmp(b->tensor, "*") != 0;
    if (ta != tb)
        return ta - tb;
    int da = strcmp(a->dtype, "*") != 0, db = strcmp(b->dtype, "*") != 0;
    return da - db;
}

ra_status ra_gates_select(const ra_gate **out, size_t *n, const ra_gates *g, const char *op,
                          const char *variant, const char *dtype, const char *tensor)
{
    *n = 0;
    for (const char *const *m = ra_metric_names(); *m; m++) {
        const ra_gate *best = NULL;
        for (size_t i = 0; i < g->n; i++) {
            const ra_gate *r = &g->rows[i];
            if (strcmp(r->metric, *m) || strcmp(r->op, op) ||
                !ra_glob_match(r->variant_glob, variant))
                continue;
            if (strcmp(r->dtype, "*") && strcmp(r->dtype, dtype))
                continue;
            if (strcmp(r->tensor, "*") && strcmp(r->tensor, tensor))
                continue;
            if (!best) {
                best = r;
                continue;
            }
            int c = specificity_cmp(r, best);
            if (c == 0)
                RA_ERRORF(RA_EFORMAT,
                          "%s: lines %d and %d both gate %s of '%s' (variant %s, dtype %s) "
                          "with equal specificity; make one of them more specific",
                          g->path ? g->path : "gates", best->line, r->line, *m, tensor, variant,
                          dtype);
            if (c > 0)
                best = r;
        }
        if (best) {
            if (*n >= RA_GATES_MAX_METRICS)
                RA_ERROR("ra_gates_select: more metrics than RA_GATES_MAX_METRICS", RA_EINTERNAL);
            out[(*n)++] = best;
        }
    }
    return RA_OK;
}

int ra_gate_pass(const ra_gate *gate, double value)
{
    if (isnan(value))
        return 0;
    return ra_metric_higher_is_better(gate->metric) ? value >= gate->threshold
                                                    : value <= gate->threshold;
}
