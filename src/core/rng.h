/* Seeded random streams (GSL mt19937) and machine-independent distributions. */
#ifndef RA_CORE_RNG_H
#define RA_CORE_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/*
 * Every draw starts from GSL's mt19937 (integer output, identical on every
 * machine).  The transforms to real distributions use only IEEE-754 basic
 * operations and sqrt (correctly rounded everywhere) plus the ra_det_*
 * functions below, which are written with basic operations only: a
 * platform libm's exp/log may differ in the last bit between versions or
 * CPU code paths, and the suite promises identical bytes on every machine.
 * The build compiles with -ffp-contract=off, so no FMA is introduced.
 *
 * Streams are derived per (seed, name): the same case seed gives the same q
 * whatever other tensors are requested.
 */

typedef struct ra_rng ra_rng;

/* A stream for (seed, name): mt19937 seeded with a 32-bit mix of both. */
ra_status ra_rng_new(ra_rng **out, uint64_t seed, const char *name);
void ra_rng_free(ra_rng *r);

uint32_t ra_rng_u32(ra_rng *r);
/* Uniform on the open interval (0, 1), 53 random bits. */
double ra_rng_uniform_open(ra_rng *r);

/* Deterministic elementary functions (basic operations only; errors below
   a few ulps, identical bits on every IEEE-754 machine). */
double ra_det_exp(double x);
double ra_det_log(double x);
double ra_det_log1p(double x);

/* Fill x[0..n) with draws. */
void ra_gen_normal(double *x, size_t n, ra_rng *r, double mean, double sd);
void ra_gen_uniform(double *x, size_t n, ra_rng *r, double lo, double hi);
/* Exponential with the given mean (scale). */
void ra_gen_exponential(double *x, size_t n, ra_rng *r, double mean);
/* log(sigmoid(z)) and sigmoid(z) of z ~ N(mean, sd^2). */
void ra_gen_logsigmoid_normal(double *x, size_t n, ra_rng *r, double mean, double sd);
void ra_gen_sigmoid_normal(double *x, size_t n, ra_rng *r, double mean, double sd);
/* Each of the rows x[i*cols .. i*cols+cols) scaled to unit L2 norm (rows
   that are entirely zero are left zero). */
void ra_gen_l2_normalize_rows(double *x, size_t rows, size_t cols);

#endif
