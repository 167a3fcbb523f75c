/* Case generation for the affine scan family: the seed's recipe, rotations, strong decay. */
#include "core/gen_scan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/scan_case.h"

/*
 * Each regime is one row of a parallel table saying how the two inputs
 * are drawn; cotangents are always N(0,1).  Rotations are built without
 * trigonometric functions (whose last bits differ between libms): the
 * angle's (cos, sin) is a normalised pair of normal draws (uniform on the
 * circle), so a case is bit-identical on every IEEE machine.  For k = 1 a
 * "rotation" is a sign: a_t = +-gamma.
 */

typedef enum {
    A_UNIFORM,  /* U(-p, p) */
    A_NORMAL,   /* N(0,1) p / sqrt(k) */
    A_ROTATION, /* p * blockdiag R(theta), theta uniform */
    A_LOGSIG,   /* logsigmoid(N(0,1)) */
    A_NEG_EXP   /* -Exponential(mean p) */
} a_kind;

typedef struct regime {
    a_kind a;
    double ap;      /* its parameter (gamma for rotations) */
    double x_scale; /* second input: x_scale N(0,1) */
} regime;

const ra_op_item ra_scan_linear_regimes[] = {
    {"default", "seed 002: a ~ U(-0.9, 0.9), x = 0.1 N(0,1); dP, dh ~ N(0,1)"},
    {"rotation", "a = +-gamma with random signs, gamma = 0.5 (rotation:GAMMA sets it; a 1-D "
                 "rotation: |a| = sigma_min)"},
    {"strong-decay", "a ~ U(-0.1, 0.1), x = 0.1 N(0,1): fast forgetting"},
    {NULL, NULL},
};
static const regime linear_rows[] = {
    {A_UNIFORM, 0.9, 0.1}, {A_ROTATION, 0.5, 0.1}, {A_UNIFORM, 0.1, 0.1}};

const ra_op_item ra_scan_affine_regimes[] = {
    {"default", "seed 002: A = N(0,1) 0.5/sqrt(k), Bm = 0.1 N(0,1); dAbar, dBbar ~ N(0,1)"},
    {"rotation", "A_t = gamma blockdiag(R(theta)) (2x2 rotations, theta uniform; +-gamma at "
                 "k=1), gamma = 0.5 (rotation:GAMMA sets it): sigma_min = gamma, the seed's "
                 "reversal study"},
    {"rotation-near-unit", "as rotation with gamma = 0.99 (long memory)"},
    {"strong-decay", "A = N(0,1) 0.1/sqrt(k): spectral radius about 0.1"},
    {NULL, NULL},
};
static const regime affine_rows[] = {
    {A_NORMAL, 0.5, 0.1}, {A_ROTATION, 0.5, 0.1}, {A_ROTATION, 0.99, 0.1}, {A_NORMAL, 0.1, 0.1}};

const ra_op_item ra_scan_log_regimes[] = {
    {"default", "log_coeffs = logsigmoid(N(0,1)) (minGRU's -softplus), log_values ~ N(0,1); "
                "dh ~ N(0,1)"},
    {"strong-decay", "log_coeffs = -Exponential(mean 1.8), log_values ~ N(0,1)"},
    {NULL, NULL},
};
static const regime log_rows[] = {{A_LOGSIG, 0, 1.0}, {A_NEG_EXP, 1.8, 1.0}};

_Static_assert(sizeof linear_rows / sizeof linear_rows[0] + 1 ==
                       sizeof ra_scan_linear_regimes / sizeof ra_scan_linear_regimes[0] &&
                   sizeof affine_rows / sizeof affine_rows[0] + 1 ==
                       sizeof ra_scan_affine_regimes / sizeof ra_scan_affine_regimes[0] &&
                   sizeof log_rows / sizeof log_rows[0] + 1 ==
                       sizeof ra_scan_log_regimes / sizeof ra_scan_log_regimes[0],
               "regime tables out of step");

/* The regime of name into *out: a row of the op's table, or
   "ROW:GAMMA" for a rotation row with its gamma (a finite number > 0). */
static ra_status find_regime(regime *out, ra_scan_kind kind, const char *name)
{
    const ra_op_item *items[] = {ra_scan_linear_regimes, ra_scan_affine_regimes,
                                 ra_scan_log_regimes};
    const regime *rows[] = {linear_rows, affine_rows, log_rows};
    const char *colon = strchr(name, ':');
    const size_t len = colon ? (size_t)(colon - name) : strlen(name);
    for (size_t i = 0; items[kind][i].name; i++) {
        if (strlen(items[kind][i].name) != len || strncmp(items[kind][i].name, name, len) != 0)
            continue;
        *out = rows[kind][i];
        if (!colon)
            return RA_OK;
        if (out->a != A_ROTATION)
            RA_ERRORF(RA_EINVAL, "gen %s: regime '%.*s' takes no parameter (got '%s')",
                      ra_scan_op_name(kind), (int)len, name, name);
        char *end;
        errno = 0;
        double g = strtod(colon + 1, &end);
        if (end == colon + 1 || *end || errno == ERANGE || !(g > 0) || !isfinite(g))
            RA_ERRORF(RA_EINVAL, "gen %s: regime '%s': gamma must be a finite number > 0, got '%s'",
                      ra_scan_op_name(kind), name, colon + 1);
        out->ap = g;
        return RA_OK;
    }
    RA_ERRORF(RA_EINVAL, "gen %s: unknown regime '%s' (recaudit list regimes shows the known ones)",
              ra_scan_op_name(kind), name);
}

ra_status ra_scan_regime_check(int kind, const char *name)
{
    regime rg;
    return find_regime(&rg, kind, name);
}

/* A new tensor name of c, filled from x (rounded to dt, clipped to its range). */
static ra_status add(ra_case *c, const char *name, ra_dtype dt, int nd, const int64_t *d,
                     const double *x)
{
    ra_tensor *t;
    RA_TRY(ra_tensors_new(&c->tensors, &t, name, dt, nd, d));
    const double clip = ra_dtype_max(dt);
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, x[i] > clip ? clip : (x[i] < -clip ? -clip : x[i]));
    return RA_OK;
}

/* Draws of the first input of shape s (n values) under regime rg. */
static void draw_a(double *x, int64_t n, ra_rng *r, const ra_scan_shape *s, const regime *rg)
{
    switch (rg->a) {
    case A_UNIFORM:
        ra_gen_uniform(x, (size_t)n, r, -rg->ap, rg->ap);
        return;
    case A_NORMAL:
        ra_gen_normal(x, (size_t)n, r, 0.0, rg->ap / sqrt((double)s->k));
        return;
    case A_LOGSIG:
        ra_gen_logsigmoid_normal(x, (size_t)n, r, 0.0, 1.0);
        return;
    case A_NEG_EXP:
        ra_gen_exponential(x, (size_t)n, r, rg->ap);
        for (int64_t i = 0; i < n; i++)
            x[i] = -x[i];
        return;
    case A_ROTATION:
        break;
    }
    const int64_t k = s->k, kk = k * k;
    memset(x, 0, (size_t)n * sizeof *x);
    for (int64_t m = 0; m < n / kk; m++) {
        double *A = x + m * kk;
        if (k == 1) {
            A[0] = ra_rng_uniform_open(r) < 0.5 ? -rg->ap : rg->ap;
            continue;
        }
        for (int64_t i = 0; i < k; i += 2) {
            double cs[2], h = 0;
            do {
                ra_gen_normal(cs, 2, r, 0.0, 1.0);
                h = sqrt(cs[0] * cs[0] + cs[1] * cs[1]);
            } while (h < 1e-3);
            const double c = rg->ap * (cs[0] / h), sn = rg->ap * (cs[1] / h);
            A[i * k + i] = c, A[i * k + i + 1] = -sn;
            A[(i + 1) * k + i] = sn, A[(i + 1) * k + i + 1] = c;
        }
    }
}

ra_status ra_scan_generate(ra_case *c, const ra_case_spec *spec)
{
    if (c->op || c->tensors.n || c->params.n)
        RA_ERROR("gen scan: the case to fill is not empty", RA_EINVAL);
    const int kind = ra_scan_kind_of(spec->op);
    if (kind < 0)
        RA_ERRORF(RA_EINVAL, "gen scan: op '%s' is not of the scan family", spec->op);
    const char *name = spec->regime[0] && strcmp(spec->regime, "-") != 0 ? spec->regime : "default";
    regime rgv;
    RA_TRY(find_regime(&rgv, kind, name));
    const regime *rg = &rgv;
    ra_scan_shape s;
    RA_TRY(ra_scan_shape_parse(&s, kind, spec->shape));
    ra_dtype dt;
    RA_TRY(ra_dtype_parse(&dt, spec->dtype));
    char text[RA_SPEC_SHAPE_MAX];
    ra_scan_shape_format(text, sizeof text, &s);
    RA_TRY(ra_case_set_op(c, ra_scan_op_name(kind)));
    RA_TRY(ra_kv_set(&c->params, "shape", text));
    RA_TRY(ra_kv_set(&c->params, "dtype", ra_dtype_name(dt)));
    RA_TRY(ra_kv_set(&c->params, "regime", name));
    RA_TRY(ra_kv_setf(&c->params, "seed", "%llu", spec->seed));
    if (rg->a == A_ROTATION)
        RA_TRY(ra_kv_setf(&c->params, "gamma", "%.17g", rg->ap));
    int64_t nmax = 0;
    for (int j = 0; j < 2; j++) {
        int64_t a = ra_scan_in_numel(&s, j), b = ra_scan_out_numel(&s, j);
        nmax = a > nmax ? a : nmax;
        nmax = b > nmax ? b : nmax;
    }
    double *x = malloc((size_t)nmax * sizeof *x + 1);
    if (!x)
        RA_ERROR("gen scan: out of memory", RA_ENOMEM);
    ra_status st = RA_OK;
    for (int slot = 0; slot < 4 && st == RA_OK; slot++) {
        const int j = slot & 1, cot = slot >= 2;
        const char *tn = cot ? ra_scan_cot_name(kind, j) : ra_scan_in_name(kind, j);
        if (!tn)
            continue;
        int64_t d[5];
        const int nd = cot ? ra_scan_out_shape(d, &s, j) : ra_scan_in_shape(d, &s, j);
        const int64_t n = cot ? ra_scan_out_numel(&s, j) : ra_scan_in_numel(&s, j);
        ra_rng *r;
        st = ra_rng_new(&r, spec->seed, tn);
        if (st != RA_OK)
            break;
        if (!cot && j == 0)
            draw_a(x, n, r, &s, rg);
        else
            ra_gen_normal(x, (size_t)n, r, 0.0, cot ? 1.0 : rg->x_scale);
        ra_rng_free(r);
        st = add(c, tn, dt, nd, d, x);
    }
    free(x);
    return st;
}
