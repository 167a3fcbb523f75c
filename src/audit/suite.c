/* Conformance suites: reading the data/suites tables and listing them. */
#include <config.h>

#include "audit/suite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/datadir.h"
#include "audit/gdn_matrix.h"
#include "audit/tsv.h"
#include "core/capture.h"

/*
 * Fields are validated with the same checks the commands use
 * (ra_case_spec_check), run with a silent error handler so that
 * their reason can be re-reported once with the suite file and line in
 * front of it.
 */

static const char *const suite_cols[] = {"op",        "shape", "regime", "dtype",
                                         "direction", "seed",  "flags"};

void ra_suite_init(ra_suite *s) { memset(s, 0, sizeof *s); }

void ra_suite_clear(ra_suite *s)
{
    free(s->rows);
    free(s->path);
    ra_suite_init(s);
}

static int copy_field(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    if (n >= len)
        return 0;
    memcpy(dst, src, n + 1);
    return 1;
}

/* Re-reports the reason captured since prev with the file and line. */
static ra_status field_error(ra_error_handler_t *prev, ra_status st, const char *what, int line)
{
    ra_capture_end(prev);
    RA_ERRORF(st == RA_ENOMEM ? st : RA_EFORMAT, "%s line %d: %s", what, line, ra_last_error());
}

static ra_status parse_row(ra_suite_row *row, char **f, int line, const char *what)
{
    memset(row, 0, sizeof *row);
    row->line = line;
    ra_case_spec *s = &row->spec;
    ra_case_spec_init(s);
    const ra_op *op = ra_op_find(f[0]);
    if (!op || !copy_field(s->op, sizeof s->op, f[0]))
        RA_ERRORF(RA_EFORMAT, "%s line %d: op '%s' is not an operation (see 'recaudit list ops')",
                  what, line, f[0]);
    if (!copy_field(s->shape, sizeof s->shape, f[1]))
        RA_ERRORF(RA_EFORMAT, "%s line %d: shape '%s' is too long", what, line, f[1]);
    if (!ra_op_regime(op, f[2]) || !copy_field(s->regime, sizeof s->regime, f[2]))
        RA_ERRORF(RA_EFORMAT, "%s line %d: unknown regime '%s' (see 'recaudit list regimes')", what,
                  line, f[2]);
    if (strcmp(f[3], "f64") && strcmp(f[3], "f32") && strcmp(f[3], "bf16") && strcmp(f[3], "f16"))
        RA_ERRORF(RA_EFORMAT, "%s line %d: dtype '%s' is not f64, f32, bf16 or f16", what, line,
                  f[3]);
    strcpy(s->dtype, f[3]);

    if (strcmp(f[4], "fwd") == 0)
        s->bwd = 0;
    else if (strcmp(f[4], "fwd+bwd") == 0)
        s->bwd = 1;
    else
        RA_ERRORF(RA_EFORMAT, "%s line %d: direction '%s' is not fwd or fwd+bwd", what, line, f[4]);

    char *end;
    errno = 0;
    s->seed = strtoull(f[5], &end, 10);
    if (f[5][0] == '-' || end == f[5] || *end || errno == ERANGE)
        RA_ERRORF(RA_EFORMAT, "%s line %d: seed '%s' is not a non-negative integer", what, line,
                  f[5]);
    s->has_seed = 1;

    ra_error_handler_t *prev = ra_capture_begin();
    if (strcmp(f[6], "-") != 0) {
        for (char *p = f[6]; *p;) {
            size_t n = strcspn(p, ",");
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)n, p);
            /* KEY=VALUE: a case parameter (gdn's scale=0.3) */
            ra_status st = strchr(name, '=') ? ra_case_spec_set_param(s, op, name)
                                             : ra_case_spec_set_flag(s, op, name);
            if (st != RA_OK)
                return field_error(prev, st, what, line);
            p += n;
            if (*p == ',' && !*++p) {
                ra_capture_end(prev);
                RA_ERRORF(RA_EFORMAT, "%s line %d: trailing comma in flags", what, line);
            }
        }
    }
    ra_status st = ra_case_spec_check(s, "op");
    if (st != RA_OK)
        return field_error(prev, st, what, line);
    ra_capture_end(prev);
    return RA_OK;
}

/* One row of the file (ra_tsv_row_fn; ctx: the ra_suite). */
static ra_status add_row(void *ctx, char **f, int line, const char *what)
{
    ra_suite *s = ctx;
    ra_suite_row *rows = ra_tsv_grow(s->rows, &s->cap, s->n, sizeof *rows);
    if (!rows)
        return RA_ENOMEM;
    s->rows = rows;
    RA_TRY(parse_row(&s->rows[s->n], f, line, what));
    s->n++;
    return RA_OK;
}

ra_status ra_suite_parse(ra_suite *s, const char *text, const char *what)
{
    RA_TRY(ra_tsv_parse(text, what, suite_cols, 7, "suite", add_row, s));
    ra_tsv_first_comment(text, s->doc, sizeof s->doc);
    if (!(s->path = strdup(what ? what : "suite")))
        RA_ERROR("out of memory", RA_ENOMEM);
    return RA_OK;
}

static ra_status parse_text(void *s, const char *text, const char *what)
{
    return ra_suite_parse(s, text, what);
}

ra_status ra_suite_load(ra_suite *s, const char *name_or_path)
{
    size_t n = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (n > 4 && strcmp(name_or_path + n - 4, ".tsv") == 0))
        return ra_tsv_load(name_or_path, NULL, parse_text, s);
    char rel[256];
    if (!n || snprintf(rel, sizeof rel, "suites/%s.tsv", name_or_path) >= (int)sizeof rel)
        RA_ERRORF(RA_EINVAL, "--suite '%s': not a suite name", name_or_path);
    return ra_tsv_load(NULL, rel, parse_text, s);
}

ra_status ra_suite_table(ra_table **out)
{
    *out = NULL;
    char dir[4096];
    char **names;
    size_t n;
    RA_TRY(ra_data_suites(&names, &n, dir, sizeof dir));
    static const char *const headers[] = {"name", "rows", "description", "coverage", "path"};
    ra_status st = ra_table_new(out, 5, headers);
    const int builtin = strcmp(dir, RA_DATA_BUILTIN) == 0;
    for (size_t i = 0; st == RA_OK && i < n; i++) {
        char path[4096 + 256], rows[32];
        if (builtin)
            snprintf(path, sizeof path, "built-in copy of data/suites/%s.tsv", names[i]);
        else
            snprintf(path, sizeof path, "%s/%s.tsv", dir, names[i]);
        ra_suite s;
        ra_suite_init(&s);
        st = ra_suite_load(&s, builtin ? names[i] : path);
        if (st == RA_OK) {
            char cover[96];
            snprintf(rows, sizeof rows, "%zu", s.n);
            ra_matrix_coverage_text(cover, sizeof cover, &s);
            const char *cells[] = {names[i], rows, s.doc, cover, path};
            st = ra_table_add_row(*out, cells);
        }
        ra_suite_clear(&s);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (st != RA_OK && *out) {
        ra_table_free(*out);
        *out = NULL;
    }
    return st;
}

ra_status ra_list_suites(ra_table **out, const char *const *plugins)
{
    (void)plugins;
    return ra_suite_table(out);
}
