/* Benchmark: the chunk kernels' product engines on the production head's gradient products. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "gpu/device.h"
#include "gpu/mm_engines.h"

/*
 * Times every engine of mm_engines.h on the six (shape, layout) forms of
 * the gradients kernel's products at a full chunk (L = 64, K = V = 128),
 * one product a block over --nprod blocks (default 4096: the chunks of
 * B=1, T=8192, Hv=32), operands from --nsets sets that stay in L2.  Each
 * launch is timed by CUDA events after a warm-up, --runs times; the table
 * gives the median and the minimum, the rate 2 m n kc nprod / median (one
 * multiply-add counts two, for every engine: 3xtf32 runs three tensor-core
 * products per term) and the median over ffma's, the IEEE engine the
 * 3xtf32 kernels must beat.  Exits 77 without a GPU.
 */

static const char usage[] = "usage: mm-engines [--nprod N] [--nsets N] [--runs N]\n"
                            "  times the product engines (mm_engines.h) on the gradient\n"
                            "  products of the production head; exits 77 without a GPU\n";

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int parse_count(const char *opt, const char *arg, int *out)
{
    char *end = NULL;
    const long v = arg ? strtol(arg, &end, 10) : 0;
    if (!arg || *end || v < 1 || v > 1 << 20) {
        fprintf(stderr, "mm-engines: %s needs a count from 1 to %d\n", opt, 1 << 20);
        return 0;
    }
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int nprod = 4096, nsets = 64, runs = 20;
    for (int i = 1; i < argc; i++) {
        const char *arg = i + 1 < argc ? argv[i + 1] : NULL;
        int ok;
        if (!strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--nprod"))
            ok = parse_count(argv[i], arg, &nprod), i++;
        else if (!strcmp(argv[i], "--nsets"))
            ok = parse_count(argv[i], arg, &nsets), i++;
        else if (!strcmp(argv[i], "--runs"))
            ok = parse_count(argv[i], arg, &runs), i++;
        else {
            fprintf(stderr, "mm-engines: unknown argument '%s'\n%s", argv[i], usage);
            return 2;
        }
        if (!ok)
            return 2;
    }
    if (ra_gpu_count() == 0) {
        printf("mm-engines: no CUDA device: skipped\n");
        return 77;
    }
    char dev[512];
    ra_gpu_describe(dev, sizeof dev);

    static const struct {
        const char *name;
        int n, kc, ak, bk;
    } forms[] = {
        {"dP dT", 64, 128, 1, 1},    {"dq tK", 128, 64, 1, 0}, {"dQc dKc dW", 128, 128, 1, 1},
        {"dk dX dY", 128, 64, 0, 0}, {"Z", 64, 64, 1, 1},      {"dA", 64, 64, 0, 0},
    };
    const size_t nop = (size_t)nsets * RA_GPU_MM_SET;
    float *a = malloc(nop * sizeof *a), *b = malloc(nop * sizeof *b);
    double *ms = malloc((size_t)runs * sizeof *ms);
    if (!a || !b || !ms) {
        fprintf(stderr, "mm-engines: out of memory\n");
        return 1;
    }
    uint64_t st = 20261205;
    for (size_t i = 0; i < nop; i++) {
        a[i] = (float)((int64_t)(ra_rng_splitmix64(&st) >> 40) - (1 << 23)) / (1 << 23);
        b[i] = (float)((int64_t)(ra_rng_splitmix64(&st) >> 40) - (1 << 23)) / (1 << 23);
    }
    printf("# %s\n# %d products a launch, %d operand sets, %d timed runs\n", dev, nprod, nsets,
           runs);
    printf("%-12s %4s %4s %4s %-9s %10s %10s %8s %8s\n", "form", "m", "n", "kc", "engine",
           "median_ms", "min_ms", "TFLOP/s", "/ffma");
    int status = 0;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        const ra_gpu_mm_shape s = {64, forms[f].n, forms[f].kc, forms[f].ak, forms[f].bk, 0};
        double med[RA_GPU_MM_NENGINES], lo[RA_GPU_MM_NENGINES];
        for (int e = 0; e < RA_GPU_MM_NENGINES; e++) {
            med[e] = lo[e] = 0.0;
            if (ra_gpu_mm_engine_time(e, &s, a, b, nsets, nprod, runs, ms) != RA_OK) {
                status = 1;
                continue;
            }
            qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
            med[e] = ms[runs / 2], lo[e] = ms[0];
        }
        const double flop = 2.0 * s.m * s.n * s.kc * nprod, ffma = med[RA_GPU_MM_FFMA];
        for (int e = 0; e < RA_GPU_MM_NENGINES; e++) {
            if (med[e] <= 0.0)
                continue;
            printf("%-12s %4d %4d %4d %-9s %10.4f %10.4f %8.2f", forms[f].name, s.m, s.n, s.kc,
                   ra_gpu_mm_engine_name(e), med[e], lo[e], flop / (med[e] * 1e9));
            if (ffma > 0.0)
                printf(" %8.3f", med[e] / ffma);
            printf("\n");
        }
    }
    free(a);
    free(b);
    free(ms);
    return status;
}
