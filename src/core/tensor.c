/* Dense tensors: storage dtypes, exact widening, correctly rounded narrowing. */
#include "core/tensor.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

/*
 * Narrowing works on the value, not on bit patterns: with q = 2^(E - p + 1)
 * the quantum of x's binade E (E clamped below at the dtype's emin, which
 * gives the subnormal spacing), x / q is exact in double (a power-of-two
 * scaling of a double that stays in double's normal range, since every
 * narrow dtype's range lies well inside double's), nearbyint() rounds it to
 * an integer with ties to even in the default rounding mode, and r * q is the
 * correctly rounded value with unbounded exponent.  If it exceeds the
 * dtype's largest finite value, IEEE overflow under round-to-nearest gives
 * infinity.  The sign of zero survives nearbyint and ldexp.  Bits are then
 * encoded from that exactly representable value.
 */

static const struct dtype_info {
    const char *name, *st_name;
    size_t size;
    int prec, emin, emax;
} dtype_table[RA_NDTYPES] = {
    [RA_F64] = {"f64", "F64", 8, 53, -1022, 1023},
    [RA_F32] = {"f32", "F32", 4, 24, -126, 127},
    [RA_BF16] = {"bf16", "BF16", 2, 8, -126, 127},
    [RA_F16] = {"f16", "F16", 2, 11, -14, 15},
};

size_t ra_dtype_size(ra_dtype t) { return dtype_table[t].size; }
const char *ra_dtype_name(ra_dtype t) { return dtype_table[t].name; }
const char *ra_dtype_st_name(ra_dtype t) { return dtype_table[t].st_name; }
int ra_dtype_precision(ra_dtype t) { return dtype_table[t].prec; }
int ra_dtype_emin(ra_dtype t) { return dtype_table[t].emin; }
int ra_dtype_emax(ra_dtype t) { return dtype_table[t].emax; }

ra_status ra_dtype_parse(ra_dtype *out, const char *s)
{
    static const char *aliases[][2] = {
        {"float64", "f64"}, {"double", "f64"}, {"float32", "f32"},
        {"float", "f32"},   {"bfloat16", "bf16"}, {"float16", "f16"},
        {"half", "f16"},
    };
    if (s) {
        for (size_t a = 0; a < sizeof aliases / sizeof aliases[0]; a++)
            if (strcasecmp(s, aliases[a][0]) == 0)
                s = aliases[a][1];
        for (int t = 0; t < RA_NDTYPES; t++)
            if (strcasecmp(s, dtype_table[t].name) == 0) {
                *out = (ra_dtype)t;
                return RA_OK;
            }
    }
    RA_ERRORF(RA_EINVAL, "unknown dtype '%s' (expected f64, f32, bf16 or f16)",
              s ? s : "(null)");
}

double ra_dtype_max(ra_dtype t)
{
    const struct dtype_info *d = &dtype_table[t];
    return ldexp(2.0 - ldexp(1.0, 1 - d->prec), d->emax);
}

double ra_dtype_min_subnormal(ra_dtype t)
{
    const struct dtype_info *d = &dtype_table[t];
    return ldexp(1.0, d->emin - d->prec + 1);
}

/* --- scalar conversions ------------------------------------------------------ */

static double round_to_format(double x, ra_dtype t)
{
    const struct dtype_info *d = &dtype_table[t];
    if (t == RA_F64 || x == 0.0 || !isfinite(x))
        return x;
    int e = ilogb(x);
    if (e < d->emin)
        e = d->emin;
    int qexp = e - d->prec + 1;
    double r = ldexp(nearbyint(ldexp(x, -qexp)), qexp);
    if (fabs(r) > ra_dtype_max(t))
        return copysign(INFINITY, x);
    return r;
}

double ra_round_to_dtype(double x, ra_dtype t) { return round_to_format(x, t); }

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double ra_bf16_to_double(uint16_t bits) { return bits_float((uint32_t)bits << 16); }

uint16_t ra_double_to_bf16(double x)
{
    if (isnan(x))
        return (uint16_t)(signbit(x) ? 0xFFC0 : 0x7FC0);
    /* The rounded value is a bf16 value, hence exact as a float. */
    return (uint16_t)(float_bits((float)round_to_format(x, RA_BF16)) >> 16);
}

double ra_f16_to_double(uint16_t bits)
{
    int sign = bits >> 15, ex = (bits >> 10) & 0x1F, man = bits & 0x3FF;
    double v;
    if (ex == 0)
        v = ldexp((double)man, -24);
    else if (ex == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexp((double)(man | 0x400), ex - 25);
    return sign ? -v : v;
}

uint16_t ra_double_to_f16(double x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x))
        return sign | 0x7E00;
    double r = fabs(round_to_format(x, RA_F16));
    if (isinf(r))
        return sign | 0x7C00;
    if (r < 0x1p-14) /* subnormal or zero: a multiple of 2^-24 */
        return sign | (uint16_t)ldexp(r, 24);
    int e = ilogb(r);
    uint16_t man = (uint16_t)(ldexp(r, 10 - e) - 1024.0);
    return sign | (uint16_t)((e + 15) << 10) | man;
}

float ra_double_to_f32(double x) { return (float)x; }

float ra_round_tf32_rna(float x)
{
    if (!isfinite(x))
        return x;
    /* Adding half a TF32 ulp to the magnitude bits and truncating rounds
       ties away from zero; a carry into the exponent is the right result,
       up to infinity. */
    return bits_float((float_bits(x) + 0x1000u) & 0xFFFFE000u);
}

float ra_round_bf16_f(float x)
{
    if (isnan(x))
        return x;
    /* bf16 is the top half of a float (same exponent range, subnormals
       included): adding 0x7FFF plus the lowest kept bit to the bits and
       truncating rounds to nearest, ties to even, with a carry into the
       exponent up to infinity: round_to_format's result, in a few integer
       operations (the bf16 kernels round every operand and store). */
    uint32_t u = float_bits(x);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return bits_float(u & 0xFFFF0000u);
}

float ra_round_f16_f(float x) { return (float)round_to_format(x, RA_F16); }

double ra_dtype_ulp(double z, ra_dtype t)
{
    const struct dtype_info *d = &dtype_table[t];
    if (!isfinite(z))
        return NAN;
    int e = z == 0.0 ? d->emin : ilogb(z);
    if (e < d->emin)
        e = d->emin;
    if (e > d->emax)
        e = d->emax;
    return ldexp(1.0, e - d->prec + 1);
}

/* --- shapes -------------------------------------------------------------------- */

/* Shape product with checks; errors name the tensor when one is given. */
static ra_status shape_numel_named(int64_t *numel, int ndim, const int64_t *shape,
                                   const char *name)
{
    const char *pre = name ? "tensor '" : "", *nm = name ? name : "", *post = name ? "': " : "";
    if (ndim < 0 || ndim > RA_MAX_DIMS)
        RA_ERRORF(RA_EINVAL, "%s%s%s%d dimensions (at most %d supported)", pre, nm, post,
                  ndim, RA_MAX_DIMS);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            RA_ERRORF(RA_EINVAL, "%s%s%snegative dimension %lld", pre, nm, post,
                      (long long)shape[i]);
        if (shape[i] == 0)
            n = 0; /* the product is 0 whatever comes after: no overflow */
    }
    for (int i = 0; n != 0 && i < ndim; i++) {
        if (n > INT64_MAX / shape[i])
            RA_ERRORF(RA_EOVERFLOW, "%s%s%sshape product overflows 64 bits", pre, nm, post);
        n *= shape[i];
    }
    *numel = n;
    return RA_OK;
}

ra_status ra_shape_numel(int64_t *numel, int ndim, const int64_t *shape)
{
    return shape_numel_named(numel, ndim, shape, NULL);
}

void ra_shape_format(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", i ? ", " : "",
                                 (long long)shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

int ra_shape_equal(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b)
{
    if (ndim_a != ndim_b)
        return 0;
    for (int i = 0; i < ndim_a; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

/* --- tensors ------------------------------------------------------------------- */

ra_status ra_tensor_new(ra_tensor **out, const char *name, ra_dtype dtype,
                        int ndim, const int64_t *shape)
{
    *out = NULL;
    if ((unsigned)dtype >= RA_NDTYPES)
        RA_ERRORF(RA_EINVAL, "tensor '%s': invalid dtype code %d", name, (int)dtype);
    int64_t numel;
    RA_TRY(shape_numel_named(&numel, ndim, shape, name ? name : ""));
    size_t esz = ra_dtype_size(dtype);
    if ((uint64_t)numel > SIZE_MAX / esz)
        RA_ERRORF(RA_EOVERFLOW, "tensor '%s': byte size overflows", name);
    if (!ra_alloc_plausible((uint64_t)numel, esz))
        RA_ERRORF(RA_ENOMEM, "tensor '%s': %llu bytes exceed this machine's memory or limits",
                  name, (unsigned long long)numel * esz);
    ra_tensor *t = calloc(1, sizeof *t);
    if (!t)
        RA_ERROR("out of memory", RA_ENOMEM);
    t->name = strdup(name ? name : "");
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->numel = numel;
    t->nbytes = (size_t)numel * esz;
    t->data = calloc(t->nbytes ? t->nbytes : 1, 1);
    if (!t->name || !t->data) {
        ra_tensor_free(t);
        RA_ERRORF(RA_ENOMEM, "tensor '%s': cannot allocate %zu bytes", name, (size_t)numel * esz);
    }
    *out = t;
    return RA_OK;
}

ra_status ra_tensor_clone(ra_tensor **out, const ra_tensor *src, const char *name)
{
    RA_TRY(ra_tensor_new(out, name ? name : src->name, src->dtype, src->ndim, src->shape));
    memcpy((*out)->data, src->data, src->nbytes);
    return RA_OK;
}

void ra_tensor_free(ra_tensor *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->data);
    free(t);
}

double ra_tensor_get(const ra_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case RA_F64: return ((const double *)t->data)[i];
    case RA_F32: return ((const float *)t->data)[i];
    case RA_BF16: return ra_bf16_to_double(((const uint16_t *)t->data)[i]);
    case RA_F16: return ra_f16_to_double(((const uint16_t *)t->data)[i]);
    }
    return NAN;
}

void ra_tensor_set(ra_tensor *t, int64_t i, double x)
{
    switch (t->dtype) {
    case RA_F64: ((double *)t->data)[i] = x; break;
    case RA_F32: ((float *)t->data)[i] = (float)x; break;
    case RA_BF16: ((uint16_t *)t->data)[i] = ra_double_to_bf16(x); break;
    case RA_F16: ((uint16_t *)t->data)[i] = ra_double_to_f16(x); break;
    }
}

ra_status ra_tensor_get_mpfr(mpfr_ptr out, const ra_tensor *t, int64_t i)
{
    double v = ra_tensor_get(t, i);
    if (mpfr_set_d(out, v, MPFR_RNDN) != 0)
        RA_ERRORF(RA_EINVAL, "tensor '%s': element %lld does not fit %ld bits exactly",
                  t->name, (long long)i, (long)mpfr_get_prec(out));
    return RA_OK;
}

void ra_tensor_to_doubles(double *out, const ra_tensor *t)
{
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = ra_tensor_get(t, i);
}

void ra_tensor_from_doubles(ra_tensor *t, const double *in)
{
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, in[i]);
}

void ra_tensor_to_floats(float *out, const ra_tensor *t)
{
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = (float)ra_tensor_get(t, i);
}

void ra_tensor_from_floats(ra_tensor *t, const float *in)
{
    for (int64_t i = 0; i < t->numel; i++)
        ra_tensor_set(t, i, in[i]);
}

void ra_tensor_count_nonfinite(const ra_tensor *t, int64_t *nan, int64_t *inf)
{
    int64_t nn = 0, ni = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        double v = ra_tensor_get(t, i);
        nn += isnan(v) != 0;
        ni += isinf(v) != 0;
    }
    *nan = nn;
    *inf = ni;
}

int64_t ra_tensor_find_nonfinite(const ra_tensor *t)
{
    for (int64_t i = 0; i < t->numel; i++)
        if (!isfinite(ra_tensor_get(t, i)))
            return i;
    return -1;
}

/* --- collections ------------------------------------------------------------------ */

void ra_tensors_init(ra_tensors *ts)
{
    ts->n = ts->cap = 0;
    ts->items = NULL;
}

void ra_tensors_clear(ra_tensors *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        ra_tensor_free(ts->items[i]);
    free(ts->items);
    ra_tensors_init(ts);
}

static ptrdiff_t tensors_index(const ra_tensors *ts, const char *name)
{
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->items[i]->name, name) == 0)
            return (ptrdiff_t)i;
    return -1;
}

ra_status ra_tensors_add(ra_tensors *ts, ra_tensor *t)
{
    ptrdiff_t at = tensors_index(ts, t->name);
    if (at >= 0 && ts->items[at] == t) /* already there: nothing to replace */
        return RA_OK;
    if (at >= 0) {
        ra_tensor_free(ts->items[at]);
        ts->items[at] = t;
        return RA_OK;
    }
    return ra_tensors_append(ts, t);
}

ra_status ra_tensors_append(ra_tensors *ts, ra_tensor *t)
{
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 8;
        ra_tensor **items = realloc(ts->items, cap * sizeof *items);
        if (!items) {
            ra_tensor_free(t);
            RA_ERROR("out of memory", RA_ENOMEM);
        }
        ts->items = items;
        ts->cap = cap;
    }
    ts->items[ts->n++] = t;
    return RA_OK;
}

ra_status ra_tensors_new(ra_tensors *ts, ra_tensor **out, const char *name,
                         ra_dtype dtype, int ndim, const int64_t *shape)
{
    ra_tensor *t;
    RA_TRY(ra_tensor_new(&t, name, dtype, ndim, shape));
    RA_TRY(ra_tensors_add(ts, t));
    if (out)
        *out = t;
    return RA_OK;
}

ra_tensor *ra_tensors_find(const ra_tensors *ts, const char *name)
{
    ptrdiff_t at = tensors_index(ts, name);
    return at >= 0 ? ts->items[at] : NULL;
}

ra_status ra_tensors_require(ra_tensor **out, const ra_tensors *ts,
                             const char *name, const char *what)
{
    *out = ra_tensors_find(ts, name);
    if (!*out)
        RA_ERRORF(RA_ENOTFOUND, "%s: missing tensor '%s'", what ? what : "input", name);
    return RA_OK;
}

ra_tensor *ra_tensors_take(ra_tensors *ts, const char *name)
{
    ptrdiff_t at = tensors_index(ts, name);
    if (at < 0)
        return NULL;
    ra_tensor *t = ts->items[at];
    memmove(ts->items + at, ts->items + at + 1, (ts->n - (size_t)at - 1) * sizeof *ts->items);
    ts->n--;
    return t;
}

/* --- memory ------------------------------------------------------------------------- */

int ra_alloc_plausible(uint64_t count, uint64_t size)
{
    if (size && count > UINT64_MAX / size)
        return 0;
    uint64_t n = count * size;
    if (n > SIZE_MAX)
        return 0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && n / (uint64_t)page > (uint64_t)pages)
        return 0;
    static const int limits[] = {RLIMIT_AS, RLIMIT_DATA};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit rl;
        if (getrlimit(limits[i], &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            n > (uint64_t)rl.rlim_cur)
            return 0;
    }
    return 1;
}
