/* Error-growth studies: the study table, points tables, reports and the audit helpers they share.
 */
#ifndef RA_STUDY_STUDY_H
#define RA_STUDY_STUDY_H

/*
 * A study turns the suite from a pass/fail gate into an explanation: it
 * measures one error effect over a grid (reversal span, operand precision,
 * inverse algorithm, sequence length, storage type, acceptance rule) and
 * writes a report under reports/: NAME.md (the headline finding first, then
 * the stamp and the tables), NAME.csv (every point) and NAME.svg (a gnuplot
 * plot; where gnuplot is missing the markdown and CSV still stand and the
 * report says the plot was skipped).
 *
 * Layer: src/study sits between the CLI and audit/ref/cpu.  Studies take
 * references through the cache (ra_study_case_make: a reference the cache
 * holds is never recomputed), run variants of the registry or rows they
 * build from a registered row's configuration (ra_study_run), and measure
 * with src/core/metrics.c (ra_study_measure).
 *
 * Adding a study: one file src/study/NAME.c defining
 *     ra_status ra_study_NAME(ra_study_ctx *ctx, ra_study_report *rep);
 * and one line in src/study/studies.c.  The run function fills rep (the
 * headline, body text, points, the plot spec); `recaudit study NAME`
 * calls it and then ra_report_finish writes the three files.  A study
 * honours ctx->quick (a tiny grid for make check, seconds).
 */

#include <stddef.h>
#include <stdio.h>

#include "audit/registry.h"
#include "core/case.h"
#include "core/metrics.h"
#include "core/op.h"
#include "core/status.h"
#include "ref/ref.h"

/* --- points tables --------------------------------------------------------------------- */

/* A table of named columns whose cells are text or numbers (or empty).
   Rows are added with ra_points_row and filled by column name. */
typedef struct ra_points ra_points;

/* cols: NULL-terminated column names (unique, non-empty, no blanks
   needed but no comma or '|' or newline). */
ra_status ra_points_new(ra_points **out, const char *const *cols);
void ra_points_free(ra_points *p);
/* Appends an empty row; the setters below write into the last row. */
ra_status ra_points_row(ra_points *p);
/* RA_ENOTFOUND naming the column when there is no such column; RA_EINVAL
   without a row. */
ra_status ra_points_set_text(ra_points *p, const char *col, const char *text);
ra_status ra_points_set_num(ra_points *p, const char *col, double x);
ra_status ra_points_set_textf(ra_points *p, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for any row (RA_EINVAL when row is out of range). */
ra_status ra_points_put_text(ra_points *p, size_t row, const char *col, const char *text);
ra_status ra_points_put_num(ra_points *p, size_t row, const char *col, double x);

size_t ra_points_nrows(const ra_points *p);
int ra_points_ncols(const ra_points *p);
const char *ra_points_colname(const ra_points *p, int col);
/* Column index of a name, -1 if none. */
int ra_points_col(const ra_points *p, const char *name);
/* 1 if the cell holds a number (then *x gets it), else 0. */
int ra_points_num(double *x, const ra_points *p, size_t row, int col);
/* The cell as text: a number with %.17g (its CSV form), "" when empty;
   NULL when out of range. */
const char *ra_points_text(const ra_points *p, size_t row, int col);

/* CSV of every column and row (numbers %.17g, RFC 4180 quoting). */
ra_status ra_points_write_csv(const ra_points *p, const char *path);
/* Markdown table of the columns cols (NULL-terminated; NULL: all) of the
   rows for which keep(row) is 1 (keep NULL: all); numbers with %.3g
   (integers as integers). */
ra_status ra_points_write_markdown(const ra_points *p, FILE *f, const char *const *cols,
                                   int (*keep)(const ra_points *p, size_t row, void *arg),
                                   void *arg);

/* --- plots ----------------------------------------------------------------------------- */

#define RA_PLOT_MAX_Y 4

/* What to draw from a points table: y against x, one line per distinct
   value of the series columns, one panel per distinct value of the panel
   column (a multiplot), and model curves (columns drawn dashed, one per
   series as well).  Rows whose x or y cell is not a finite number (or not
   positive on a log axis) are left out. */
typedef struct ra_plot {
    const char *title;
    const char *x, *xlabel;
    const char *y[RA_PLOT_MAX_Y]; /* measured columns (NULL-ended) */
    const char *ylabel;
    const char *model[RA_PLOT_MAX_Y]; /* model columns drawn dashed (NULL-ended) */
    const char *series;               /* comma-separated columns, NULL: one line */
    const char *panel;                /* column, NULL: one panel */
    int logx, logy;
    const char *xtic; /* text column labelling the x tics (a categorical axis), NULL: none */
} ra_plot;

/* Writes svg_path with gnuplot: *made = 1 when the plot was written;
   *made = 0 with the reason in why when gnuplot is not there (no error).
   gnuplot: the program (NULL: $RECAUDIT_GNUPLOT, else "gnuplot" on PATH;
   "none" or "" disables).  A gnuplot that runs and fails is an error. */
ra_status ra_points_plot(int *made, char *why, size_t why_len, const ra_points *p,
                         const ra_plot *spec, const char *svg_path, const char *gnuplot);

/* --- fits ------------------------------------------------------------------------------ */

typedef struct ra_fit {
    double slope, intercept;
    double slope_se; /* standard error of the slope (0 with n = 2) */
    double r2;       /* coefficient of determination (1 with n = 2) */
    size_t n;
} ra_fit;

/* Least squares y = intercept + slope x (gsl_fit_linear) over the n pairs;
   RA_EINVAL with fewer than 2 points, non-finite values or all x equal. */
ra_status ra_fit_linear(ra_fit *fit, const double *x, const double *y, size_t n);

/* --- reports --------------------------------------------------------------------------- */

typedef struct ra_study_report ra_study_report;

/* The headline finding: one or two sentences, first thing in the report
   (and in reports/README.md). Replaces an earlier one. */
ra_status ra_report_headline(ra_study_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Markdown body text, appended in order. */
ra_status ra_report_printf(ra_study_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A markdown table of the report's points (ra_points_write_markdown). */
ra_status ra_report_table(ra_study_report *r, const ra_points *p, const char *const *cols,
                          int (*keep)(const ra_points *p, size_t row, void *arg), void *arg);
/* Records a seed used (listed once in the stamp). */
void ra_report_seed(ra_study_report *r, unsigned long long seed);
/* The study ran on a GPU: the stamp then carries ra_gpu_describe's text. */
void ra_report_used_gpu(ra_study_report *r);
/* The points written to NAME.csv and plotted into NAME.svg (the report
   takes ownership; NULL: none). */
void ra_report_set_points(ra_study_report *r, ra_points *p, const ra_plot *plot);

/* --- the study context and table ------------------------------------------------------- */

typedef struct ra_study_ctx {
    const char *out_dir; /* where NAME.md/.csv/.svg go (default "reports") */
    int quick;           /* tiny grid (make check) */
    int threads;         /* 0: OpenMP default */
    ra_ref_opts ref;     /* reference options (cache on) */
    ra_registry *registry;
    const char *gnuplot; /* NULL: $RECAUDIT_GNUPLOT or gnuplot on PATH */
    const char *command; /* the command line, for the stamp */
    int verbose;         /* progress lines to stderr */
    /* filled as the study runs */
    size_t ref_hits, ref_computed;
} ra_study_ctx;

void ra_study_ctx_init(ra_study_ctx *ctx);

typedef ra_status ra_study_fn(ra_study_ctx *ctx, ra_study_report *rep);

typedef struct ra_study {
    const char *name;  /* "reversal": NAME.md, NAME.csv, NAME.svg */
    const char *title; /* the report's title */
    const char *doc;   /* one line for `recaudit study --list` */
    ra_study_fn *run;
} ra_study;

/* The table (src/study/studies.c), ended by a row with name NULL. */
extern const ra_study ra_studies[];
const ra_study *ra_study_find(const char *name);

/* Runs one study and writes out_dir/NAME.md, .csv and .svg (plot skipped
   when gnuplot is missing, the report says so).  The report is stamped
   with the commit, date, machine, MPFR/GSL versions, GPU when used, the
   seeds, the references from cache / computed and the wall time. */
ra_status ra_study_execute(ra_study_ctx *ctx, const ra_study *s);

/* --- cases, references, variant runs --------------------------------------------------- */

/* A generated case and its certified reference (taken through the cache:
   ctx->ref_hits / ref_computed count them). */
typedef struct ra_study_case {
    ra_case_spec spec;
    ra_case c;
    ra_case ref;
} ra_study_case;

/* Generates the case of (op, shape, regime, dtype, seed, params) — params
   "key=value,..." or NULL, flags "h0,l2norm" or NULL — with cotangents when
   bwd, and takes its reference.  An uncertified or non-representable
   reference is refused (RA_ENUMERIC).  Clear with ra_study_case_clear. */
ra_status ra_study_case_make(ra_study_case *sc, ra_study_ctx *ctx, const char *op,
                             const char *shape, const char *regime, const char *dtype,
                             unsigned long long seed, const char *flags, const char *params,
                             int bwd);
void ra_study_case_clear(ra_study_case *sc);

/* Runs v on sc's case in process (forward, and the backward when v has
   it and the case has cotangents); result gets the outputs and
   gradients.  The variant's own errors come back as its status. */
ra_status ra_study_run(ra_case *result, const ra_study_ctx *ctx, const ra_variant *v,
                       const ra_study_case *sc);
/* Metrics of result's tensor against the reference's (ulps in the
   result's storage dtype).  RA_ENOTFOUND naming the tensor when either
   lacks it. */
ra_status ra_study_measure(ra_metrics *m, const ra_case *result, const ra_study_case *sc,
                           const char *tensor);
/* A registered variant by exact name: RA_ENOTFOUND naming it if absent. */
ra_status ra_study_variant(const ra_variant **out, const ra_study_ctx *ctx, const char *name);

/* Seconds on a monotonic clock (for timings inside a study). */
double ra_study_now(void);

#endif
