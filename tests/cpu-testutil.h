/* Helpers shared by the CPU gdn test suites (t-cpu-gdn, t-cpu-faults). */
#ifndef RA_TESTS_CPU_TESTUTIL_H
#define RA_TESTS_CPU_TESTUTIL_H

/*
 * Cases in the "default" regime from GSL's mt19937 with fixed seeds, runs of
 * a configuration (forward and backward), and normwise comparisons.  Every
 * function is static inline so that a suite not using one gets no warning.
 * Tensors are found and read with testutil.h's tu_tensor and tu_at.
 */

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "core/case.h"
#include "core/status.h"
#include "core/tensor.h"
#include "cpu/faults.h"
#include "cpu/gdn_variants.h"
#include "testutil.h"

typedef struct gen {
    int B, T, Hk, Hv, K, V;
    ra_dtype dt; /* storage of every input */
    int h0, dht; /* also generate h0 / dht */
    int l2norm;  /* set the parameter (raw keys); else keys pre-normalised */
    unsigned long seed;
    double gdiv; /* g divided by this (0: 1), for long memory */
} gen;

static inline void normal_fill(double *x, size_t n, gsl_rng *r, double sd)
{
    for (size_t i = 0; i < n; i++)
        x[i] = gsl_ran_gaussian(r, sd);
}

static inline void normalise_rows(double *x, size_t rows, size_t d)
{
    for (size_t i = 0; i < rows; i++) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += x[i * d + j] * x[i * d + j];
        for (size_t j = 0; j < d; j++)
            x[i * d + j] /= sqrt(s);
    }
}

/* The "default" regime: q, k ~ N(0,1) (rows normalised unless the case
   asks the kernel to), v, do, dht, h0 ~ N(0,1), g = logsigmoid(N(0,1)),
   beta = sigmoid(N(0,1)); drawn in the order q, k, v, g, beta, do, h0,
   dht. */
static inline void make_case(ra_case *c, const gen *o)
{
    const ra_gdn_shape s = {o->B, o->T, o->Hk, o->Hv, o->K, o->V};
    tu_gdn_case(c, &s, o->dt, TU_DO | (o->h0 ? TU_H0 : 0) | (o->dht ? TU_DHT : 0));
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, o->seed);
    size_t nqk = (size_t)o->B * o->T * o->Hk * o->K, nv = (size_t)o->B * o->T * o->Hv * o->V,
           ng = (size_t)o->B * o->T * o->Hv, ns = (size_t)o->B * o->Hv * o->K * o->V;
    double *buf = malloc((nqk + nv + ng + ns) * sizeof *buf);
    for (int w = 0; w < 2; w++) {
        normal_fill(buf, nqk, r, 1.0);
        if (!o->l2norm)
            normalise_rows(buf, nqk / o->K, o->K);
        ra_tensor_from_doubles(tu_t(c, w ? "k" : "q"), buf);
    }
    normal_fill(buf, nv, r, 1.0);
    ra_tensor_from_doubles(tu_t(c, "v"), buf);
    for (size_t i = 0; i < ng; i++)
        buf[i] = -log1p(exp(-gsl_ran_gaussian(r, 1.0))) / (o->gdiv > 0 ? o->gdiv : 1);
    ra_tensor_from_doubles(tu_t(c, "g"), buf);
    for (size_t i = 0; i < ng; i++)
        buf[i] = 1.0 / (1.0 + exp(-gsl_ran_gaussian(r, 1.0)));
    ra_tensor_from_doubles(tu_t(c, "beta"), buf);
    static const char *const rest[3] = {"do", "h0", "dht"};
    for (int i = 0; i < 3; i++) {
        ra_tensor *t = ra_tensors_find(&c->tensors, rest[i]);
        if (!t)
            continue;
        normal_fill(buf, (size_t)t->numel, r, 1.0);
        ra_tensor_from_doubles(t, buf);
    }
    if (o->l2norm)
        ck_assert_int_eq(ra_kv_set(&c->params, "l2norm", "1"), RA_OK);
    free(buf);
    gsl_rng_free(r);
}

/* Forward outputs and gradients of one configuration. */
typedef struct result {
    ra_tensors f, b;
} result;

static inline void run_cfg(result *res, const ra_cpu_gdn_cfg *cfg, const ra_case *c,
                           unsigned faults, int threads)
{
    ra_run run = {.threads = threads, .elapsed_ms = -1};
    ra_cpu_gdn_cfg planted = *cfg; /* faults are a test's own configuration */
    planted.faults = faults;
    ra_tensors_init(&res->f);
    ra_tensors_init(&res->b);
    ck_assert_int_eq(ra_cpu_gdn_forward(&planted, c, &res->f, &run), RA_OK);
    ck_assert_int_eq(ra_cpu_gdn_backward(&planted, c, &res->b, &run), RA_OK);
}

static inline void run_variant(result *res, const char *name, const ra_case *c, unsigned faults)
{
    const ra_cpu_gdn_cfg *cfg = ra_cpu_gdn_variant_cfg(name);
    ck_assert_msg(cfg != NULL, "no variant %s", name);
    run_cfg(res, cfg, c, faults, 0);
}

static inline void result_clear(result *res)
{
    ra_tensors_clear(&res->f);
    ra_tensors_clear(&res->b);
}

/* rms(a - b) / rms(b) over a tensor and an array; 0 when both are zero. */
static inline double rel_rms_arr(const ra_tensor *a, const double *b)
{
    long double e = 0, z = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        long double x = ra_tensor_get(a, i), y = b[i];
        e += (x - y) * (x - y);
        z += y * y;
    }
    return z == 0 ? (e == 0 ? 0 : INFINITY) : (double)sqrtl(e / z);
}

static inline double rel_rms(const ra_tensor *a, const ra_tensor *b)
{
    ck_assert_int_eq(a->numel, b->numel);
    double *y = malloc((size_t)(b->numel ? b->numel : 1) * sizeof *y);
    ck_assert_ptr_nonnull(y);
    ra_tensor_to_doubles(y, b);
    double e = rel_rms_arr(a, y);
    free(y);
    return e;
}

static inline int identical(const ra_tensor *a, const ra_tensor *b)
{
    return a->dtype == b->dtype && a->nbytes == b->nbytes &&
           memcmp(a->data, b->data, a->nbytes) == 0;
}

static const char *const fwd_names[] = {"o", "ht"};
static const char *const bwd_names[] = {"dq", "dk", "dv", "dg", "dbeta", "dh0"};

/* Normwise tolerance of a variant against exact values: its storage and
   operand format (the closed-form inputs have O(1) condition). */
static inline double variant_tol(const char *name)
{
    if (strstr(name, "f64"))
        return 1e-13;
    if (strstr(name, "bf16"))
        return 3e-2; /* 8-bit operands and bf16 outputs */
    if (strstr(name, "tf32x3"))
        return 1e-5; /* 3xTF32 products: ~2^-21, fp32 class */
    if (strstr(name, "tf32"))
        return 5e-3; /* 11-bit operands */
    return 1e-5;     /* fp32 arithmetic */
}

/* The double chunked configurations (test only). */
static inline ra_cpu_gdn_cfg chunk_f64(int chunk, ra_cpu_inverse inv)
{
    ra_cpu_gdn_cfg c = {RA_CPU_CHUNK, 1, chunk, RA_CPU_ROUND_IEEE, inv, RA_F64, RA_F64, 0, 0};
    return c;
}

static const ra_cpu_gdn_cfg seq_f64 = {RA_CPU_SEQ,          1,      0,     RA_CPU_ROUND_IEEE,
                                       RA_CPU_INV_FWDSUBST, RA_F64, RA_F64, 0, 0};

static inline double max_rel(const ra_tensor *a, const ra_tensor *b)
{
    double e = 0, z = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        e = fmax(e, fabs(ra_tensor_get(a, i) - ra_tensor_get(b, i)));
        z = fmax(z, fabs(ra_tensor_get(b, i)));
    }
    return z == 0 ? e : e / z;
}

/* Compares two results tensor by tensor: changed[] says which must differ;
   all others must be bit-identical. */
static inline void expect_changes(const result *base, const result *f, const char *const *changed,
                                  const char *what)
{
    const ra_tensors *sets[2] = {&base->f, &base->b}, *fsets[2] = {&f->f, &f->b};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sets[s]->n; i++) {
            const ra_tensor *x = sets[s]->items[i], *y = tu_tensor(fsets[s], x->name);
            int must = 0;
            for (const char *const *c = changed; *c; c++)
                must |= strcmp(*c, x->name) == 0;
            if (must)
                ck_assert_msg(!identical(x, y), "%s: %s unchanged", what, x->name);
            else
                ck_assert_msg(identical(x, y), "%s: %s changed", what, x->name);
        }
}

#endif
