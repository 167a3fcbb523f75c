/* Conformance suites: reading the data/suites tables and listing them. */
#include <config.h>

#include "audit/suite.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/capture.h"
#include "audit/datadir.h"
#include "audit/tsv.h"
#include "core/gdn_case.h"
#include "core/gen_gdn.h"

/*
 * Fields are validated with the same parsers the commands use (the gdn
 * shape parser, the regime table), run with a silent error handler so that
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

static ra_status parse_row(ra_suite_row *row, char **f, int line, const char *what)
{
    memset(row, 0, sizeof *row);
    row->line = line;
    if (strcmp(f[0], "gdn") != 0)
        RA_ERRORF(RA_EUNSUPPORTED, "%s line %d: op '%s': suites can generate gdn cases only", what,
                  line, f[0]);
    strcpy(row->op, f[0]);

    ra_gdn_shape sh;
    ra_error_handler_t *prev = ra_capture_begin();
    ra_status st = ra_gdn_shape_parse(&sh, f[1]);
    ra_capture_end(prev);
    if (st != RA_OK)
        RA_ERRORF(RA_EFORMAT, "%s line %d: %s", what, line, ra_last_error());
    ra_gdn_shape_format(row->shape, sizeof row->shape, &sh);

    int known = 0;
    for (const ra_regime_info *r = ra_gdn_regimes(); r->name; r++)
        known |= strcmp(r->name, f[2]) == 0;
    if (!known || !copy_field(row->regime, sizeof row->regime, f[2]))
        RA_ERRORF(RA_EFORMAT, "%s line %d: unknown regime '%s' (see 'recaudit list regimes')", what,
                  line, f[2]);

    if (strcmp(f[3], "f64") && strcmp(f[3], "f32") && strcmp(f[3], "bf16") && strcmp(f[3], "f16"))
        RA_ERRORF(RA_EFORMAT, "%s line %d: dtype '%s' is not f64, f32, bf16 or f16", what, line,
                  f[3]);
    strcpy(row->dtype, f[3]);

    if (strcmp(f[4], "fwd") == 0)
        row->bwd = 0;
    else if (strcmp(f[4], "fwd+bwd") == 0)
        row->bwd = 1;
    else
        RA_ERRORF(RA_EFORMAT, "%s line %d: direction '%s' is not fwd or fwd+bwd", what, line, f[4]);

    char *end;
    errno = 0;
    row->seed = strtoull(f[5], &end, 10);
    if (f[5][0] == '-' || end == f[5] || *end || errno == ERANGE)
        RA_ERRORF(RA_EFORMAT, "%s line %d: seed '%s' is not a non-negative integer", what, line,
                  f[5]);

    if (strcmp(f[6], "-") != 0) {
        for (char *p = f[6]; *p;) {
            size_t n = strcspn(p, ",");
            if (n == 2 && strncmp(p, "h0", 2) == 0)
                row->h0 = 1;
            else if (n == 6 && strncmp(p, "l2norm", 6) == 0)
                row->l2norm = 1;
            else
                RA_ERRORF(RA_EFORMAT, "%s line %d: flag '%.*s' is not h0 or l2norm (or '-')", what,
                          line, (int)n, p);
            p += n;
            if (*p == ',' && !*++p)
                RA_ERRORF(RA_EFORMAT, "%s line %d: trailing comma in flags", what, line);
        }
    }
    /* The tail regime exists to exercise a partial last chunk. */
    if (strcmp(row->regime, "tail") == 0 && sh.T % 64 == 0)
        RA_ERRORF(RA_EFORMAT, "%s line %d: regime tail needs T not a multiple of 64, got T=%lld",
                  what, line, (long long)sh.T);
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

ra_status ra_suite_table(ra_table **out)
{
    *out = NULL;
    char dir[4096];
    RA_TRY(ra_data_find(dir, sizeof dir, "suites"));
    DIR *d = opendir(dir);
    if (!d)
        RA_ERRORF(RA_EIO, "%s: cannot list: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    ra_status st = RA_OK;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".tsv") != 0 || e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                st = RA_ENOMEM;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            st = RA_ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    if (st == RA_ENOMEM)
        RA_REPORTF(st, "out of memory");
    if (st == RA_OK)
        qsort(names, n, sizeof *names, cmp_str);
    static const char *const headers[] = {"name", "rows", "description", "path"};
    if (st == RA_OK)
        st = ra_table_new(out, 4, headers);
    for (size_t i = 0; st == RA_OK && i < n; i++) {
        char path[4096 + 256], rows[32], name[256];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        snprintf(name, sizeof name, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        ra_suite s;
        ra_suite_init(&s);
        st = ra_suite_load(&s, path);
        if (st == RA_OK) {
            snprintf(rows, sizeof rows, "%zu", s.n);
            const char *cells[] = {name, rows, s.doc, path};
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
