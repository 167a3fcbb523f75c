/* The length study: error of every gdn variant against the sequence length T, with the fitted
 * growth exponent. */

/*
 * Independent roundings of a sum of n terms grow like sqrt(n) u (random
 * walk), systematic ones (the same bias every step) like n u.  A gdn
 * kernel's error at token t collects the roundings of every step that the
 * decay has not yet forgotten, so: with the default decay (g =
 * logsigmoid(N(0,1)), memory of a few tokens) the error should not grow
 * with T at all; with near-unit decay (g about -1e-3, memory ~1000 tokens)
 * it may grow until T passes the memory.  The study measures o (rel_rms
 * and max_rel against the certified reference, through the cache) at
 * T = 256 ... 65536 (x4 steps) for every registered gdn variant, CPU and
 * CUDA (CUDA rows only where a device answers), in both regimes, and fits
 * log rel_rms = a + p log T (gsl_fit_linear): p near 0 is flat, 1/2 a
 * random walk, 1 linear growth.  Shape B=1, Hk=1, Hv=2, K=V=32: the MPFR
 * reference costs O(T K V) and dominates the study's time; the CPU
 * variants take milliseconds, so the CPU rows get the full range too.
 */

#include "study/prec.h"
#include "study/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int lengths[] = {256, 1024, 4096, 16384, 65536, 0}, lengths_q[] = {64, 128, 256, 0};
static const char *const regimes[] = {"default", "near-unit", NULL};

#define MAX_VAR 64
#define MAX_T 8

typedef struct series {
    const ra_variant *v;
    double T[MAX_T], rel[MAX_T];
    size_t n;
} series;

static int keep_o(const ra_points *p, size_t row, void *arg)
{
    (void)arg;
    const char *t = ra_points_text(p, row, ra_points_col(p, "tensor"));
    return t && strcmp(t, "o") == 0;
}

static const char *growth_name(double p)
{
    const double d0 = fabs(p), d1 = fabs(p - 0.5), d2 = fabs(p - 1);
    return d0 <= d1 && d0 <= d2 ? "flat (T^0)" : d1 <= d2 ? "T^1/2" : "T^1";
}

static const char length_notes[] =
    "\n## Reading the fits\n\n"
    "- With the default decay the memory is a few tokens: each output sees the roundings of "
    "a bounded window, so the error cannot grow with T (p near 0); the fit then only measures "
    "sampling noise.\n"
    "- With near-unit decay (memory about 1/|g| = 1000 tokens) the state carries the roundings "
    "of about 1000 steps, but also the signal of those steps: rel_rms measures the error against "
    "the size of o, and both grow with the memory alike, so the relative error moves little with "
    "T once T passes a few chunks (a fit near 0 here means no growth beyond the first T, not "
    "that accumulation is absent).  A random walk in the relative error would show p = 1/2.\n"
    "- The sequential f32 row (the usual naive reference) rounds the state every step; the "
    "chunked rows carry it across chunks in fp32 as well, with T/C state updates instead of "
    "T.\n\n";

ra_status ra_study_length(ra_study_ctx *ctx, ra_study_report *rep)
{
    static const char *const cols[] = {"regime",  "variant",   "device",       "class",
                                       "T",       "tensor",    "max_rel",      "rel_rms",
                                       "max_abs", "nonfinite", "plot_rel_rms", NULL};
    ra_points *p;
    RA_TRY(ra_points_new(&p, cols));
    const unsigned long long seed = 65536;
    ra_report_seed(rep, seed);
    const int *Ts = ctx->quick ? lengths_q : lengths;
    /* CPU rows stop at cpu_limit (the reference of T = 65536 costs about
       as much as all shorter ones together, four times over); CUDA rows,
       when a device answers, take the whole range. */
    const int cpu_limit = ctx->quick ? 256 : 16384;
    size_t ncuda = 0;
    ra_status st = RA_OK;
    series ser[2][MAX_VAR];
    size_t nser = 0;
    memset(ser, 0, sizeof ser);
    char skipped[1024] = "";
    for (size_t i = 0; i < ra_registry_count(ctx->registry) && nser < MAX_VAR; i++) {
        const ra_variant *v = ra_registry_at(ctx->registry, i);
        char why[256];
        if (strcmp(v->op, "gdn") != 0)
            continue;
        if (!ra_study_device_ok(v, why, sizeof why)) {
            size_t l = strlen(skipped);
            snprintf(skipped + l, sizeof skipped - l, "%s%s", l ? ", " : "", v->name);
            continue;
        }
        ser[0][nser].v = ser[1][nser].v = v;
        ncuda += v->device == RA_CUDA;
        nser++;
    }
    int Tlast = Ts[0];
    for (const int *T = Ts; *T; T++)
        if (*T <= cpu_limit || ncuda)
            Tlast = *T;
    for (int r = 0; st == RA_OK && regimes[r]; r++)
        for (const int *T = Ts; st == RA_OK && *T; T++) {
            if (*T > cpu_limit && !ncuda)
                break; /* only CUDA rows go past the CPU limit */
            char shape[96];
            snprintf(shape, sizeof shape, "B=1,T=%d,Hk=1,Hv=2,K=%d,V=%d", *T, ctx->quick ? 16 : 32,
                     ctx->quick ? 16 : 32);
            ra_study_case sc;
            if ((st = ra_study_case_make(&sc, ctx, "gdn", shape, regimes[r], "f32", seed, NULL,
                                         NULL, 0)) != RA_OK)
                break;
            for (size_t s = 0; st == RA_OK && s < nser; s++) {
                const ra_variant *v = ser[r][s].v;
                if (v->device != RA_CUDA && *T > cpu_limit)
                    continue;
                if (v->device == RA_CUDA)
                    ra_report_used_gpu(rep);
                ra_case res;
                ra_case_init(&res);
                st = ra_study_run(&res, ctx, v, &sc);
                if (st == RA_EUNSUPPORTED) { /* the variant refuses this case: no point */
                    st = RA_OK;
                    ra_case_clear(&res);
                    continue;
                }
                static const char *const outs[] = {"o", "ht"};
                for (int o = 0; st == RA_OK && o < 2; o++) {
                    ra_metrics m;
                    if ((st = ra_study_measure(&m, &res, &sc, outs[o])) != RA_OK ||
                        (st = ra_points_row(p)) != RA_OK ||
                        (st = ra_points_set_text(p, "regime", regimes[r])) != RA_OK ||
                        (st = ra_points_set_text(p, "variant", v->name)) != RA_OK ||
                        (st = ra_points_set_text(p, "device",
                                                 v->device == RA_CUDA ? "cuda" : "cpu")) != RA_OK ||
                        (st = ra_points_set_text(p, "class", v->pclass)) != RA_OK ||
                        (st = ra_points_set_num(p, "T", *T)) != RA_OK ||
                        (st = ra_points_set_text(p, "tensor", outs[o])) != RA_OK ||
                        (st = ra_study_put_metrics(p, &m)) != RA_OK)
                        break;
                    if (o == 0) {
                        st = ra_points_set_num(p, "plot_rel_rms", m.rel_rms);
                        series *se = &ser[r][s];
                        if (se->n < MAX_T)
                            se->T[se->n] = *T, se->rel[se->n++] = m.rel_rms;
                    }
                }
                ra_case_clear(&res);
            }
            ra_study_case_clear(&sc);
            if (ctx->verbose)
                fprintf(stderr, "length: %s T=%d done\n", regimes[r], *T);
        }
    /* Fits and the text. */
    double slope_max[2] = {-INFINITY, -INFINITY}, slope_min[2] = {INFINITY, INFINITY};
    char smax_var[2][96] = {"", ""};
    if (st == RA_OK)
        st = ra_report_printf(
            rep,
            "## Fitted growth exponents\n\nlog rel_rms(o) = a + p log T over T = %d ... %d "
            "(CPU rows up to %d; gsl_fit_linear); p near 0: flat, 1/2: random-walk accumulation, "
            "1: linear.\n\n"
            "| regime | variant | class | p | se(p) | r^2 | rel_rms at T=%d | at the last T | "
            "growth |\n|---|---|---|---|---|---|---|---|---|\n",
            Ts[0], Tlast, cpu_limit < Tlast ? cpu_limit : Tlast, Ts[0]);
    for (int r = 0; st == RA_OK && regimes[r]; r++)
        for (size_t s = 0; st == RA_OK && s < nser; s++) {
            const series *se = &ser[r][s];
            double lx[MAX_T], ly[MAX_T];
            size_t n = 0;
            for (size_t i = 0; i < se->n; i++)
                if (se->rel[i] > 0 && isfinite(se->rel[i]))
                    lx[n] = log(se->T[i]), ly[n++] = log(se->rel[i]);
            ra_fit f;
            if (n < 2 || ra_fit_linear(&f, lx, ly, n) != RA_OK) {
                st = ra_report_printf(rep,
                                      "| %s | %s | %s | - | - | - | - | - | no fit (%zu "
                                      "finite points) |\n",
                                      regimes[r], se->v->name, se->v->pclass, n);
                continue;
            }
            if (f.slope > slope_max[r])
                slope_max[r] = f.slope,
                snprintf(smax_var[r], sizeof smax_var[r], "%s", se->v->name);
            slope_min[r] = fmin(slope_min[r], f.slope);
            st = ra_report_printf(
                rep, "| %s | %s | %s | %.3f | %.3f | %.3f | %.3g | %.3g (T=%g) | %s |\n",
                regimes[r], se->v->name, se->v->pclass, f.slope, f.slope_se, f.r2, se->rel[0],
                se->rel[se->n - 1], se->T[se->n - 1], growth_name(f.slope));
        }
    if (st == RA_OK && skipped[0])
        st = ra_report_printf(rep, "\nLeft out (no CUDA device on this machine): %s.\n", skipped);
    if (st == RA_OK)
        st = ra_report_headline(
            rep,
            "Error growth with T is %s: the fitted exponents of rel_rms(o) against T = %d ... %d "
            "lie in [%.2f, %.2f] with the default decay and in [%.2f, %.2f] with near-unit decay "
            "(largest: %s, %.2f)%s.",
            fmax(slope_max[0], slope_max[1]) < 0.25   ? "flat for every variant"
            : fmax(slope_max[0], slope_max[1]) < 0.75 ? "at most random-walk (T^1/2)"
                                                      : "linear for some rows",
            Ts[0], Tlast, slope_min[0], slope_max[0], slope_min[1], slope_max[1], smax_var[1],
            slope_max[1],
            fmax(slope_max[0], slope_max[1]) < 0.75 ? ", none close to linear growth" : "");
    if (st == RA_OK)
        st = ra_report_printf(rep, "%s", length_notes);
    static const char *const tcols[] = {"regime",  "variant",   "T", "rel_rms",
                                        "max_rel", "nonfinite", NULL};
    if (st == RA_OK && (st = ra_report_printf(rep, "\n## Every point (o)\n\n")) == RA_OK)
        st = ra_report_table(rep, p, tcols, keep_o, NULL);
    if (st != RA_OK) {
        ra_points_free(p);
        return st;
    }
    static const ra_plot plot = {.title = "error of o against the sequence length",
                                 .x = "T",
                                 .xlabel = "T (tokens)",
                                 .y = {"plot_rel_rms", NULL},
                                 .ylabel = "rel_rms of o",
                                 .series = "variant",
                                 .panel = "regime",
                                 .logx = 1,
                                 .logy = 1};
    ra_report_set_points(rep, p, &plot);
    return RA_OK;
}
