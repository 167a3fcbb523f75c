/* Points tables of the studies: named columns of text or numeric cells, CSV and markdown. */

/*
 * A study records every measured point as one row (its grid coordinates,
 * the variant, the metrics, a model value) and writes the same rows three
 * ways: CSV (every digit, %.17g, for other tools), a markdown table (3
 * significant digits, for people) and a plot (plot.c).  Both text forms
 * go through core/table.c's writers, so quoting and escaping are the
 * suite's one implementation.  Cells are kept typed: a plot or a fit
 * reads numbers back exactly, never by parsing the printed text.
 */

#include "study/study.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/table.h"

typedef struct cell {
    int is_num;
    double x;
    char *s; /* text cell, or the %.17g form of a number; NULL: empty */
} cell;

struct ra_points {
    int ncols;
    char **cols;
    size_t nrows, cap;
    cell *cells; /* nrows * ncols */
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

ra_status ra_points_new(ra_points **out, const char *const *cols)
{
    *out = NULL;
    int n = 0;
    while (cols && cols[n])
        n++;
    if (n == 0)
        RA_ERROR("points table: no columns", RA_EINVAL);
    for (int i = 0; i < n; i++) {
        if (!cols[i][0] || strpbrk(cols[i], ",|\n\r"))
            RA_ERRORF(RA_EINVAL, "points table: bad column name '%s'", cols[i]);
        for (int j = 0; j < i; j++)
            if (strcmp(cols[i], cols[j]) == 0)
                RA_ERRORF(RA_EINVAL, "points table: column '%s' given twice", cols[i]);
    }
    ra_points *p = calloc(1, sizeof *p);
    if (!p || !(p->cols = calloc((size_t)n, sizeof *p->cols))) {
        free(p);
        RA_ERROR("points table: out of memory", RA_ENOMEM);
    }
    p->ncols = n;
    for (int i = 0; i < n; i++)
        if (!(p->cols[i] = dup_str(cols[i]))) {
            ra_points_free(p);
            RA_ERROR("points table: out of memory", RA_ENOMEM);
        }
    *out = p;
    return RA_OK;
}

void ra_points_free(ra_points *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nrows * (size_t)p->ncols; i++)
        free(p->cells[i].s);
    free(p->cells);
    for (int i = 0; i < p->ncols; i++)
        free(p->cols[i]);
    free(p->cols);
    free(p);
}

ra_status ra_points_row(ra_points *p)
{
    if (p->nrows == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        cell *c = realloc(p->cells, cap * (size_t)p->ncols * sizeof *c);
        if (!c)
            RA_ERROR("points table: out of memory", RA_ENOMEM);
        p->cells = c;
        p->cap = cap;
    }
    memset(p->cells + p->nrows * (size_t)p->ncols, 0, (size_t)p->ncols * sizeof *p->cells);
    p->nrows++;
    return RA_OK;
}

int ra_points_col(const ra_points *p, const char *name)
{
    for (int i = 0; name && i < p->ncols; i++)
        if (strcmp(p->cols[i], name) == 0)
            return i;
    return -1;
}

static ra_status row_cell(cell **out, ra_points *p, size_t row, const char *col)
{
    int i = ra_points_col(p, col);
    if (i < 0)
        RA_ERRORF(RA_ENOTFOUND, "points table: no column '%s'", col ? col : "(null)");
    if (row >= p->nrows)
        RA_ERRORF(RA_EINVAL, "points table: column '%s' set in row %zu of %zu", col, row, p->nrows);
    *out = p->cells + row * (size_t)p->ncols + i;
    return RA_OK;
}

ra_status ra_points_set_text(ra_points *p, const char *col, const char *text)
{
    return ra_points_put_text(p, p->nrows ? p->nrows - 1 : 0, col, text);
}

ra_status ra_points_set_num(ra_points *p, const char *col, double x)
{
    return ra_points_put_num(p, p->nrows ? p->nrows - 1 : 0, col, x);
}

ra_status ra_points_put_text(ra_points *p, size_t row, const char *col, const char *text)
{
    cell *c;
    RA_TRY(row_cell(&c, p, row, col));
    char *s = dup_str(text ? text : "");
    if (!s)
        RA_ERROR("points table: out of memory", RA_ENOMEM);
    free(c->s);
    c->s = s;
    c->is_num = 0;
    c->x = NAN;
    return RA_OK;
}

ra_status ra_points_put_num(ra_points *p, size_t row, const char *col, double x)
{
    cell *c;
    RA_TRY(row_cell(&c, p, row, col));
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", x);
    char *s = dup_str(buf);
    if (!s)
        RA_ERROR("points table: out of memory", RA_ENOMEM);
    free(c->s);
    c->s = s;
    c->is_num = 1;
    c->x = x;
    return RA_OK;
}

ra_status ra_points_set_textf(ra_points *p, const char *col, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ra_points_set_text(p, col, buf);
}

size_t ra_points_nrows(const ra_points *p) { return p->nrows; }
int ra_points_ncols(const ra_points *p) { return p->ncols; }

const char *ra_points_colname(const ra_points *p, int col)
{
    return col >= 0 && col < p->ncols ? p->cols[col] : NULL;
}

int ra_points_num(double *x, const ra_points *p, size_t row, int col)
{
    if (row >= p->nrows || col < 0 || col >= p->ncols)
        return 0;
    const cell *c = p->cells + row * (size_t)p->ncols + col;
    if (!c->is_num)
        return 0;
    *x = c->x;
    return 1;
}

const char *ra_points_text(const ra_points *p, size_t row, int col)
{
    if (row >= p->nrows || col < 0 || col >= p->ncols)
        return NULL;
    const cell *c = p->cells + row * (size_t)p->ncols + col;
    return c->s ? c->s : "";
}

/* A number for people: integers as integers, else 3 significant digits. */
static void human(char *buf, size_t len, double x)
{
    if (isfinite(x) && x == floor(x) && fabs(x) < 1e9)
        snprintf(buf, len, "%.0f", x);
    else
        snprintf(buf, len, "%.3g", x);
}

/* The selected columns and rows as a core table, cells in CSV (exact) or
   human form. */
static ra_status to_table(ra_table **out, const ra_points *p, const char *const *cols, int exact,
                          int (*keep)(const ra_points *, size_t, void *), void *arg)
{
    int idx[256], n = 0;
    if (cols) {
        for (; cols[n]; n++) {
            if (n == 256)
                RA_ERROR("points table: too many columns selected", RA_EINVAL);
            if ((idx[n] = ra_points_col(p, cols[n])) < 0)
                RA_ERRORF(RA_ENOTFOUND, "points table: no column '%s'", cols[n]);
        }
    } else {
        if (p->ncols > 256)
            RA_ERROR("points table: too many columns", RA_EINVAL);
        for (; n < p->ncols; n++)
            idx[n] = n;
    }
    const char *hdr[256];
    for (int i = 0; i < n; i++)
        hdr[i] = p->cols[idx[i]];
    RA_TRY(ra_table_new(out, n, hdr));
    char bufs[256][32];
    const char *row[256];
    for (size_t r = 0; r < p->nrows; r++) {
        if (keep && !keep(p, r, arg))
            continue;
        for (int i = 0; i < n; i++) {
            const cell *c = p->cells + r * (size_t)p->ncols + idx[i];
            if (c->is_num && !exact) {
                human(bufs[i], sizeof bufs[i], c->x);
                row[i] = bufs[i];
            } else {
                row[i] = c->s ? c->s : "";
            }
        }
        ra_status st = ra_table_add_row(*out, row);
        if (st != RA_OK) {
            ra_table_free(*out);
            *out = NULL;
            return st;
        }
    }
    return RA_OK;
}

ra_status ra_points_write_csv(const ra_points *p, const char *path)
{
    ra_table *t;
    RA_TRY(to_table(&t, p, NULL, 1, NULL, NULL));
    FILE *f = fopen(path, "w");
    if (!f) {
        ra_table_free(t);
        RA_ERRORF(RA_EIO, "cannot write '%s'", path);
    }
    ra_status st = ra_table_write(t, f, RA_FMT_CSV);
    ra_table_free(t);
    if (fclose(f) != 0 && st == RA_OK)
        RA_ERRORF(RA_EIO, "cannot write '%s'", path);
    return st;
}

ra_status ra_points_write_markdown(const ra_points *p, FILE *f, const char *const *cols,
                                   int (*keep)(const ra_points *p, size_t row, void *arg),
                                   void *arg)
{
    ra_table *t;
    RA_TRY(to_table(&t, p, cols, 0, keep, arg));
    ra_status st = ra_table_write(t, f, RA_FMT_MARKDOWN);
    ra_table_free(t);
    return st;
}
