/* Study "reversal": the shared rows, fit and report pieces of its scan and gdn parts. */
#ifndef RA_STUDY_REVERSAL_H
#define RA_STUDY_REVERSAL_H

#include "study/study.h"

/* The seed's figure: "reversal error grows as sigma_min^-chunklen,
   reaching 9.3e19 at strong decay" (seed 002). */
#define RA_REVERSAL_SEED_FIGURE 9.3e19

/* The columns of the reversal points table. */
extern const char *const ra_reversal_cols[];

/* One group of points (one op and regime): its rows, the floor (the
   error of the backward that keeps every state), the predicted growth
   per step (log10), and the fit over its reversal rows. */
typedef struct ra_reversal_group {
    char op[16], regime[48];
    double gamma;   /* NaN for gdn regimes */
    double predict; /* log10 growth per step the model predicts (a bound for gdn) */
    double floor;
    size_t first, last; /* rows */
    int fitted;         /* 0: fewer than 2 clean points */
    ra_fit fit;
    int L_lo, L_hi;
    double seed_L; /* first L whose error reached the seed's figure, 0: none */
} ra_reversal_group;

/* Appends one row: a backward on the group's case at span L. */
ra_status ra_reversal_point(ra_points *p, const ra_reversal_group *g, int L, const char *variant,
                            const char *backward, const char *tensor, const ra_metrics *m,
                            double control);
/* Fits log10(max_rel) against L over the group's reversal rows whose
   error is finite and >= 10 floor, fills model (floor * 10^(predict (L -
   1))) and in_fit of those rows, and the seed-figure crossing. */
ra_status ra_reversal_close(ra_points *p, ra_reversal_group *g);

/* The model column of a table: "%.2e", or "> 3.4e38" where the model
   passed fp32's range and was left empty. */
void ra_reversal_fmt_model(char *buf, size_t len, double model);

/* Bullet notes on groups [0, n) whose fit is missing, off by > 10 %, or
   whose errors went non-finite. */
ra_status ra_reversal_notes(ra_study_report *rep, const ra_points *p, const ra_reversal_group *g,
                            size_t n);

ra_status ra_reversal_scan(ra_study_ctx *ctx, ra_study_report *rep, ra_points *p,
                           ra_reversal_group *groups, size_t *ngroups);
ra_status ra_reversal_gdn(ra_study_ctx *ctx, ra_study_report *rep, ra_points *p,
                          ra_reversal_group *groups, size_t *ngroups);

#endif
