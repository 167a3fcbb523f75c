/* Measurement of the bigdn CPU modes P0/P1/P2 at the mid shape, against double precision. */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bigdn-cpu-testutil.h"
#include "cpu/bigdn_f32.h"
#include "testutil.h"

/*
 * B=1, F=4, S=64, H=2, D=32, two input recipes:
 *   sana     seed 003's test recipe: qkv = 0.1 N(0,1) stored in bf16, norm
 *            weights 1 + 0.1 N(0,1), RoPE angles U[0, 2 pi), beta =
 *            0.02 U[0,1], decay U[0.90, 0.99], k_scale = D^-1/2 S^-1/2;
 *   strong   qkv ~ N(0,1), beta U[0,1], decay U[0.5,1] (transitions far
 *            from the identity).
 * The output is compared with the token-by-token double forward of
 * bigdn-cpu-testutil.h (independent of the phase code); the gradients
 * with the double instance of the phase code (ra_cpu_bigdn_backward_f64),
 * which t-bigdn-cpu checks against finite differences to ~1e-9.  Neither
 * is the certified MPFR reference.  The table (stdout, in the test log)
 * gives rel_rms, max_rel and cos per tensor and mode; the asserts are the
 * scale bounds of t-bigdn-cpu: P0 within 64 u of fp32 (u = 2^-24), P1
 * within 8 x 2^-11, P2 within 8 x 2^-8, each mode worse than the one
 * before.
 */

static double cosine(const float *y, const double *z, int64_t n)
{
    double yz = 0, yy = 0, zz = 0;
    for (int64_t i = 0; i < n; i++)
        yz += y[i] * z[i], yy += (double)y[i] * y[i], zz += z[i] * z[i];
    return yz / sqrt(yy * zz);
}

static void measure(const char *regime, const bd_recipe *r)
{
    const int64_t B = 1, F = 4, S = 64, H = 2, D = 32;
    ra_bigdn_dims d = {B, F, S, H, D, (float)(1 / sqrt((double)D * S)), 1e-5f, 1e-6f, 0};
    bd_case c;
    bd_case_make(&c, d, r);
    double *z = malloc((size_t)c.n_out * sizeof(double)), *g64[5];
    ck_assert(z);
    bd_ref_forward(&c.d, c.x, z);
    for (int i = 0; i < 5; i++)
        ck_assert((g64[i] = malloc((size_t)bd_sizes(&c, i) * sizeof(double))));
    double *const *x = c.x;
    ck_assert_int_eq(ra_cpu_bigdn_backward_f64(&c.d, RA_BIGDN_P0, x[0], x[1], x[2], x[3], x[4],
                                               x[5], x[6], x[7], g64[0], g64[1], g64[2], g64[3],
                                               g64[4]),
                     RA_OK);
    static const char *nm[6] = {"out", "dqkv", "dbeta", "ddecay", "dq_norm_w", "dk_norm_w"};
    float *o[3], *g[3][5];
    float *const *f = c.f;
    for (int p = 0; p < 3; p++) {
        ck_assert((o[p] = malloc((size_t)c.n_out * sizeof(float))));
        ck_assert_int_eq(ra_cpu_bigdn_forward(&c.d, (ra_bigdn_prec)p, f[0], f[1], f[2], f[3], f[4],
                                              f[5], f[6], o[p]),
                         RA_OK);
        for (int i = 0; i < 5; i++)
            ck_assert((g[p][i] = malloc((size_t)bd_sizes(&c, i) * sizeof(float))));
        ck_assert_int_eq(ra_cpu_bigdn_backward(&c.d, (ra_bigdn_prec)p, f[0], f[1], f[2], f[3], f[4],
                                               f[5], f[6], f[7], g[p][0], g[p][1], g[p][2], g[p][3],
                                               g[p][4]),
                         RA_OK);
    }
    printf("%-7s %-10s %-5s %10s %10s %12s  %s\n", "regime", "tensor", "mode", "rel_rms", "max_rel",
           "1-cos", "against");
    for (int t = 0; t < 6; t++) {
        const double *ref = t == 0 ? z : g64[t - 1];
        const int64_t n = t == 0 ? c.n_out : bd_sizes(&c, t - 1);
        double e[3];
        for (int p = 0; p < 3; p++) {
            const float *y = t == 0 ? o[p] : g[p][t - 1];
            e[p] = bd_rel_rms(y, NULL, ref, n);
            printf("%-7s %-10s p%d    %10.3g %10.3g %12.3g  %s\n", regime, nm[t], p, e[p],
                   bd_max_rel(y, NULL, ref, n), 1 - cosine(y, ref, n),
                   t == 0 ? "double token-by-token" : "double phases (FD-checked)");
        }
        ck_assert_msg(e[0] <= 64 * 0x1p-24, "%s %s p0 %g", regime, nm[t], e[0]);
        ck_assert_msg(e[1] <= 8 * 0x1p-11, "%s %s p1 %g", regime, nm[t], e[1]);
        ck_assert_msg(e[2] <= 8 * 0x1p-8, "%s %s p2 %g", regime, nm[t], e[2]);
        ck_assert_msg(e[1] > 4 * e[0] && e[2] > 4 * e[1], "%s %s: modes not ordered", regime,
                      nm[t]);
    }
    fflush(stdout);
    for (int p = 0; p < 3; p++) {
        free(o[p]);
        for (int i = 0; i < 5; i++)
            free(g[p][i]);
    }
    for (int i = 0; i < 5; i++)
        free(g64[i]);
    free(z);
    bd_case_free(&c);
}

START_TEST(data_modes_sana)
{
    const bd_recipe r = {0.1, 0.0, 0.0, 0.02, 0.90, 0.99, 0.1, 3, 1};
    measure("sana", &r);
}
END_TEST

START_TEST(data_modes_strong)
{
    const bd_recipe r = {1.0, 0.0, 0.0, 1.0, 0.5, 1.0, 0.1, 4, 0};
    measure("strong", &r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bigdn-cpu-modes");
    tu_tcase(s, "data", NULL, NULL, data_modes_sana, data_modes_strong);
    return s;
}

int main(void) { return tu_run(suite()); }
