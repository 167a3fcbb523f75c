/* Tab-separated data files: reading, comment handling, header check, field split, rows. */
#include <config.h>

#include "audit/tsv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/datadir.h"
#include "core/io.h"

/*
 * The text is copied once and split in place: fields are NUL-terminated
 * slices of the copy.  A field count other than the header's, or an empty
 * field, is a format error naming the file and line; nothing is guessed.
 * A NUL byte in a file is refused with its line (ra_file_read_text): C
 * strings would end the text there and silently drop the rows after it.  The
 * tables (gates, suites) differ only in their columns and in what a row
 * means, so ra_tsv_parse runs the whole read and hands each row over.
 */

ra_status ra_tsv_open(ra_tsv *t, const char *text, const char *what)
{
    t->buf = strdup(text);
    if (!t->buf)
        RA_ERROR("out of memory", RA_ENOMEM);
    t->next = t->buf;
    t->line = 0;
    t->what = what ? what : "table";
    return RA_OK;
}

ra_status ra_tsv_load(const char *path, const char *rel, ra_tsv_text_fn *parse, void *ctx)
{
    char where[4096 + 64];
    char *text = NULL;
    if (!path) {
        RA_TRY(ra_data_read(&text, where, sizeof where, rel));
    } else {
        RA_TRY(ra_file_read_text(&text, path));
        snprintf(where, sizeof where, "%s", path);
    }
    ra_status st = parse(ctx, text, where);
    free(text);
    return st;
}

void ra_tsv_close(ra_tsv *t)
{
    free(t->buf);
    t->buf = t->next = NULL;
}

/* Next raw line (comment or not), NUL-terminated, without '\r\n'. */
static char *raw_line(ra_tsv *t)
{
    if (!t->next || !*t->next)
        return NULL;
    char *s = t->next;
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        t->next = nl + 1;
    } else {
        t->next = s + strlen(s);
    }
    size_t n = strlen(s);
    if (n && s[n - 1] == '\r')
        s[n - 1] = '\0';
    t->line++;
    return s;
}

static int is_comment(const char *s)
{
    s += strspn(s, " \t");
    return *s == '\0' || *s == '#';
}

int ra_tsv_next(ra_tsv *t, char **fields, int ncols)
{
    char *s;
    do {
        s = raw_line(t);
        if (!s)
            return 0;
    } while (is_comment(s));
    int n = 0;
    for (char *p = s;;) {
        char *tab = strchr(p, '\t');
        if (n < ncols)
            fields[n] = p;
        n++;
        if (!tab)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    if (n != ncols) {
        RA_REPORTF(RA_EFORMAT, "%s line %d: %d tab-separated fields, expected %d", t->what, t->line,
                   n, ncols);
        return -1;
    }
    for (int i = 0; i < ncols; i++)
        if (!*fields[i]) {
            RA_REPORTF(RA_EFORMAT, "%s line %d: field %d is empty", t->what, t->line, i + 1);
            return -1;
        }
    return 1;
}

ra_status ra_tsv_header(ra_tsv *t, const char *const *cols, int ncols)
{
    char *f[16];
    if (ncols > 16)
        RA_ERROR("ra_tsv_header: too many columns", RA_EINTERNAL);
    int r = ra_tsv_next(t, f, ncols);
    if (r < 0)
        return RA_EFORMAT;
    if (r == 0)
        RA_ERRORF(RA_EFORMAT, "%s: no header line", t->what);
    for (int i = 0; i < ncols; i++)
        if (strcmp(f[i], cols[i]) != 0)
            RA_ERRORF(RA_EFORMAT, "%s line %d: header column %d is '%s', expected '%s'", t->what,
                      t->line, i + 1, f[i], cols[i]);
    return RA_OK;
}

static ra_status parse_rows(ra_tsv *t, const char *const *cols, int ncols, const char *noun,
                            ra_tsv_row_fn *row, void *ctx)
{
    char *f[16];
    RA_TRY(ra_tsv_header(t, cols, ncols)); /* refuses ncols > 16 */
    int r;
    size_t n = 0;
    for (; (r = ra_tsv_next(t, f, ncols)) > 0; n++)
        RA_TRY(row(ctx, f, t->line, t->what));
    if (r < 0)
        return RA_EFORMAT;
    if (n == 0)
        RA_ERRORF(RA_EFORMAT, "%s: no %s rows", t->what, noun);
    return RA_OK;
}

ra_status ra_tsv_parse(const char *text, const char *what, const char *const *cols, int ncols,
                       const char *noun, ra_tsv_row_fn *row, void *ctx)
{
    ra_tsv t;
    RA_TRY(ra_tsv_open(&t, text, what));
    ra_status st = parse_rows(&t, cols, ncols, noun, row, ctx);
    ra_tsv_close(&t);
    return st;
}

void *ra_tsv_grow(void *rows, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return rows;
    size_t c = *cap ? 2 * *cap : 16;
    void *p = c <= SIZE_MAX / size ? realloc(rows, c * size) : NULL;
    if (!p) {
        RA_REPORTF(RA_ENOMEM, "out of memory");
        return NULL;
    }
    *cap = c;
    return p;
}

void ra_tsv_first_comment(const char *text, char *buf, size_t len)
{
    if (!len)
        return;
    buf[0] = '\0';
    for (const char *s = text; s && *s;) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        const char *p = s + strspn(s, " \t");
        if (p < s + n && *p == '#') {
            p++;
            p += strspn(p, " \t#");
            size_t m = (size_t)(s + n - p);
            while (m && (p[m - 1] == '\r' || p[m - 1] == ' '))
                m--;
            if (m) {
                if (m >= len)
                    m = len - 1;
                memcpy(buf, p, m);
                buf[m] = '\0';
                return;
            }
        }
        s = e ? e + 1 : NULL;
    }
}
