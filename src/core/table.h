/* Tables of strings written as aligned text, markdown, CSV or JSON. */
#ifndef RA_CORE_TABLE_H
#define RA_CORE_TABLE_H

#include <stdio.h>

#include "core/status.h"
#include "recaudit/types.h" /* ra_dtype */

/*
 * Every report (validate rows, inspect listings, benchmarks) builds one
 * ra_table and picks the writer.  Cells are strings; in JSON a cell that
 * is a complete decimal number (or inf/nan) is written as a number (inf
 * and nan as strings, which JSON lacks), anything else as a string, and
 * the table is an array of objects keyed by the headers.  CSV quotes per
 * RFC 4180.  Text pads columns and right-aligns numeric columns.
 */

typedef enum ra_format { RA_FMT_TEXT, RA_FMT_MARKDOWN, RA_FMT_CSV, RA_FMT_JSON } ra_format;

typedef struct ra_table ra_table;

ra_status ra_table_new(ra_table **out, int ncols, const char *const *headers);
void ra_table_free(ra_table *t);
/* Copies ncols cells. */
ra_status ra_table_add_row(ra_table *t, const char *const *cells);
size_t ra_table_rows(const ra_table *t);
int ra_table_cols(const ra_table *t);
/* NULL when col or row is out of range. */
const char *ra_table_header(const ra_table *t, int col);
const char *ra_table_cell(const ra_table *t, size_t row, int col);
ra_status ra_table_write(const ra_table *t, FILE *f, ra_format fmt);
/* "text", "md"/"markdown", "csv", "json". */
ra_status ra_format_parse(ra_format *out, const char *s);

/* A cell for a value of dtype t: the shortest "%.Ng" (N = 1..17) that
   reads back, rounded to t, as x rounded to t ("0.1" for the f32 nearest
   0.1, not "0.100000001"); "inf", "-inf", "nan" for non-finite x. */
void ra_fmt_value(char *buf, size_t len, double x, ra_dtype t);

#endif
