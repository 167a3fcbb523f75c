/* Tables of strings written as aligned text, GitHub markdown, CSV or JSON. */
#include "core/table.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/tensor.h"

/*
 * A table owns copies of its headers and cells (row-major, ncols per row).
 * Headers must be distinct and non-empty because JSON keys them; a NULL
 * cell is stored as "".
 *
 * Cell kinds decide alignment and JSON typing.  A cell is a number when
 * the whole of it is a decimal literal [+-]digits[.digits][(e|E)[+-]digits]
 * (".5" and "5." count; hex, spaces and trailing text do not), and
 * non-finite when it is inf, infinity or nan in any case with an optional
 * sign.  A text column is right-aligned when every non-empty cell is of
 * either numeric kind.
 *
 * JSON: an array of objects, one per row, keys in header order, one object
 * per line.  Strings are escaped by jansson.  A number cell that already
 * is a JSON number literal is written as its own text, so "0.1" stays 0.1
 * (going through a double would print 0.10000000000000001); one that is
 * not (".5", "+1", "007") is written as the double it denotes, through
 * jansson; one that overflows a double, and inf/nan (JSON has neither),
 * become strings.
 *
 * CSV quotes a field (RFC 4180) when it contains a comma, a double quote,
 * CR or LF, doubling inner quotes; records end in LF (Unix tools).
 * Markdown escapes '|' and writes newlines as <br>; aligned text replaces
 * control characters by spaces (a newline would break the columns).
 * Widths count UTF-8 code points, not bytes.  Write errors on the stream
 * are reported as RA_EIO.
 */

struct ra_table {
    int ncols;
    char **headers;
    size_t nrows, cap;
    char **cells; /* nrows * ncols */
};

enum cell_kind { CELL_TEXT, CELL_NUMBER, CELL_NONFINITE };

static char *dup_str(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

ra_status ra_table_new(ra_table **out, int ncols, const char *const *headers)
{
    *out = NULL;
    if (ncols < 1 || !headers)
        RA_ERRORF(RA_EINVAL, "table: need at least one column (got %d)", ncols);
    for (int i = 0; i < ncols; i++) {
        if (!headers[i] || !headers[i][0])
            RA_ERRORF(RA_EINVAL, "table: header of column %d is empty", i + 1);
        for (int j = 0; j < i; j++)
            if (strcmp(headers[i], headers[j]) == 0)
                RA_ERRORF(RA_EINVAL, "table: header '%s' appears twice", headers[i]);
    }
    ra_table *t = calloc(1, sizeof *t);
    if (!t || !(t->headers = calloc((size_t)ncols, sizeof *t->headers))) {
        free(t);
        RA_ERROR("table: out of memory", RA_ENOMEM);
    }
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++)
        if (!(t->headers[i] = dup_str(headers[i]))) {
            ra_table_free(t);
            RA_ERROR("table: out of memory", RA_ENOMEM);
        }
    *out = t;
    return RA_OK;
}

void ra_table_free(ra_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    if (t->headers)
        for (int i = 0; i < t->ncols; i++)
            free(t->headers[i]);
    free(t->headers);
    free(t);
}

ra_status ra_table_add_row(ra_table *t, const char *const *cells)
{
    size_t nc = (size_t)t->ncols;
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        if (cap > SIZE_MAX / sizeof(char *) / nc)
            RA_ERROR("table: too many rows", RA_EOVERFLOW);
        char **c = realloc(t->cells, cap * nc * sizeof *c);
        if (!c)
            RA_ERROR("table: out of memory", RA_ENOMEM);
        t->cells = c;
        t->cap = cap;
    }
    char **row = t->cells + t->nrows * nc;
    for (size_t j = 0; j < nc; j++) {
        row[j] = dup_str(cells ? cells[j] : NULL);
        if (!row[j]) {
            while (j-- > 0)
                free(row[j]);
            RA_ERROR("table: out of memory", RA_ENOMEM);
        }
    }
    t->nrows++;
    return RA_OK;
}

size_t ra_table_rows(const ra_table *t) { return t->nrows; }

int ra_table_cols(const ra_table *t) { return t->ncols; }

const char *ra_table_header(const ra_table *t, int col)
{
    return col >= 0 && col < t->ncols ? t->headers[col] : NULL;
}

const char *ra_table_cell(const ra_table *t, size_t row, int col)
{
    if (row >= t->nrows || col < 0 || col >= t->ncols)
        return NULL;
    return t->cells[row * (size_t)t->ncols + (size_t)col];
}

ra_status ra_format_parse(ra_format *out, const char *s)
{
    static const struct {
        const char *name;
        ra_format fmt;
    } names[] = {{"text", RA_FMT_TEXT},
                 {"md", RA_FMT_MARKDOWN},
                 {"markdown", RA_FMT_MARKDOWN},
                 {"csv", RA_FMT_CSV},
                 {"json", RA_FMT_JSON}};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].fmt;
            return RA_OK;
        }
    RA_ERRORF(RA_EINVAL, "--format '%s': unknown format (text, md, csv, json)", s ? s : "");
}

/* --- cell classification ---------------------------------------------------- */

static size_t digits(const char *s)
{
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n;
}

/* Sets *json when s also matches the JSON number grammar
   -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static enum cell_kind classify(const char *s, int *json)
{
    const char *p = s;
    int js = 1;
    if (*p == '+')
        js = 0;
    if (*p == '+' || *p == '-')
        p++;
    if (strcasecmp(p, "inf") == 0 || strcasecmp(p, "infinity") == 0 || strcasecmp(p, "nan") == 0) {
        if (json)
            *json = 0;
        return CELL_NONFINITE;
    }
    size_t ni = digits(p);
    if (ni == 0 || (ni > 1 && p[0] == '0'))
        js = 0;
    p += ni;
    size_t nf = 0;
    if (*p == '.') {
        nf = digits(p + 1);
        if (nf == 0)
            js = 0;
        p += 1 + nf;
    }
    if (ni == 0 && nf == 0)
        return CELL_TEXT;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t ne = digits(p);
        if (ne == 0)
            return CELL_TEXT;
        p += ne;
    }
    if (*p)
        return CELL_TEXT;
    if (json)
        *json = js;
    return CELL_NUMBER;
}

/* --- shared helpers ----------------------------------------------------------- */

static size_t utf8_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

/* Display width after escaping (markdown widens '|' and newlines). */
static size_t shown_width(const char *s, int markdown)
{
    size_t w = utf8_width(s);
    if (markdown)
        for (; *s; s++)
            w += *s == '|' ? 1 : *s == '\n' ? 3 : 0;
    return w;
}

/* widths[j] of every column (headers included); right[j] for numeric ones. */
static ra_status measure(const ra_table *t, int markdown, size_t **widths, int **right)
{
    size_t nc = (size_t)t->ncols;
    *widths = calloc(nc, sizeof **widths);
    *right = calloc(nc, sizeof **right);
    if (!*widths || !*right) {
        free(*widths), free(*right);
        RA_ERROR("table: out of memory", RA_ENOMEM);
    }
    for (size_t j = 0; j < nc; j++) {
        size_t w = shown_width(t->headers[j], markdown);
        int numeric = 1, nonempty = 0;
        for (size_t i = 0; i < t->nrows; i++) {
            const char *c = t->cells[i * nc + j];
            size_t cw = shown_width(c, markdown);
            if (cw > w)
                w = cw;
            if (*c) {
                nonempty = 1;
                if (classify(c, NULL) == CELL_TEXT)
                    numeric = 0;
            }
        }
        (*widths)[j] = markdown && w < 3 ? 3 : w; /* "---" is the shortest rule */
        (*right)[j] = numeric && nonempty;
    }
    return RA_OK;
}

static void pad(FILE *f, size_t n)
{
    while (n-- > 0)
        fputc(' ', f);
}

/* Cell text for the aligned-text and markdown writers. */
static void put_escaped(FILE *f, const char *s, int markdown)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (markdown && ch == '|')
            fputs("\\|", f);
        else if (markdown && ch == '\n')
            fputs("<br>", f);
        else if (ch < 0x20 || ch == 0x7f)
            fputc(' ', f);
        else
            fputc(ch, f);
    }
}

/* --- writers --------------------------------------------------------------------- */

static void write_aligned_row(FILE *f, const ra_table *t, char *const *cells, const size_t *w,
                              const int *right, int markdown)
{
    size_t nc = (size_t)t->ncols;
    if (markdown)
        fputs("| ", f);
    for (size_t j = 0; j < nc; j++) {
        size_t cw = shown_width(cells[j], markdown);
        size_t fill = w[j] > cw ? w[j] - cw : 0;
        int last = j + 1 == nc;
        if (right[j])
            pad(f, fill);
        put_escaped(f, cells[j], markdown);
        if (!right[j] && (markdown || !last))
            pad(f, fill);
        if (!last)
            fputs(markdown ? " | " : "  ", f);
    }
    fputs(markdown ? " |\n" : "\n", f);
}

static ra_status write_aligned(const ra_table *t, FILE *f, int markdown)
{
    size_t *w;
    int *right;
    RA_TRY(measure(t, markdown, &w, &right));
    size_t nc = (size_t)t->ncols;
    write_aligned_row(f, t, t->headers, w, right, markdown);
    /* Rule under the header; in markdown it also carries the alignment. */
    if (markdown)
        fputc('|', f);
    for (size_t j = 0; j < nc; j++) {
        if (markdown) {
            /* The cell is " text " (width + 2); ':' on the right aligns right. */
            for (size_t k = 0; k < w[j] + 1; k++)
                fputc('-', f);
            fputs(right[j] ? ":|" : "-|", f);
        } else {
            for (size_t k = 0; k < w[j]; k++)
                fputc('-', f);
            if (j + 1 < nc)
                fputs("  ", f);
        }
    }
    fputc('\n', f);
    for (size_t i = 0; i < t->nrows; i++)
        write_aligned_row(f, t, t->cells + i * nc, w, right, markdown);
    free(w);
    free(right);
    return RA_OK;
}

static void put_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_csv_row(FILE *f, char *const *cells, int ncols)
{
    for (int j = 0; j < ncols; j++) {
        if (j)
            fputc(',', f);
        put_csv_field(f, cells[j]);
    }
    fputc('\n', f);
}

/* Writes one JSON value (jansson does the encoding); steals v. */
static ra_status put_json(FILE *f, json_t *v)
{
    if (!v)
        RA_ERROR("table: out of memory", RA_ENOMEM);
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    if (!s)
        RA_ERROR("table: JSON encoding failed (invalid UTF-8 in a cell?)", RA_EINVAL);
    fputs(s, f);
    free(s);
    return RA_OK;
}

static ra_status put_json_cell(FILE *f, const char *c)
{
    int json_literal = 0;
    if (classify(c, &json_literal) != CELL_NUMBER)
        return put_json(f, json_string(c));
    errno = 0;
    double x = strtod(c, NULL);
    if (isinf(x)) /* overflows a double: a reader could not hold it */
        return put_json(f, json_string(c));
    if (json_literal) {
        fputs(c, f);
        return RA_OK;
    }
    return put_json(f, json_real(x));
}

static ra_status write_json(const ra_table *t, FILE *f)
{
    size_t nc = (size_t)t->ncols;
    if (t->nrows == 0) {
        fputs("[]\n", f);
        return RA_OK;
    }
    fputs("[\n", f);
    for (size_t i = 0; i < t->nrows; i++) {
        fputs("  {", f);
        for (size_t j = 0; j < nc; j++) {
            if (j)
                fputs(", ", f);
            RA_TRY(put_json(f, json_string(t->headers[j])));
            fputs(": ", f);
            RA_TRY(put_json_cell(f, t->cells[i * nc + j]));
        }
        fputs(i + 1 < t->nrows ? "},\n" : "}\n", f);
    }
    fputs("]\n", f);
    return RA_OK;
}

ra_status ra_table_write(const ra_table *t, FILE *f, ra_format fmt)
{
    ra_status st;
    switch (fmt) {
    case RA_FMT_TEXT:
        st = write_aligned(t, f, 0);
        break;
    case RA_FMT_MARKDOWN:
        st = write_aligned(t, f, 1);
        break;
    case RA_FMT_CSV:
        write_csv_row(f, t->headers, t->ncols);
        for (size_t i = 0; i < t->nrows; i++)
            write_csv_row(f, t->cells + i * (size_t)t->ncols, t->ncols);
        st = RA_OK;
        break;
    case RA_FMT_JSON:
        st = write_json(t, f);
        break;
    default:
        RA_ERRORF(RA_EINVAL, "table: unknown output format %d", (int)fmt);
    }
    if (st != RA_OK)
        return st;
    if (fflush(f) != 0 || ferror(f))
        RA_ERRORF(RA_EIO, "writing table: %s", strerror(errno));
    return RA_OK;
}

void ra_fmt_value(char *buf, size_t len, double x, ra_dtype t)
{
    double want = ra_round_to_dtype(x, t); /* may overflow to inf */
    if (isnan(want)) {
        snprintf(buf, len, "nan");
        return;
    }
    if (isinf(want)) {
        snprintf(buf, len, want < 0 ? "-inf" : "inf");
        return;
    }
    /* 17 significant digits identify every double, so the loop ends. */
    for (int digits = 1; digits <= 17; digits++) {
        char tmp[40];
        snprintf(tmp, sizeof tmp, "%.*g", digits, want);
        if (ra_round_to_dtype(strtod(tmp, NULL), t) == want || digits == 17) {
            snprintf(buf, len, "%s", tmp);
            return;
        }
    }
}
