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

/* Starts reading text (copied). */
ra_status ra_tsv_open(ra_tsv *t, const char *text, const char *what);
/* Reads the whole file and starts reading it. */
ra_status ra_tsv_open_file(ra_tsv *t, const char *path);
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
