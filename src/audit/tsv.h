/* Line and field splitting for the tab-separated data files (gates, suites). */
#ifndef RA_AUDIT_TSV_H
#define RA_AUDIT_TSV_H

#include <stddef.h>

#include "core/status.h"

/*
 * The data files share one syntax: '\n' ends a line (a trailing '\r' is
 * dropped), blank lines and lines whose first non-blank character is '#'
 * are comments, fields are separated by single tabs.  The first data line
 * is a header that must equal the expected column names.
 */

typedef struct ra_tsv {
    char *buf;        /* private copy of the text, split in place */
    char *next;       /* where the next line starts */
    int line;         /* number of the line last returned */
    const char *what; /* the file, for messages */
} ra_tsv;

/* Parses a table's whole text (what: the file, for messages). */
typedef ra_status ra_tsv_text_fn(void *ctx, const char *text, const char *what);

/* Reads the table file path, or when path is NULL the shipped file
   data/REL (ra_data_read: a file, else the built-in copy), and gives its
   text to parse(ctx, text, where it came from). */
ra_status ra_tsv_load(const char *path, const char *rel, ra_tsv_text_fn *parse, void *ctx);

/* Takes one data line of a table (ra_tsv_parse): fields[0..ncols-1], and
   the line number and the file (what) for messages. */
typedef ra_status ra_tsv_row_fn(void *ctx, char **fields, int line, const char *what);

/* Reads a whole table from text (what names it in messages; NULL:
   "table"): the header, which must be cols, then every data line through
   row(ctx, ...), stopping at the first error.  A table without data
   lines is a format error, "WHAT: no NOUN rows". */
ra_status ra_tsv_parse(const char *text, const char *what, const char *const *cols, int ncols,
                       const char *noun, ra_tsv_row_fn *row, void *ctx);

/* Room for element n of a table's row array rows (elements of size
   bytes, capacity *cap, doubled when full): the array, moved or not, or
   NULL after reporting RA_ENOMEM (rows is then unchanged). */
void *ra_tsv_grow(void *rows, size_t *cap, size_t n, size_t size);

/* Line by line (what ra_tsv_parse does): starts reading text (copied). */
ra_status ra_tsv_open(ra_tsv *t, const char *text, const char *what);
void ra_tsv_close(ra_tsv *t);

/* Next data line split into exactly ncols fields (pointers into the
   buffer, valid until ra_tsv_close).  Returns 1 for a line, 0 at the end,
   -1 after reporting RA_EFORMAT (wrong field count, empty field) with the
   file and line. */
int ra_tsv_next(ra_tsv *t, char **fields, int ncols);

/* Reads the header line and checks it against the column names. */
ra_status ra_tsv_header(ra_tsv *t, const char *const *cols, int ncols);

/* The first comment line's text (after '#' and blanks) into buf, or "". */
void ra_tsv_first_comment(const char *text, char *buf, size_t len);

#endif
