/* Verdict rows as tables (text/md/csv/json), TAP 13 and a JSON document. */
#include <config.h>

#include "audit/report.h"

#include "audit/registry.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/io.h"

/*
 * Numbers are printed with 3 significant digits in tables (%.3g) and with
 * full precision (%.17g, or JSON reals) in the JSON document, which is the
 * machine-readable record.  Non-finite values are "nan"/"inf" strings in
 * JSON, which has no spelling for them.
 */

static void fmt_num(char *buf, size_t len, double x)
{
    if (isnan(x))
        snprintf(buf, len, "nan");
    else if (isinf(x))
        snprintf(buf, len, x > 0 ? "inf" : "-inf");
    else
        snprintf(buf, len, "%.3g", x);
}

static void fmt_gate(char *buf, size_t len, const ra_row *r)
{
    if (!r->gated)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s %g", r->higher_is_better ? ">=" : "<=", r->threshold);
}

static ra_status finish_table(ra_table *t, FILE *f, ra_format fmt, ra_status st)
{
    if (st == RA_OK)
        st = ra_table_write(t, f, fmt);
    ra_table_free(t);
    return st;
}

ra_status ra_report_validate_table(FILE *f, const ra_rows *rows, ra_format fmt)
{
    static const char *const h[] = {"variant", "class",  "shape", "regime", "dtype",
                                    "tensor",  "metric", "value", "gate",   "pass"};
    ra_table *t;
    RA_TRY(ra_table_new(&t, 10, h));
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < rows->n; i++) {
        const ra_row *r = &rows->v[i];
        char value[32], gate[48];
        if (r->gated)
            fmt_num(value, sizeof value, r->value);
        else
            snprintf(value, sizeof value, "-");
        fmt_gate(gate, sizeof gate, r);
        const char *cells[] = {r->variant,
                               r->pclass,
                               r->id.shape,
                               r->id.regime,
                               r->id.dtype,
                               r->tensor,
                               r->gated ? r->metric : "-",
                               value,
                               gate,
                               ra_verdict_name(r->verdict)};
        st = ra_table_add_row(t, cells);
    }
    return finish_table(t, f, fmt, st);
}

/* Summary of the rows [from, to) that belong to one (variant, tensor). */
static void gates_summary(char *buf, size_t len, const ra_rows *rows, size_t from, size_t to)
{
    size_t used = 0;
    int any_gate = 0, all_pass = 1;
    buf[0] = '\0';
    for (size_t i = from; i < to; i++) {
        const ra_row *r = &rows->v[i];
        if (r->verdict == RA_VERDICT_SKIP) {
            snprintf(buf, len, "skip");
            return;
        }
        if (r->verdict == RA_VERDICT_FAIL) {
            all_pass = 0;
            int w = snprintf(buf + used, len > used ? len - used : 0, "%s%s", used ? "," : "FAIL ",
                             r->gated ? r->metric : "(see below)");
            if (w > 0)
                used += (size_t)w;
        }
        any_gate |= r->gated;
    }
    if (all_pass)
        snprintf(buf, len, "%s", any_gate ? "pass" : "-");
}

ra_status ra_report_metrics_table(FILE *f, const ra_rows *rows, ra_format fmt, int with_variant)
{
    static const char *const h[] = {"variant", "tensor",      "class",   "dtype",   "max_ulp",
                                    "p99_ulp", "max_ulp_rms", "ulp_cls", "rel_rms", "max_rel",
                                    "max_abs", "cos",         "nan",     "inf",     "worst",
                                    "value",   "ref",         "gates"};
    enum { NCOLS = sizeof h / sizeof h[0] };
    int off = with_variant ? 0 : 1;
    ra_table *t;
    RA_TRY(ra_table_new(&t, NCOLS - off, h + off));
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < rows->n;) {
        /* Rows of one (variant, tensor) are adjacent: ra_check_compare
           appends all the gates of a tensor together. */
        size_t j = i + 1;
        while (j < rows->n && strcmp(rows->v[j].variant, rows->v[i].variant) == 0 &&
               strcmp(rows->v[j].tensor, rows->v[i].tensor) == 0 &&
               memcmp(&rows->v[j].id, &rows->v[i].id, sizeof rows->v[i].id) == 0)
            j++;
        const ra_row *r = &rows->v[i];
        char c[15][96], cls[32] = "-";
        char gates[128];
        gates_summary(gates, sizeof gates, rows, i, j);
        for (int k = 0; k < 15; k++)
            snprintf(c[k], sizeof c[k], "-");
        if (r->has_metrics && !isnan(ra_pclass_unit(r->pclass))) /* else no class: "-" */
            fmt_num(cls, sizeof cls, ra_row_ulp_cls(r));
        if (r->has_metrics) {
            const ra_metrics *m = &r->m;
            snprintf(c[0], sizeof c[0], "%s", ra_dtype_name(m->ulp_dtype));
            fmt_num(c[1], sizeof c[1], m->max_ulp);
            fmt_num(c[2], sizeof c[2], m->p99_ulp);
            fmt_num(c[3], sizeof c[3], m->max_ulp_rms);
            fmt_num(c[4], sizeof c[4], m->rel_rms);
            fmt_num(c[5], sizeof c[5], m->max_rel);
            fmt_num(c[6], sizeof c[6], m->max_abs);
            if (m->cos == 1.0)
                snprintf(c[7], sizeof c[7], "1");
            else if (isfinite(m->cos) && m->cos > 0.999)
                snprintf(c[7], sizeof c[7], "1-%.2g", 1 - m->cos);
            else
                fmt_num(c[7], sizeof c[7], m->cos);
            snprintf(c[8], sizeof c[8], "%lld", (long long)m->nan_count);
            snprintf(c[9], sizeof c[9], "%lld", (long long)m->inf_count);
            snprintf(c[10], sizeof c[10], "%s", r->worst_at);
            snprintf(c[11], sizeof c[11], "%.6g", m->worst_value);
            snprintf(c[12], sizeof c[12], "%.6g", m->worst_ref);
        }
        const char *cells[NCOLS] = {r->variant, r->tensor, r->pclass, c[0],  c[1],  c[2],
                                    c[3],       cls,       c[4],      c[5],  c[6],  c[7],
                                    c[8],       c[9],      c[10],     c[11], c[12], gates};
        st = ra_table_add_row(t, cells + off);
        i = j;
    }
    return finish_table(t, f, fmt, st);
}

double ra_row_ulp_cls(const ra_row *r)
{
    const double u = ra_pclass_unit(r->pclass);
    if (!r->has_metrics || isnan(u))
        return NAN;
    const ra_metrics *m = &r->m;
    if (!(m->ref_rms > 0)) /* all-zero reference: any error is unbounded */
        return m->max_abs > 0 ? INFINITY : (isnan(m->max_abs) ? NAN : 0.0);
    return m->max_abs / (u * m->ref_rms);
}

void ra_report_failures(FILE *f, const ra_rows *rows)
{
    for (size_t i = 0; i < rows->n; i++) {
        const ra_row *r = &rows->v[i];
        if (r->verdict != RA_VERDICT_FAIL)
            continue;
        char value[32], gate[48];
        fmt_num(value, sizeof value, r->value);
        fmt_gate(gate, sizeof gate, r);
        if (r->gated)
            fprintf(f, "FAIL %s %s %s %s %s: %s = %s, gate %s; worst %s = %.9g, reference %.9g\n",
                    r->variant, r->id.shape, r->id.regime, r->id.dtype, r->tensor, r->metric, value,
                    gate, r->worst_at, r->m.worst_value, r->m.worst_ref);
        else
            fprintf(f, "FAIL %s %s %s %s %s: %s\n", r->variant, r->id.shape, r->id.regime,
                    r->id.dtype, r->tensor, r->note);
        fprintf(f, "  reproduce: %s\n", r->repro);
    }
}

void ra_report_summary(FILE *f, const ra_rows *rows)
{
    fprintf(f, "%zu passed, %zu failed, %zu skipped\n", rows->passed, rows->failed, rows->skipped);
}

/* A YAML double-quoted scalar (the JSON escapes are valid YAML). */
static void yaml_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\x%02x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void ra_report_tap(FILE *f, const ra_rows *rows)
{
    fprintf(f, "TAP version 13\n1..%zu\n", rows->n);
    for (size_t i = 0; i < rows->n; i++) {
        const ra_row *r = &rows->v[i];
        char value[32], gate[48];
        fmt_num(value, sizeof value, r->value);
        fmt_gate(gate, sizeof gate, r);
        /* '#' would start a directive: descriptions never contain one. */
        fprintf(f, "%s %zu - %s %s %s %s %s", r->verdict == RA_VERDICT_FAIL ? "not ok" : "ok",
                i + 1, r->variant, r->id.shape, r->id.regime, r->id.dtype, r->tensor);
        if (r->gated)
            fprintf(f, " %s %s %s", r->metric, value, gate);
        if (r->verdict == RA_VERDICT_SKIP) {
            fprintf(f, " # SKIP ");
            for (const char *p = r->note; *p; p++)
                fputc(*p == '\n' ? ' ' : *p, f);
        }
        fputc('\n', f);
        if (r->verdict != RA_VERDICT_FAIL)
            continue;
        fprintf(f, "  ---\n  message: ");
        yaml_str(f, r->note);
        fprintf(f, "\n  severity: fail\n");
        if (r->gated) {
            fprintf(f, "  data:\n    got: ");
            yaml_str(f, value);
            fprintf(f, "\n    expect: ");
            yaml_str(f, gate);
            fprintf(f, "\n    worst: ");
            yaml_str(f, r->worst_at);
            fprintf(f, "\n    worst_value: %.17g\n    worst_ref: %.17g\n", r->m.worst_value,
                    r->m.worst_ref);
        }
        fprintf(f, "  reproduce: ");
        yaml_str(f, r->repro);
        fprintf(f, "\n  ...\n");
    }
}

/* A real, or a string for the non-finite values JSON lacks. */
static json_t *jnum(double x)
{
    if (isnan(x))
        return json_string("nan");
    if (isinf(x))
        return json_string(x > 0 ? "inf" : "-inf");
    return json_real(x);
}

static int jset(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *row_json(const ra_row *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int e = 0;
    e |= jset(o, "variant", json_string(r->variant));
    e |= jset(o, "class", json_string(r->pclass));
    e |= jset(o, "op", json_string(r->id.op));
    e |= jset(o, "shape", json_string(r->id.shape));
    e |= jset(o, "regime", json_string(r->id.regime));
    e |= jset(o, "dtype", json_string(r->id.dtype));
    e |= jset(o, "seed", r->id.has_seed ? json_integer((json_int_t)r->id.seed) : json_null());
    /* One boolean per generation flag of the op (gdn: h0, l2norm). */
    const ra_op *op = ra_op_find(r->id.op);
    for (int i = 0; op && op->flags && op->flags[i].name; i++)
        e |= jset(o, op->flags[i].name, json_boolean(r->id.flags & (1u << i)));
    e |= jset(o, "direction", json_string(r->id.bwd ? "fwd+bwd" : "fwd"));
    e |= jset(o, "tensor", json_string(r->tensor));
    e |= jset(o, "metric", r->gated ? json_string(r->metric) : json_null());
    e |= jset(o, "value", r->gated ? jnum(r->value) : json_null());
    e |= jset(o, "gate", r->gated ? json_string(r->higher_is_better ? ">=" : "<=") : json_null());
    e |= jset(o, "threshold", r->gated ? jnum(r->threshold) : json_null());
    const char *verdict = r->verdict == RA_VERDICT_PASS   ? "pass"
                          : r->verdict == RA_VERDICT_FAIL ? "fail"
                          : r->verdict == RA_VERDICT_SKIP ? "skip"
                                                          : "info";
    e |= jset(o, "verdict", json_string(verdict));
    e |= jset(o, "note", json_string(r->note));
    if (r->has_metrics) {
        const ra_metrics *m = &r->m;
        json_t *mj = json_object();
        e |= jset(o, "metrics", mj);
        if (mj) {
            e |= jset(mj, "n", json_integer((json_int_t)m->n));
            e |= jset(mj, "max_abs", jnum(m->max_abs));
            e |= jset(mj, "max_rel", jnum(m->max_rel));
            e |= jset(mj, "rel_rms", jnum(m->rel_rms));
            e |= jset(mj, "cos", jnum(m->cos));
            e |= jset(mj, "max_ulp", jnum(m->max_ulp));
            e |= jset(mj, "p99_ulp", jnum(m->p99_ulp));
            e |= jset(mj, "max_ulp_rms", jnum(m->max_ulp_rms));
            e |= jset(mj, "ulp_cls", jnum(ra_row_ulp_cls(r)));
            e |= jset(mj, "ref_rms", jnum(m->ref_rms));
            e |= jset(mj, "ulp_n", json_integer((json_int_t)m->ulp_n));
            e |= jset(mj, "ulp_floor", jnum(m->ulp_floor));
            e |= jset(mj, "ulp_dtype", json_string(ra_dtype_name(m->ulp_dtype)));
            e |= jset(mj, "nan_count", json_integer((json_int_t)m->nan_count));
            e |= jset(mj, "inf_count", json_integer((json_int_t)m->inf_count));
        }
        json_t *w = json_object(), *idx = json_array();
        e |= jset(o, "worst", w);
        if (w && idx) {
            int64_t flat = m->worst_index;
            json_t *parts[RA_MAX_DIMS];
            for (int d = r->ndim - 1; d >= 0; d--) {
                int64_t n = r->shape[d] > 0 ? r->shape[d] : 1;
                parts[d] = json_integer((json_int_t)(flat >= 0 ? flat % n : -1));
                flat = flat >= 0 ? flat / n : -1;
            }
            for (int d = 0; d < r->ndim; d++)
                e |= json_array_append_new(idx, parts[d]);
            e |= jset(w, "index", idx);
            e |= jset(w, "flat_index", json_integer((json_int_t)m->worst_index));
            e |= jset(w, "value", jnum(m->worst_value));
            e |= jset(w, "ref", jnum(m->worst_ref));
        } else {
            json_decref(idx);
            e = -1;
        }
    }
    e |= jset(o, "reproduce", json_string(r->repro));
    if (e) {
        json_decref(o);
        return NULL;
    }
    return o;
}

ra_status ra_report_json(const char *path, const ra_rows *rows, const char *command)
{
    json_t *doc = json_object(), *arr = json_array();
    int e = !doc || !arr;
    if (!e) {
        e |= jset(doc, "command", json_string(command ? command : ""));
        e |= jset(doc, "passed", json_integer((json_int_t)rows->passed));
        e |= jset(doc, "failed", json_integer((json_int_t)rows->failed));
        e |= jset(doc, "skipped", json_integer((json_int_t)rows->skipped));
        e |= jset(doc, "rows", arr);
        for (size_t i = 0; !e && i < rows->n; i++) {
            json_t *r = row_json(&rows->v[i]);
            e |= r ? json_array_append_new(arr, r) : -1;
        }
    } else {
        json_decref(arr);
    }
    char *text = e ? NULL : json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(doc);
    if (!text)
        RA_ERROR("JSON report: out of memory", RA_ENOMEM);
    size_t len = strlen(text);
    text[len] = '\0';
    ra_status st = RA_OK;
    if (strcmp(path, "-") == 0) {
        if (fwrite(text, 1, len, stdout) != len || fputc('\n', stdout) == EOF) {
            RA_REPORTF(RA_EIO, "JSON report: writing to stdout failed");
            st = RA_EIO;
        }
    } else {
        /* One more byte for the final newline: a text file ends in one. */
        char *nl = realloc(text, len + 2);
        if (!nl) {
            free(text);
            RA_ERROR("JSON report: out of memory", RA_ENOMEM);
        }
        text = nl;
        text[len] = '\n';
        st = ra_file_write_atomic(path, (const uint8_t *)text, len + 1);
    }
    free(text);
    return st;
}
