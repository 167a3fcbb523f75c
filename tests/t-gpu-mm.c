/* GPU test: the chunk kernels' product engines agree bit for bit within each precision. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "gpu/mm_engines.h"
#include "testutil.h"

/*
 * A chunk kernel may swap one product engine for another only if both give
 * the same bits (mm_engines.h).  The expected values are blk_mm's, the
 * general kernels' engine (a different algorithm: 64 x 64 panels, sums kept
 * in C between them, fragments split from floats per mma), whose own bits
 * the CPU twin tests (t-gpu-chunk); every engine is also held, on every
 * element, to a forward error bound against a double product computed here:
 *
 *   IEEE     an fmaf chain of kc steps from C or zero:
 *            |err| <= gamma_kc (|C| + sum |a b|), gamma_k = k u / (1 - k u),
 *            u = 2^-24;
 *   3xtf32   per product the dropped small*small term and the split's
 *            remainders, <= 3 * 2^-22 |a b|; per k-step the tensor core's
 *            truncating sums of 8 products over three mmas, <= 11 * 2^-23
 *            of the step's sum of |a b|; the k-steps' fp32 adds, <= kc/8 u
 *            each relative to the running sum: together under
 *            (12 + 22 + 16) 2^-24 < 2^-18 of (|C| + sum |a b|) for
 *            kc <= 128.
 *
 * Cases: the eight (shape, layout, acc) forms of the production head's
 * gradient products at chunk rows L = 64, 44 and 1, and random forms;
 * each over three operand sets and six products (the per-block indexing).
 * Operands span 2^-8..2^8 with random signs and 5 % exact zeros.  Elements
 * of C outside m x n must be left as they were.  Exits 77 (skip) without a
 * usable GPU.
 */

enum { NSETS = 3, NPROD = 6 };

static uint64_t rng_state;

static float draw(void)
{
    const uint64_t x = ra_rng_splitmix64(&rng_state);
    if ((x & 0xff) < 13)
        return 0.f; /* about 5 % */
    const float mant = 1.f + (float)((x >> 8) & 0x7fffff) / 8388608.f;
    const int ex = (int)((x >> 32) % 17) - 8;
    return ((x >> 31) & 1 ? -1.f : 1.f) * ldexpf(mant, ex); /* bit 31: unused above */
}

static float *fill(size_t n)
{
    float *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        x[i] = draw();
    return x;
}

static float at_a(const float *a, const ra_gpu_mm_shape *s, int i, int p)
{
    return s->ak ? a[i * RA_GPU_MM_LD + p] : a[p * RA_GPU_MM_LD + i];
}

static float at_b(const float *b, const ra_gpu_mm_shape *s, int p, int j)
{
    return s->bk ? b[j * RA_GPU_MM_LD + p] : b[p * RA_GPU_MM_LD + j];
}

/* Every element of every product within its precision's bound of the
   double product; C untouched outside m x n. */
static void check_bound(const char *what, const char *engine, const ra_gpu_mm_shape *s,
                        const float *c, const float *c0, const float *a, const float *b, int x3)
{
    const double u = ldexp(1.0, -24), gam = s->kc * u / (1 - s->kc * u);
    const double rel = x3 ? ldexp(1.0, -18) : gam;
    for (int z = 0; z < NPROD; z++) {
        const float *az = a + (size_t)(z % NSETS) * RA_GPU_MM_SET;
        const float *bz = b + (size_t)(z % NSETS) * RA_GPU_MM_SET;
        const float *cz = c + (size_t)z * RA_GPU_MM_CSET, *c0z = c0 + (size_t)z * RA_GPU_MM_CSET;
        for (int i = 0; i < 64; i++)
            for (int j = 0; j < RA_GPU_MM_LD; j++) {
                const int o = i * RA_GPU_MM_LD + j;
                if (i >= s->m || j >= s->n) {
                    ck_assert_msg(tu_fbits(cz[o]) == tu_fbits(c0z[o]),
                                  "%s %s: C(%d, %d) of product %d written outside m x n", what,
                                  engine, i, j, z);
                    continue;
                }
                double ref = s->acc ? c0z[o] : 0.0, mag = fabs(ref);
                for (int p = 0; p < s->kc; p++) {
                    const double t = (double)at_a(az, s, i, p) * at_b(bz, s, p, j);
                    ref += t;
                    mag += fabs(t);
                }
                ck_assert_msg(fabs(cz[o] - ref) <= rel * mag,
                              "%s %s: C(%d, %d) of product %d = %.9g, double %.17g, bound %.3g",
                              what, engine, i, j, z, cz[o], ref, rel * mag);
            }
    }
}

static void same_bits(const char *what, const char *engine, const char *want_engine, const float *c,
                      const float *want)
{
    for (size_t o = 0; o < (size_t)NPROD * RA_GPU_MM_CSET; o++)
        ck_assert_msg(tu_fbits(c[o]) == tu_fbits(want[o]),
                      "%s: %s gives %08x (%.9g) at product %zu, C(%zu, %zu), %s %08x (%.9g)", what,
                      engine, tu_fbits(c[o]), c[o], o / RA_GPU_MM_CSET,
                      o % RA_GPU_MM_CSET / RA_GPU_MM_LD, o % RA_GPU_MM_LD, want_engine,
                      tu_fbits(want[o]), want[o]);
}

/* Runs every engine on one form; the first engine of each precision is
   the reference of the others. */
static void check_form(const ra_gpu_mm_shape *s, const char *what)
{
    static const int groups[2][4] = {
        {RA_GPU_MM_BLK_IEEE, RA_GPU_MM_FFMA, -1, -1},
        {RA_GPU_MM_BLK_X3, RA_GPU_MM_X3, RA_GPU_MM_X3W, RA_GPU_MM_X3W32}};
    float *a = fill((size_t)NSETS * RA_GPU_MM_SET), *b = fill((size_t)NSETS * RA_GPU_MM_SET);
    float *c0 = fill((size_t)NPROD * RA_GPU_MM_CSET);
    float *ref = malloc((size_t)NPROD * RA_GPU_MM_CSET * sizeof *ref),
          *c = malloc((size_t)NPROD * RA_GPU_MM_CSET * sizeof *c);
    ck_assert(ref && c);
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < 4 && groups[g][k] >= 0; k++) {
            const int e = groups[g][k];
            float *out = k == 0 ? ref : c;
            memcpy(out, c0, (size_t)NPROD * RA_GPU_MM_CSET * sizeof *out);
            const ra_status st = ra_gpu_mm_engine_run(e, s, out, a, b, NSETS, NPROD);
            ck_assert_msg(st == RA_OK, "%s: engine %s failed", what, ra_gpu_mm_engine_name(e));
            check_bound(what, ra_gpu_mm_engine_name(e), s, out, c0, a, b, g == 1);
            if (k > 0)
                same_bits(what, ra_gpu_mm_engine_name(e), ra_gpu_mm_engine_name(groups[g][0]), c,
                          ref);
        }
    free(a);
    free(b);
    free(c0);
    free(ref);
    free(c);
}

START_TEST(test_gradient_forms)
{
    /* (m, n, kc) as functions of L, layouts, acc: the gradients kernel's
       products at K = V = 128 (gdn_chunk_bwd.cu, chunk_grads) */
    static const struct {
        const char *name;
        int mL, n, nL, kc, kL, ak, bk, acc;
    } forms[] = {
        {"dP, dT", 1, 0, 1, 128, 0, 1, 1, 0},
        {"dq, tK", 1, 128, 0, 0, 1, 1, 0, 0},
        {"dQc, dKc, dW", 1, 128, 0, 128, 0, 1, 1, 0},
        {"dk, dX, dY", 1, 128, 0, 0, 1, 0, 0, 0},
        {"dT += dW Y^T", 1, 0, 1, 128, 0, 1, 1, 1},
        {"Z", 1, 0, 1, 0, 1, 1, 1, 0},
        {"dA", 1, 0, 1, 0, 1, 0, 0, 0},
        {"dk += dA^T Kb", 1, 128, 0, 0, 1, 0, 0, 1},
    };
    static const int rows[] = {64, 44, 1};
    rng_state = tu_seed(20261205);
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            const int L = rows[r];
            const ra_gpu_mm_shape s = {L,
                                       forms[f].nL ? L : forms[f].n,
                                       forms[f].kL ? L : forms[f].kc,
                                       forms[f].ak,
                                       forms[f].bk,
                                       forms[f].acc};
            char what[96];
            snprintf(what, sizeof what, "%s at L=%d (m=%d n=%d kc=%d)", forms[f].name, L, s.m, s.n,
                     s.kc);
            check_form(&s, what);
        }
}
END_TEST

START_TEST(test_random_forms)
{
    rng_state = tu_seed(77031);
    for (int t = 0; t < 24; t++) {
        const uint64_t x = ra_rng_splitmix64(&rng_state);
        const ra_gpu_mm_shape s = {1 + (int)(x % 64),          1 + (int)((x >> 8) % 128),
                                   1 + (int)((x >> 16) % 128), (int)((x >> 24) & 1),
                                   (int)((x >> 25) & 1),       (int)((x >> 26) & 1)};
        char what[96];
        snprintf(what, sizeof what, "random form %d (m=%d n=%d kc=%d ak=%d bk=%d acc=%d)", t, s.m,
                 s.n, s.kc, s.ak, s.bk, s.acc);
        check_form(&s, what);
    }
}
END_TEST

START_TEST(test_bad_arguments)
{
    tu_capture();
    float x = 0.f;
    const ra_gpu_mm_shape big = {65, 8, 8, 1, 1, 0}, ok = {8, 8, 8, 1, 1, 0};
    tu_expect_error(ra_gpu_mm_engine_run(RA_GPU_MM_X3W, &big, &x, &x, &x, 1, 1), RA_EINVAL, "x3w",
                    "m=65");
    tu_expect_error(ra_gpu_mm_engine_run(RA_GPU_MM_NENGINES, &ok, &x, &x, &x, 1, 1), RA_EINVAL,
                    "no such engine");
    tu_expect_error(ra_gpu_mm_engine_run(RA_GPU_MM_X3, &ok, &x, &x, &x, 0, 1), RA_EINVAL,
                    "operand sets");
    ck_assert_ptr_null(ra_gpu_mm_engine_name(-1));
    ck_assert_str_eq(ra_gpu_mm_engine_name(RA_GPU_MM_X3W), "x3w");
}
END_TEST

int main(void)
{
    const int probe = tu_gpu_probe("t-gpu-mm");
    if (probe == 77)
        printf("no CUDA device: skipped\n");
    if (probe != 0)
        return probe;
    Suite *s = suite_create("gpu-mm");
    tu_tcase(s, "special", NULL, NULL, test_bad_arguments);
    tu_tcase(s, "data", NULL, NULL, test_gradient_forms);
    tu_tcase(s, "random", NULL, NULL, test_random_forms);
    return tu_run(s);
}
