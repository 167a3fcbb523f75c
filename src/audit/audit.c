/* Running a variant on a case and comparing its result with the reference. */
#include <config.h>

#include "audit/audit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/capture.h"

/*
 * A result and a reference are compared tensor by tensor with
 * ra_metrics_compute, ulps counted in the result tensor's storage dtype
 * (max_ulp is in the output's storage format).  Each metric that
 * a gate selects (src/audit/gates.h) becomes one verdict row carrying the
 * full metrics of its tensor and the worst element, so every printer (the
 * validate table, TAP, JSON, the audit table) reads the same rows.
 *
 * Failures of the kernel under test (a wrong shape, a missing output, NaN)
 * are verdicts, not errors: the audit goes on to the next tensor and
 * variant.  Errors are reserved for what stops the audit itself.
 */

void ra_rows_init(ra_rows *rows) { memset(rows, 0, sizeof *rows); }

void ra_rows_clear(ra_rows *rows)
{
    free(rows->v);
    ra_rows_init(rows);
}

const char *ra_verdict_name(ra_verdict v)
{
    switch (v) {
    case RA_VERDICT_PASS:
        return "pass";
    case RA_VERDICT_FAIL:
        return "FAIL";
    case RA_VERDICT_SKIP:
        return "skip";
    case RA_VERDICT_INFO:
        return "-";
    }
    return "?";
}

static void copy_str(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src ? src : "-");
}

/* A new row with the identifying fields set; NULL after reporting ENOMEM. */
static ra_row *row_new(ra_rows *rows, const char *variant, const ra_case_spec *id, const char *tensor,
                       const char *repro)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? 2 * rows->cap : 64;
        ra_row *v = realloc(rows->v, cap * sizeof *v);
        if (!v) {
            RA_REPORTF(RA_ENOMEM, "out of memory");
            return NULL;
        }
        rows->v = v;
        rows->cap = cap;
    }
    ra_row *row = &rows->v[rows->n++];
    memset(row, 0, sizeof *row);
    copy_str(row->variant, sizeof row->variant, variant);
    copy_str(row->pclass, sizeof row->pclass, NULL);
    row->id = *id;
    copy_str(row->tensor, sizeof row->tensor, tensor);
    row->value = NAN;
    row->threshold = NAN;
    row->verdict = RA_VERDICT_INFO;
    copy_str(row->repro, sizeof row->repro, repro);
    return row;
}

static void row_verdict(ra_rows *rows, ra_row *row, ra_verdict v)
{
    row->verdict = v;
    if (v == RA_VERDICT_PASS)
        rows->passed++;
    else if (v == RA_VERDICT_FAIL)
        rows->failed++;
    else if (v == RA_VERDICT_SKIP)
        rows->skipped++;
}

ra_status ra_rows_note(ra_rows *rows, const char *variant, const ra_case_spec *id, const char *tensor,
                       const char *repro, ra_verdict v, const char *fmt, ...)
{
    ra_row *row = row_new(rows, variant, id, tensor, repro);
    if (!row)
        return RA_ENOMEM;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->note, sizeof row->note, fmt, ap);
    va_end(ap);
    row_verdict(rows, row, v);
    return RA_OK;
}

/* --- running a variant -------------------------------------------------------------- */

int ra_variant_supports(const ra_variant *v, const ra_case *c, int bwd, char *why, size_t len)
{
    if (!c->op || strcmp(v->op, c->op) != 0) {
        snprintf(why, len, "variant is for op %s, the case is %s", v->op, c->op ? c->op : "-");
        return 0;
    }
    if (bwd && !(v->caps & RA_BWD)) {
        snprintf(why, len, "no backward (capability bwd)");
        return 0;
    }
    const ra_op *op = ra_op_find(c->op);
    return op ? op->supports(v, c, why, len) : 1;
}

int ra_case_has_cotangent(const ra_case *c, const ra_tensors *out)
{
    for (size_t i = 0; i < out->n; i++) {
        char name[128];
        snprintf(name, sizeof name, "d%s", out->items[i]->name);
        if (ra_tensors_find(&c->tensors, name))
            return 1;
    }
    return 0;
}

static ra_status result_init(ra_case *result, const ra_variant *v, const ra_case *c)
{
    RA_TRY(ra_case_set_op(result, c->op));
    RA_TRY(ra_kv_copy(&result->params, &c->params));
    return ra_kv_set(&result->params, "variant", v->name);
}

/* fn (v's forward or forward_backward, named what) into an initialised
   result; a call that returns nothing is the variant's bug, not a pass. */
static ra_status run_into(ra_case *result, const ra_variant *v, ra_variant_fn *fn, const char *what,
                          const ra_case *c, ra_run *run)
{
    RA_TRY(result_init(result, v, c));
    ra_status st = fn(v, c, &result->tensors, run);
    if (st == RA_OK && result->tensors.n == 0)
        RA_ERRORF(RA_EINTERNAL, "variant %s: %s returned no output", v->name, what);
    return st;
}

ra_status ra_variant_run_forward(ra_case *result, const ra_variant *v, const ra_case *c,
                                 ra_run *run)
{
    return run_into(result, v, v->forward, "forward", c, run);
}

ra_status ra_variant_run_forward_backward(ra_case *result, const ra_variant *v, const ra_case *c,
                                          ra_run *run)
{
    if (!v->forward_backward)
        RA_ERRORF(RA_EINVAL, "variant %s: no forward_backward", v->name);
    return run_into(result, v, v->forward_backward, "forward_backward", c, run);
}

ra_status ra_variant_run_backward(ra_case *result, const ra_variant *v, const ra_case *c,
                                  ra_run *run)
{
    ra_tensors grads;
    ra_tensors_init(&grads);
    ra_status st = v->backward(v, c, &grads, run);
    for (size_t i = 0; st == RA_OK && i < grads.n; i++) {
        if (ra_tensors_find(&result->tensors, grads.items[i]->name)) {
            RA_REPORTF(RA_EINTERNAL, "variant %s: backward tensor '%s' has an output's name",
                       v->name, grads.items[i]->name);
            st = RA_EINTERNAL;
        }
    }
    while (st == RA_OK && grads.n) {
        ra_tensor *t = ra_tensors_take(&grads, grads.items[0]->name);
        st = ra_tensors_add(&result->tensors, t);
    }
    ra_tensors_clear(&grads);
    return st;
}

ra_status ra_variant_execute(ra_case *result, const ra_variant *v, const ra_case *c, int bwd,
                             ra_run *run)
{
    RA_TRY(ra_variant_run_forward(result, v, c, run));
    if (bwd && (v->caps & RA_BWD) && ra_case_has_cotangent(c, &result->tensors))
        RA_TRY(ra_variant_run_backward(result, v, c, run));
    return RA_OK;
}

/* How tensor t of the separate calls and the fused call's u (NULL: absent)
   differ, into why; 0 when they are the same bits. */
static int tensor_differs(char *why, size_t len, const ra_tensor *t, const ra_tensor *u)
{
    if (!u) {
        snprintf(why, len, "'%s' missing", t->name);
        return 1;
    }
    if (u->dtype != t->dtype) {
        snprintf(why, len, "'%s' dtype %s, separate calls %s", t->name, ra_dtype_name(u->dtype),
                 ra_dtype_name(t->dtype));
        return 1;
    }
    if (!ra_shape_equal(u->ndim, u->shape, t->ndim, t->shape)) {
        char a[48], b[48]; /* shapes of a few dims; longer ones truncated */
        ra_shape_format(a, sizeof a, u->ndim, u->shape);
        ra_shape_format(b, sizeof b, t->ndim, t->shape);
        snprintf(why, len, "'%s' shape %s, separate calls %s", t->name, a, b);
        return 1;
    }
    const size_t es = ra_dtype_size(t->dtype);
    int64_t n = 0;
    for (int64_t i = 0; i < t->numel; i++)
        n += memcmp((const char *)t->data + i * es, (const char *)u->data + i * es, es) != 0;
    if (n)
        snprintf(why, len, "'%s' %lld of %lld elements differ", t->name, (long long)n,
                 (long long)t->numel);
    return n != 0;
}

int ra_fused_differs(char *why, size_t len, const ra_case *fb, const ra_case *f, const ra_case *b)
{
    const ra_tensors *sep[] = {&f->tensors, b ? &b->tensors : &f->tensors};
    for (int s = 0; s < (b ? 2 : 1); s++)
        for (size_t i = 0; i < sep[s]->n; i++) {
            const ra_tensor *t = sep[s]->items[i];
            if (tensor_differs(why, len, t, ra_tensors_find(&fb->tensors, t->name)))
                return 1;
        }
    for (size_t i = 0; i < fb->tensors.n; i++) {
        const char *name = fb->tensors.items[i]->name;
        if (!ra_tensors_find(&f->tensors, name) && !(b && ra_tensors_find(&b->tensors, name))) {
            snprintf(why, len, "'%s' not given by the separate calls", name);
            return 1;
        }
    }
    return 0;
}

/* --- comparing --------------------------------------------------------------------------- */

int ra_is_gradient_of(const char *name, const ra_case *c)
{
    return name[0] == 'd' && name[1] && ra_tensors_find(&c->tensors, name + 1) != NULL;
}

void ra_ref_bits_format(char *buf, size_t len, const ra_case *ref)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ref->params.n; i++) {
        const char *k = ref->params.keys[i];
        if (strncmp(k, "certified_bits.", 15) != 0)
            continue;
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%s %s", used ? ", " : "",
                         k + 15, ref->params.vals[i]);
        if (w > 0)
            used += (size_t)w;
    }
    if (!used)
        snprintf(buf, len, "none recorded");
}

ra_status ra_ref_require_certified(const ra_case *ref, const char *what)
{
    const char *cert = ra_case_param(ref, "certified");
    if (cert && strcmp(cert, "yes") == 0)
        return RA_OK;
    char bits[512];
    ra_ref_bits_format(bits, sizeof bits, ref);
    RA_ERRORF(RA_ENUMERIC,
              "%s: reference is not certified (certified=%s; bits: %s); raise the precision "
              "cap, or pass --allow-uncertified to use it anyway",
              what, cert ? cert : "absent", bits);
}

/* "o 512 (first at [0, 4, 0, 0])" from the nonfinite.* parameters. */
static void nonfinite_format(char *buf, size_t len, const ra_case *ref)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ref->params.n; i++) {
        const char *k = ref->params.keys[i];
        if (strncmp(k, "nonfinite.", 10) != 0)
            continue;
        char at[64];
        snprintf(at, sizeof at, "nonfinite_at.%s", k + 10);
        const char *first = ra_case_param(ref, at);
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%s %s (first at %s)",
                         used ? ", " : "", k + 10, ref->params.vals[i], first ? first : "?");
        if (w > 0)
            used += (size_t)w;
    }
}

int ra_ref_usable(const ra_case *ref, int allow_uncertified, char *why, size_t len)
{
    const char *cert = ra_case_param(ref, "certified");
    if (cert && strcmp(cert, "not-representable") == 0) {
        char bad[384];
        nonfinite_format(bad, sizeof bad, ref);
        snprintf(why, len,
                 "reference not representable in f64 (non-finite values: %s): no verdict is "
                 "possible",
                 bad);
        return 0;
    }
    if (allow_uncertified || (cert && strcmp(cert, "yes") == 0))
        return 1;
    char bits[384];
    ra_ref_bits_format(bits, sizeof bits, ref);
    snprintf(why, len, "reference not certified (bits: %s); --allow-uncertified uses it", bits);
    return 0;
}

ra_status ra_ref_require_representable(const ra_case *ref, const char *what)
{
    char why[512];
    if (ra_ref_usable(ref, 1, why, sizeof why))
        return RA_OK;
    RA_ERRORF(RA_ENUMERIC, "%s: %s", what, why);
}

/* A new row carrying the metrics of one tensor and its worst element. */
static ra_status metrics_row(ra_row **out, ra_rows *rows, const char *variant,
                             const ra_case_spec *id, const ra_tensor *ref, const ra_check_opts *o,
                             const ra_metrics *m, const char *worst_at)
{
    ra_row *row = row_new(rows, variant, id, ref->name, o->repro);
    if (!row)
        return RA_ENOMEM;
    row->has_metrics = 1;
    row->m = *m;
    snprintf(row->worst_at, sizeof row->worst_at, "%s", worst_at);
    row->ndim = ref->ndim;
    memcpy(row->shape, ref->shape, sizeof row->shape);
    *out = row;
    return RA_OK;
}

/* The index of ref's largest finite magnitude beyond the finite range of
   dt, or -1: a truth the result's dtype cannot hold, so no rounding of it
   can be judged (the finite twin of certified=not-representable). */
static int64_t beyond_range(const ra_tensor *ref, ra_dtype dt)
{
    const double max = ra_dtype_max(dt);
    int64_t at = -1;
    double worst = max;
    for (int64_t i = 0; i < ref->numel; i++) {
        double x = fabs(ra_tensor_get(ref, i));
        if (isfinite(x) && x > worst)
            worst = x, at = i;
    }
    return at;
}

static ra_status compare_one(ra_rows *rows, const ra_tensor *res, const ra_tensor *ref,
                             const ra_case_spec *id, const ra_check_opts *o)
{
    const char *variant = o->variant ? o->variant : "-";
    const int64_t big = beyond_range(ref, res->dtype);
    if (big >= 0) {
        char at[96];
        ra_index_format(at, sizeof at, big, ref->ndim, ref->shape);
        return ra_rows_note(rows, variant, id, ref->name, o->repro, RA_VERDICT_FAIL,
                            "reference outside the %s range (|%s%s| = %.3g > %.3g, the largest "
                            "finite %s): no verdict is possible",
                            ra_dtype_name(res->dtype), ref->name, at, fabs(ra_tensor_get(ref, big)),
                            ra_dtype_max(res->dtype), ra_dtype_name(res->dtype));
    }
    if (!ra_shape_equal(res->ndim, res->shape, ref->ndim, ref->shape)) {
        char a[128], b[128];
        ra_shape_format(a, sizeof a, res->ndim, res->shape);
        ra_shape_format(b, sizeof b, ref->ndim, ref->shape);
        return ra_rows_note(rows, variant, id, ref->name, o->repro, RA_VERDICT_FAIL,
                            "result shape %s differs from the reference's %s", a, b);
    }
    ra_metrics m;
    RA_TRY(ra_metrics_compute(&m, res, ref, res->dtype));
    char at[96];
    ra_index_format(at, sizeof at, m.worst_index, ref->ndim, ref->shape);

    const ra_gate *sel[RA_GATES_MAX_METRICS];
    size_t nsel = 0;
    if (o->gates)
        RA_TRY(ra_gates_select_case(sel, &nsel, o->gates, id->op, o->pclass, variant, id->regime,
                                    id->dtype, ref->name));
    if (nsel == 0) {
        ra_row *row;
        RA_TRY(metrics_row(&row, rows, variant, id, ref, o, &m, at));
        if (o->gates && o->require_gates) {
            snprintf(row->note, sizeof row->note,
                     "no gate in %s covers op %s, class %s, variant %s, dtype %s, tensor %s",
                     o->gates->path ? o->gates->path : "the gates", id->op,
                     o->pclass ? o->pclass : "none (give --class)", variant, id->dtype, ref->name);
            row_verdict(rows, row, RA_VERDICT_FAIL);
        } else {
            row_verdict(rows, row, RA_VERDICT_INFO);
        }
        return RA_OK;
    }
    for (size_t i = 0; i < nsel; i++) {
        ra_row *row;
        RA_TRY(metrics_row(&row, rows, variant, id, ref, o, &m, at));
        snprintf(row->metric, sizeof row->metric, "%s", sel[i]->metric);
        RA_TRY(ra_metrics_get(&row->value, &m, sel[i]->metric));
        row->threshold = sel[i]->threshold;
        row->gated = 1;
        row->higher_is_better = ra_metric_higher_is_better(sel[i]->metric);
        snprintf(row->note, sizeof row->note, "%s:%d: %s",
                 o->gates->path ? o->gates->path : "gates", sel[i]->line, sel[i]->why);
        row_verdict(rows, row,
                    ra_gate_pass(sel[i], row->value) ? RA_VERDICT_PASS : RA_VERDICT_FAIL);
    }
    return RA_OK;
}

/* A result with none of the reference's tensors: name the ones expected. */
static ra_status no_common_tensor(const ra_case *ref)
{
    char names[256] = "";
    for (size_t i = 0; i < ref->tensors.n; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 ref->tensors.items[i]->name);
    RA_ERRORF(RA_EINVAL,
              "the result holds none of the reference's tensors (op %s: %s; names as the "
              "operation's document in docs/ gives them)",
              ref->op ? ref->op : "-", names);
}

static ra_status compare_all(ra_rows *rows, const ra_case *result, const ra_case *ref,
                             const ra_case_spec *id, const ra_check_opts *o)
{
    const char *variant = o->variant ? o->variant : "-";
    if (o->expected) {
        for (const char *const *e = o->expected; *e; e++) {
            const ra_tensor *rt = ra_tensors_find(&ref->tensors, *e);
            if (!rt)
                RA_ERRORF(RA_EINTERNAL, "expected tensor '%s' is not in the reference", *e);
            const ra_tensor *res = ra_tensors_find(&result->tensors, *e);
            const ra_op *op = ref->op ? ra_op_find(ref->op) : NULL;
            const ra_op_tensor *role = op ? ra_op_tensor_find(op, *e) : NULL;
            if (!res)
                RA_TRY(ra_rows_note(
                    rows, variant, id, *e, o->repro, RA_VERDICT_FAIL, "missing %s %s",
                    role && role->role == RA_ROLE_GRADIENT ? "gradient" : "output", *e));
            else
                RA_TRY(compare_one(rows, res, rt, id, o));
        }
        return RA_OK;
    }
    size_t compared = 0;
    for (size_t i = 0; i < result->tensors.n; i++) {
        const ra_tensor *res = result->tensors.items[i];
        const ra_tensor *rt = ra_tensors_find(&ref->tensors, res->name);
        if (!rt)
            continue;
        RA_TRY(compare_one(rows, res, rt, id, o));
        compared++;
    }
    if (!compared)
        return no_common_tensor(ref);
    return RA_OK;
}

ra_status ra_check_compare(ra_rows *rows, const ra_case *result, const ra_case *ref,
                           const ra_case_spec *id, const ra_check_opts *o)
{
    size_t from = rows->n;
    ra_status st = compare_all(rows, result, ref, id, o);
    /* Every row says which class gated it (notes included). */
    for (size_t i = from; i < rows->n; i++)
        copy_str(rows->v[i].pclass, sizeof rows->v[i].pclass, o->pclass);
    return st;
}
