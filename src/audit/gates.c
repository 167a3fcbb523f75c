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
 * Rule (documented in gates.h and in the file's header): the variant's
 * declared precision class picks the gates, never its name.  Per metric,
 * the most specific CLASS row (refine `*`) of the variant's class is the
 * gate; the STRICTEST matching REFINEMENT row (refine a glob over the
 * variant name, optionally keyed by the regime) replaces it, and each must
 * be at least as strict as the class gate, so a name can tighten its
 * class's gate but never loosen it.  Among class rows an exact tensor
 * beats `*`, then an exact dtype beats `*` (no two can tie).  Among
 * refinements the threshold decides, not the key's specificity: every
 * refinement only tightens, so the strictest of them is what all of them
 * ask for, whatever order or key lengths the file gives them.
 */

static const char *const gate_cols[] = {"op",     "class",  "refine",    "dtype",
                                        "tensor", "metric", "threshold", "why"};

void ra_gates_init(ra_gates *g)
{
    g->n = g->cap = 0;
    g->rows = NULL;
    g->path = NULL;
}

static void gate_free(ra_gate *r)
{
    free(r->op);
    free(r->pclass);
    free(r->refine);
    free(r->dtype);
    free(r->tensor);
    free(r->metric);
    free(r->why);
    free(r->vglob);
    free(r->rglob);
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

/* One row of the file (ra_tsv_row_fn; ctx: the ra_gates).  Fields: op,
   class, refine, dtype, tensor, metric, threshold, why. */
static ra_status add_row(void *ctx, char **f, int line, const char *what)
{
    ra_gates *g = ctx;
    if (!ra_pclass_known(f[1]))
        RA_ERRORF(RA_EFORMAT,
                  "%s line %d: class '%s' is not a precision class (f64, f32, ieee, tf32, "
                  "tf32x3, bf16: RA_PCLASSES of recaudit/plugin.h)",
                  what, line, f[1]);
    /* The canonical dtype spellings only: the column is compared as text. */
    if (strcmp(f[3], "*") && strcmp(f[3], "f64") && strcmp(f[3], "f32") && strcmp(f[3], "bf16") &&
        strcmp(f[3], "f16"))
        RA_ERRORF(RA_EFORMAT, "%s line %d: dtype '%s' is not f64, f32, bf16, f16 or *", what, line,
                  f[3]);
    if (!metric_known(f[5]))
        RA_ERRORF(RA_EFORMAT,
                  "%s line %d: unknown metric '%s' (max_abs, max_rel, rel_rms, cos, max_ulp, "
                  "p99_ulp, max_ulp_rms)",
                  what, line, f[5]);
    char *end;
    errno = 0;
    double thr = strtod(f[6], &end);
    if (end == f[6] || *end || errno == ERANGE || !isfinite(thr) || thr < 0)
        RA_ERRORF(RA_EFORMAT, "%s line %d: threshold '%s' is not a finite number >= 0", what, line,
                  f[6]);
    if (ra_metric_higher_is_better(f[5]) && thr > 1)
        RA_ERRORF(RA_EFORMAT, "%s line %d: a %s threshold above 1 can never pass", what, line,
                  f[5]);
    for (size_t i = 0; i < g->n; i++) {
        const ra_gate *o = &g->rows[i];
        if (!strcmp(o->op, f[0]) && !strcmp(o->pclass, f[1]) && !strcmp(o->refine, f[2]) &&
            !strcmp(o->dtype, f[3]) && !strcmp(o->tensor, f[4]) && !strcmp(o->metric, f[5]))
            RA_ERRORF(RA_EFORMAT, "%s line %d: repeats the gate of line %d", what, line, o->line);
    }
    ra_gate *rows = ra_tsv_grow(g->rows, &g->cap, g->n, sizeof *rows);
    if (!rows)
        return RA_ENOMEM;
    g->rows = rows;
    ra_gate *r = &g->rows[g->n];
    memset(r, 0, sizeof *r);
    r->op = strdup(f[0]);
    r->pclass = strdup(f[1]);
    r->refine = strdup(f[2]);
    r->dtype = strdup(f[3]);
    r->tensor = strdup(f[4]);
    r->metric = strdup(f[5]);
    r->why = strdup(f[7]);
    if (!r->op || !r->pclass || !r->refine || !r->dtype || !r->tensor || !r->metric || !r->why) {
        gate_free(r);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    r->threshold = thr;
    r->line = line;
    r->refines = strcmp(f[2], "*") != 0;
    if (r->refines) {
        /* GLOB, GLOB@RGLOB or GLOB@!RGLOB (keyed by the case's regime) */
        const char *at = strchr(f[2], '@');
        r->vglob = at ? strndup(f[2], (size_t)(at - f[2])) : strdup(f[2]);
        if (at) {
            r->rglob_not = at[1] == '!';
            r->rglob = strdup(at + 1 + r->rglob_not);
        }
        if (!r->vglob || (at && !r->rglob)) {
            gate_free(r);
            RA_ERROR("out of memory", RA_ENOMEM);
        }
        if (!r->vglob[0] || (at && !r->rglob[0])) {
            gate_free(r);
            RA_ERRORF(RA_EFORMAT,
                      "%s line %d: refine '%s' is not GLOB, GLOB@REGIME-GLOB or "
                      "GLOB@!REGIME-GLOB",
                      what, line, f[2]);
        }
        r->glob_literal = glob_literals(r->vglob) + (r->rglob ? glob_literals(r->rglob) : 0);
    }
    g->n++;
    return RA_OK;
}

/* 1 if the first line that is not a comment or blank is the header of the
   former layout (op, variant-glob, ...), whose rows picked gates by name. */
static int old_layout(const char *text)
{
    const char *p = text;
    while (*p == '#' || *p == '\n' || *p == '\r') {
        const char *nl = strchr(p, '\n');
        if (!nl)
            return 0;
        p = nl + 1;
    }
    static const char old[] = "op\tvariant-glob\t";
    return strncmp(p, old, sizeof old - 1) == 0;
}

ra_status ra_gates_parse(ra_gates *g, const char *text, const char *what)
{
    if (old_layout(text))
        RA_ERRORF(RA_EFORMAT,
                  "%s: the variant-glob column is gone: gates are selected by the variant's "
                  "declared precision class (columns op, class, refine, dtype, tensor, metric, "
                  "threshold, why; data/gates.tsv's header explains)",
                  what ? what : "gates");
    RA_TRY(ra_tsv_parse(text, what, gate_cols, 8, "gate", add_row, g));
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

/* > 0 if a is more specific than b, < 0 if less, 0 on a tie (rows of one
   kind: both class rows, or both refinements). */
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

/* 1 if a's threshold is stricter than b's. */
static int stricter(const ra_gate *a, const ra_gate *b)
{
    return ra_metric_higher_is_better(a->metric) ? a->threshold > b->threshold
                                                 : a->threshold < b->threshold;
}

/* The row of one kind gating metric m: among class rows (refines 0) the
   most specific (two of equal specificity that both match would repeat
   each other's op, class, dtype, tensor and metric, which add_row
   refuses, so there is no tie); among refinements (refines 1) the
   strictest, the most specific of equally strict ones (then the earlier
   line) naming the gate, and *loosest the least strict (checked against
   the class gate).  *best NULL when none matches. */
static void pick(const ra_gate **best, const ra_gate **loosest, const ra_gates *g, int refines,
                 const char *m, const char *op, const char *pclass, const char *variant,
                 const char *regime, const char *dtype, const char *tensor)
{
    *best = *loosest = NULL;
    for (size_t i = 0; i < g->n; i++) {
        const ra_gate *r = &g->rows[i];
        if (r->refines != refines || strcmp(r->metric, m) || strcmp(r->op, op) ||
            strcmp(r->pclass, pclass))
            continue;
        if (refines && (!variant || !ra_glob_match(r->vglob, variant)))
            continue;
        if (refines && r->rglob && (!regime || ra_glob_match(r->rglob, regime) == r->rglob_not))
            continue;
        if (strcmp(r->dtype, "*") && strcmp(r->dtype, dtype))
            continue;
        if (strcmp(r->tensor, "*") && strcmp(r->tensor, tensor))
            continue;
        if (!*best) {
            *best = *loosest = r;
        } else if (!refines) {
            if (specificity_cmp(r, *best) > 0)
                *best = r;
        } else {
            if (stricter(*loosest, r))
                *loosest = r;
            if (stricter(r, *best) || (!stricter(*best, r) && specificity_cmp(r, *best) > 0))
                *best = r;
        }
    }
}

ra_status ra_gates_select(const ra_gate **out, size_t *n, const ra_gates *g, const char *op,
                          const char *pclass, const char *variant, const char *dtype,
                          const char *tensor)
{
    return ra_gates_select_case(out, n, g, op, pclass, variant, NULL, dtype, tensor);
}

ra_status ra_gates_select_case(const ra_gate **out, size_t *n, const ra_gates *g, const char *op,
                               const char *pclass, const char *variant, const char *regime,
                               const char *dtype, const char *tensor)
{
    *n = 0;
    if (!pclass)
        return RA_OK;
    for (const char *const *m = ra_metric_names(); *m; m++) {
        const ra_gate *cls, *ref, *unused, *loose;
        pick(&cls, &unused, g, 0, *m, op, pclass, variant, regime, dtype, tensor);
        pick(&ref, &loose, g, 1, *m, op, pclass, variant, regime, dtype, tensor);
        if (ref && !cls)
            RA_ERRORF(RA_EFORMAT,
                      "%s line %d: refinement '%s' of %s for '%s' (class %s, dtype %s) has no "
                      "class gate to tighten; add the class row",
                      g->path ? g->path : "gates", ref->line, ref->refine, *m, tensor, pclass,
                      dtype);
        /* No matching refinement loosens: equal thresholds are allowed. */
        if (loose && !ra_gate_pass(cls, loose->threshold))
            RA_ERRORF(RA_EFORMAT,
                      "%s line %d: refinement '%s' would loosen the class %s gate of line %d "
                      "(%s of '%s': %g against %g); a name may only tighten its class's gate",
                      g->path ? g->path : "gates", loose->line, loose->refine, pclass, cls->line,
                      *m, tensor, loose->threshold, cls->threshold);
        const ra_gate *best = ref ? ref : cls;
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
