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

/* A stream for (seed, name): mt19937 seeded with ra_rng_stream_seed. */
ra_status ra_rng_new(ra_rng **out, uint64_t seed, const char *name);
/* A stream seeded directly (gsl_rng_set(mt19937, mt_seed)). */
ra_status ra_rng_new_mt(ra_rng **out, uint32_t mt_seed);
void ra_rng_free(ra_rng *r);

/* The stream seed: the high 32 bits of ra_rng_splitmix64 run once from the
   state seed ^ ra_rng_fnv1a64(name) (NULL name = ""). */
uint32_t ra_rng_stream_seed(uint64_t seed, const char *name);
/* FNV-1a, 64-bit (offset basis 0xcbf29ce484222325, prime 0x100000001b3). */
uint64_t ra_rng_fnv1a64(const char *s);
/* Vigna's splitmix64: advances *state by 0x9e3779b97f4a7c15, returns the
   mixed value. */
uint64_t ra_rng_splitmix64(uint64_t *state);

uint32_t ra_rng_u32(ra_rng *r);
/* Uniform on the open interval (0, 1), 53 random bits. */
double ra_rng_uniform_open(ra_rng *r);

/* Deterministic elementary functions (basic operations only; errors below
   a few ulps, identical bits on every IEEE-754 machine). */
double ra_det_exp(double x);
double ra_det_log(double x);
double ra_det_log1p(double x);
/* log(sigmoid(z)) = min(z, 0) - log1p(exp(-|z|)) and sigmoid(z), from the
   functions above (no overflow, no cancellation). */
double ra_det_logsigmoid(double z);
double ra_det_sigmoid(double z);

/* Fill x[0..n) with draws.  Normals come in pairs (polar method); the
   second of a pair waits in the stream for the next call, so filling a
   buffer in pieces gives the same numbers as filling it at once. */
void ra_gen_normal(double *x, size_t n, ra_rng *r, double mean, double sd);
void ra_gen_uniform(double *x, size_t n, ra_rng *r, double lo, double hi);
/* Exponential with the given mean (scale). */
void ra_gen_exponential(double *x, size_t n, ra_rng *r, double mean);
/* log(sigmoid(z)) and sigmoid(z) of z ~ N(mean, sd^2). */
void ra_gen_logsigmoid_normal(double *x, size_t n, ra_rng *r, double mean, double sd);
void ra_gen_sigmoid_normal(double *x, size_t n, ra_rng *r, double mean, double sd);
/* Each of the rows x[i*cols .. i*cols+cols) scaled to unit L2 norm (rows
   that are entirely zero are left zero, rows holding NaN or Inf become
   NaN).  The norm is taken with power-of-two scaling and compensated
   summation, so any finite row is normalised to within a few ulps. */
void ra_gen_l2_normalize_rows(double *x, size_t rows, size_t cols);

#endif
