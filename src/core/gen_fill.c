/* Drawing one tensor of a case from its own seeded stream: the distributions generators share. */
#include "core/gen_fill.h"

#include <stdlib.h>

#include <mpfr.h>

#include "core/rng.h"

/*
 * Tensors are filled in blocks of whole rows (bounded memory at production
 * sizes); the streams keep the second normal of a pair between blocks, so
 * blocking does not change a single value.
 */

/* log(x) correctly rounded (glibc's log is not guaranteed to be, and
   generated cases must be bit-identical on every machine). */
static double log_rn(double x)
{
    MPFR_DECL_INIT(m, 53);
    mpfr_set_d(m, x, MPFR_RNDN);
    mpfr_log(m, m, MPFR_RNDN);
    return mpfr_get_d(m, MPFR_RNDN);
}

#define BLOCK_ELEMS 65536

/* Fills t from stream (seed, t->name), block by block. */
static ra_status fill(ra_tensor *t, uint64_t seed, const ra_draw *d)
{
    if (d->kind == RA_DRAW_ZERO || t->numel == 0)
        return RA_OK; /* ra_tensor_new zero-fills */
    int64_t row = d->unit_rows > 0 ? d->unit_rows : 1;
    int64_t block = row >= BLOCK_ELEMS ? row : BLOCK_ELEMS / row * row;
    double *buf = malloc((size_t)block * sizeof *buf);
    if (!buf)
        RA_ERRORF(RA_ENOMEM, "tensor '%s': out of memory generating it", t->name);
    ra_rng *r;
    ra_status st = ra_rng_new(&r, seed, t->name);
    if (st != RA_OK) {
        free(buf);
        return st;
    }
    double clip = ra_dtype_max(t->dtype);
    for (int64_t at = 0; at < t->numel; at += block) {
        size_t n = (size_t)(t->numel - at < block ? t->numel - at : block);
        switch (d->kind) {
        case RA_DRAW_NORMAL:
            ra_gen_normal(buf, n, r, 0.0, d->param);
            break;
        case RA_DRAW_UNIFORM01:
            ra_gen_uniform(buf, n, r, 0.0, 1.0);
            break;
        case RA_DRAW_LOGSIGMOID:
            ra_gen_logsigmoid_normal(buf, n, r, 0.0, 1.0);
            break;
        case RA_DRAW_SIGMOID:
            ra_gen_sigmoid_normal(buf, n, r, 0.0, 1.0);
            break;
        case RA_DRAW_NEG_EXP:
            ra_gen_exponential(buf, n, r, d->param);
            for (size_t i = 0; i < n; i++)
                buf[i] = -buf[i];
            break;
        case RA_DRAW_EXP:
            ra_gen_exponential(buf, n, r, d->param);
            break;
        case RA_DRAW_SOFTPLUS_NORMAL:
            /* softplus(z) = -logsigmoid(-z), from the deterministic transform */
            ra_gen_normal(buf, n, r, 0.0, d->param);
            for (size_t i = 0; i < n; i++)
                buf[i] = -ra_det_logsigmoid(-buf[i]);
            break;
        case RA_DRAW_LOG_UNIFORM:
            ra_gen_uniform(buf, n, r, d->param, d->param2);
            for (size_t i = 0; i < n; i++)
                buf[i] = log_rn(buf[i]);
            break;
        case RA_DRAW_NEG_UNIFORM:
            ra_gen_uniform(buf, n, r, d->param, d->param2);
            for (size_t i = 0; i < n; i++)
                buf[i] = -buf[i];
            break;
        case RA_DRAW_UNIFORM:
            ra_gen_uniform(buf, n, r, d->param, d->param2);
            break;
        case RA_DRAW_SHIFTED_NORMAL:
            ra_gen_normal(buf, n, r, d->param2, d->param);
            break;
        case RA_DRAW_ZERO:
            break;
        }
        if (d->unit_rows > 0)
            ra_gen_l2_normalize_rows(buf, n / (size_t)row, (size_t)row);
        if (d->unit_rows > 0 && d->param2 > 0)
            for (size_t i = 0; i < n; i++)
                buf[i] *= d->param2;
        for (size_t i = 0; i < n; i++) {
            /* Keeps scaled draws finite in narrow dtypes (large-state v). */
            double x = buf[i] > clip ? clip : (buf[i] < -clip ? -clip : buf[i]);
            ra_tensor_set(t, at + (int64_t)i, x);
        }
    }
    ra_rng_free(r);
    free(buf);
    return RA_OK;
}

ra_status ra_gen_add_tensor(ra_case *c, const char *name, ra_dtype dt, int ndim,
                            const int64_t *shape, uint64_t seed, ra_draw d)
{
    ra_tensor *t;
    RA_TRY(ra_tensors_new(&c->tensors, &t, name, dt, ndim, shape));
    return fill(t, seed, &d);
}
