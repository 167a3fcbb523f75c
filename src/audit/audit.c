/* Running a variant on a case and comparing its result with the reference. */
#include <config.h>

#include "audit/audit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/capture.h"
#include "core/gdn_case.h"

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
static ra_row *row_new(ra_rows *rows, const char *variant, const ra_case_id *id, const char *tensor,
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

ra_status ra_rows_note(ra_rows *rows, const char *variant, const ra_case_id *id, const char *tensor,
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

/* --- case identity ---------------------------------------------------------------- */

/* The case's l2norm parameter with the spellings ra_case_param_bool
   accepts; a malformed value counts as false here, and the variant's own
   validation refuses the case with its message. */
static int case_l2norm(const ra_case *c)
{
    int on = 0;
    ra_error_handler_t *prev = ra_capture_begin();
    if (ra_case_param_bool(&on, c, "l2norm", 0) != RA_OK)
        on = 0;
    ra_capture_end(prev);
    return on;
}

void ra_case_id_from_case(ra_case_id *id, const ra_case *c, int bwd)
{
    memset(id, 0, sizeof *id);
    copy_str(id->op, sizeof id->op, c->op);
    const ra_tensor *q = ra_tensors_find(&c->tensors, "q");
    const ra_tensor *v = ra_tensors_find(&c->tensors, "v");
    if (c->op && strcmp(c->op, "gdn") == 0 && q && v && q->ndim == 4 && v->ndim == 4) {
        ra_gdn_shape s = {q->shape[0], q->shape[1], q->shape[2],
                          v->shape[2], q->shape[3], v->shape[3]};
        ra_gdn_shape_format(id->shape, sizeof id->shape, &s);
    } else {
        copy_str(id->shape, sizeof id->shape, ra_case_param(c, "shape"));
    }
    copy_str(id->regime, sizeof id->regime, ra_case_param(c, "regime"));
    /* The input dtype is what the tensors are, whatever the metadata says. */
    if (q)
        copy_str(id->dtype, sizeof id->dtype, ra_dtype_name(q->dtype));
    else if (c->tensors.n)
        copy_str(id->dtype, sizeof id->dtype, ra_dtype_name(c->tensors.items[0]->dtype));
    else
        copy_str(id->dtype, sizeof id->dtype, ra_case_param(c, "dtype"));
    const char *seed = ra_case_param(c, "seed");
    char *end;
    if (seed && *seed && *seed != '-') {
        id->seed = strtoull(seed, &end, 10);
        id->has_seed = *end == '\0';
    }
    id->h0 = ra_tensors_find(&c->tensors, "h0") != NULL;
    id->l2norm = case_l2norm(c);
    id->bwd = bwd;
}

/* --- running a variant -------------------------------------------------------------- */

/* Largest squared L2 norm over the last axis of t (a key tensor
   [B,T,Hk,K]); NaN propagates, so a NaN key is never "unit". */
static double max_row_norm2(const ra_tensor *t)
{
    const int64_t n = t->shape[t->ndim - 1];
    double worst = 0;
    for (int64_t r = 0; n > 0 && r < t->numel / n; r++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = ra_tensor_get(t, r * n + i);
            s += x * x;
        }
        if (isnan(s))
            return s;
        if (s > worst)
            worst = s;
    }
    return worst;
}

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
    if (strcmp(c->op, "gdn") != 0)
        return 1;
    const ra_tensor *q = ra_tensors_find(&c->tensors, "q");
    const ra_tensor *vv = ra_tensors_find(&c->tensors, "v");
    if (ra_tensors_find(&c->tensors, "h0") && !(v->caps & RA_H0)) {
        snprintf(why, len, "no initial state (capability h0)");
        return 0;
    }
    if (q && vv && q->ndim == 4 && vv->ndim == 4) {
        if (vv->shape[2] != q->shape[2] && !(v->caps & RA_GQA)) {
            snprintf(why, len, "no grouped value heads (capability gqa)");
            return 0;
        }
        if (q->shape[1] % 64 != 0 && !(v->caps & RA_TAIL)) {
            snprintf(why, len, "T=%lld is not a multiple of 64 (capability tail)",
                     (long long)q->shape[1]);
            return 0;
        }
    }
    int l2norm = case_l2norm(c);
    if (l2norm && !(v->caps & RA_L2NORM)) {
        snprintf(why, len, "no in-kernel L2 normalisation (capability l2norm)");
        return 0;
    }
    const ra_tensor *k = ra_tensors_find(&c->tensors, "k");
    if ((v->caps & RA_UNIT_KEYS) && !l2norm && k && k->ndim == 4) {
        double worst = max_row_norm2(k);
        if (!(worst <= RA_UNIT_KEYS_MAX_NORM2)) {
            snprintf(why, len, "needs unit-norm keys (requirement unit-keys): max |k|^2 = %.3g",
                     worst);
            return 0;
        }
    }
    return 1;
}

/* 1 if c holds a cotangent of one of the outputs in out. */
static int has_cotangent(const ra_case *c, const ra_tensors *out)
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

ra_status ra_variant_run_forward(ra_case *result, const ra_variant *v, const ra_case *c,
                                 ra_run *run)
{
    RA_TRY(result_init(result, v, c));
    ra_status st = v->forward(c, &result->tensors, run);
    if (st == RA_OK && result->tensors.n == 0)
        RA_ERRORF(RA_EINTERNAL, "variant %s: forward returned no output", v->name);
    return st;
}

ra_status ra_variant_run_backward(ra_case *result, const ra_variant *v, const ra_case *c,
                                  ra_run *run)
{
    ra_tensors grads;
    ra_tensors_init(&grads);
    ra_status st = v->backward(c, &grads, run);
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
    if (bwd && (v->caps & RA_BWD) && has_cotangent(c, &result->tensors))
        RA_TRY(ra_variant_run_backward(result, v, c, run));
    return RA_OK;
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

/* A new row carrying the metrics of one tensor and its worst element. */
static ra_status metrics_row(ra_row **out, ra_rows *rows, const char *variant,
                             const ra_case_id *id, const ra_tensor *ref, const ra_check_opts *o,
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

static ra_status compare_one(ra_rows *rows, const ra_tensor *res, const ra_tensor *ref,
                             const ra_case_id *id, const ra_check_opts *o)
{
    const char *variant = o->variant ? o->variant : "-";
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
        RA_TRY(ra_gates_select(sel, &nsel, o->gates, id->op, variant, id->dtype, ref->name));
    if (nsel == 0) {
        ra_row *row;
        RA_TRY(metrics_row(&row, rows, variant, id, ref, o, &m, at));
        if (o->gates && o->require_gates) {
            snprintf(row->note, sizeof row->note,
                     "no gate in %s covers op %s, variant %s, dtype %s, tensor %s",
                     o->gates->path ? o->gates->path : "the gates", id->op, variant, id->dtype,
                     ref->name);
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

ra_status ra_check_compare(ra_rows *rows, const ra_case *result, const ra_case *ref,
                           const ra_case_id *id, const ra_check_opts *o)
{
    const char *variant = o->variant ? o->variant : "-";
    if (o->expected) {
        for (const char *const *e = o->expected; *e; e++) {
            const ra_tensor *rt = ra_tensors_find(&ref->tensors, *e);
            if (!rt)
                RA_ERRORF(RA_EINTERNAL, "expected tensor '%s' is not in the reference", *e);
            const ra_tensor *res = ra_tensors_find(&result->tensors, *e);
            if (!res)
                RA_TRY(ra_rows_note(rows, variant, id, *e, o->repro, RA_VERDICT_FAIL,
                                    "missing from the result"));
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
        RA_ERROR("the result holds none of the reference's tensors (names must follow docs/gdn.md: "
                 "o, ht, dq, dk, dv, dg, dbeta, dh0 for gdn)",
                 RA_EINVAL);
    return RA_OK;
}
