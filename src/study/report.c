/* Study reports: the markdown writer with its stamp, and the driver that runs one study. */

/*
 * A report is assembled while the study runs (body text in a memory
 * stream, the headline whenever the study knows it) and written at the
 * end, headline first, so a reader of reports/ sees the finding before the
 * method.  The stamp says what produced the numbers: the commit
 * ($RECAUDIT_COMMIT, which `make reports` sets from git, else `git
 * describe` in the working directory, else "unknown"), the recaudit
 * version, the date (UTC), the machine (uname, CPU model from
 * /proc/cpuinfo, online cores, threads), the GPU/driver/CUDA text when the
 * study used one, MPFR/GMP/GSL as they ran (run-time versions), the
 * seeds, how many references came from the cache and how many were
 * computed, and the wall time of the study.
 */

#include <config.h>

#include "study/study.h"

#include <errno.h>
#include <gmp.h>
#include <gsl/gsl_version.h>
#include <mpfr.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "gpu/device.h"

#define MAX_SEEDS 64

struct ra_study_report {
    const ra_study *study;
    char *headline;
    char *body;
    size_t body_len;
    FILE *bodyf;
    unsigned long long seeds[MAX_SEEDS];
    size_t nseeds;
    int gpu;
    ra_points *points;
    ra_plot plot;
    int has_plot;
};

void ra_study_ctx_init(ra_study_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->out_dir = "reports";
    ra_ref_opts_init(&ctx->ref);
    ctx->ref.progress = 0;
}

double ra_study_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ra_status ra_report_headline(ra_study_report *r, const char *fmt, ...)
{
    va_list ap, aq;
    va_start(ap, fmt);
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, aq);
    va_end(aq);
    if (!s)
        RA_ERROR("report: out of memory", RA_ENOMEM);
    free(r->headline);
    r->headline = s;
    return RA_OK;
}

ra_status ra_report_printf(ra_study_report *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(r->bodyf, fmt, ap);
    va_end(ap);
    if (n < 0)
        RA_ERROR("report: cannot append to the body", RA_EIO);
    return RA_OK;
}

ra_status ra_report_table(ra_study_report *r, const ra_points *p, const char *const *cols,
                          int (*keep)(const ra_points *p, size_t row, void *arg), void *arg)
{
    RA_TRY(ra_points_write_markdown(p, r->bodyf, cols, keep, arg));
    fputc('\n', r->bodyf);
    return RA_OK;
}

void ra_report_seed(ra_study_report *r, unsigned long long seed)
{
    for (size_t i = 0; i < r->nseeds; i++)
        if (r->seeds[i] == seed)
            return;
    if (r->nseeds < MAX_SEEDS)
        r->seeds[r->nseeds++] = seed;
}

void ra_report_used_gpu(ra_study_report *r) { r->gpu = 1; }

void ra_report_set_points(ra_study_report *r, ra_points *p, const ra_plot *plot)
{
    if (r->points != p)
        ra_points_free(r->points);
    r->points = p;
    r->has_plot = plot != NULL;
    if (plot)
        r->plot = *plot;
}

/* --- the stamp ------------------------------------------------------------------------- */

static void commit_text(char *buf, size_t len)
{
    const char *env = getenv("RECAUDIT_COMMIT");
    if (env && env[0]) {
        snprintf(buf, len, "%s", env);
        return;
    }
    snprintf(buf, len, "unknown");
    FILE *f = popen("git describe --always --dirty --abbrev=7 2>/dev/null", "r");
    if (!f)
        return;
    char line[128];
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0])
            snprintf(buf, len, "%s", line);
    }
    pclose(f);
}

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ' || *c == '\t')
                    c++;
                c[strcspn(c, "\n")] = '\0';
                snprintf(buf, len, "%s", c);
            }
            break;
        }
    fclose(f);
}

static int threads_used(const ra_study_ctx *ctx)
{
    if (ctx->threads > 0)
        return ctx->threads;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static void write_stamp(FILE *f, const ra_study_report *r, const ra_study_ctx *ctx, double wall_s)
{
    char commit[160], cpu[256], gpu[512];
    commit_text(commit, sizeof commit);
    cpu_model(cpu, sizeof cpu);
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(u.sysname, sizeof u.sysname, "unknown"), u.release[0] = u.machine[0] = '\0';
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(f, "## Where and how\n\n");
    fprintf(f, "- Command: `%s`; wall time %.1f s.\n", ctx->command ? ctx->command : r->study->name,
            wall_s);
    fprintf(f, "- Commit %s (recaudit %s), %s.\n", commit, PACKAGE_VERSION, date);
    fprintf(f, "- Machine: %s %s %s, %s, %ld cores online, %d threads.\n", u.sysname, u.release,
            u.machine, cpu, sysconf(_SC_NPROCESSORS_ONLN), threads_used(ctx));
    if (r->gpu) {
        if (ra_gpu_describe(gpu, sizeof gpu))
            fprintf(f, "- GPU: CUDA %s.\n", gpu);
        else
            fprintf(f, "- GPU: asked for, but CUDA is not built in.\n");
    } else {
        fprintf(f, "- GPU: not used (CPU variants; CUDA rows, where a study has them, are "
                   "measured on the GPU host).\n");
    }
    fprintf(f,
            "- MPFR %s, GMP %s, GSL %s; references certified to >= %d bits (working "
            "precision %ld, cap %ld).\n",
            mpfr_get_version(), gmp_version, gsl_version, ctx->ref.min_bits, (long)ctx->ref.prec,
            (long)ctx->ref.prec_cap);
    fprintf(f, "- References: %zu from the cache, %zu computed.\n", ctx->ref_hits,
            ctx->ref_computed);
    fprintf(f, "- Seeds:");
    for (size_t i = 0; i < r->nseeds; i++)
        fprintf(f, "%s %llu", i ? "," : "", r->seeds[i]);
    fprintf(f, "%s\n", r->nseeds ? "." : " none.");
    if (ctx->quick)
        fprintf(f, "- Quick grid (`--quick`): a small version for tests, not the study's "
                   "figures.\n");
    fputc('\n', f);
}

/* --- the driver ------------------------------------------------------------------------ */

static ra_status make_dir(const char *dir)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) {
        struct stat s;
        if (stat(dir, &s) == 0 && S_ISDIR(s.st_mode))
            return RA_OK;
        RA_ERRORF(RA_EIO, "study: '%s' is not a directory", dir);
    }
    RA_ERRORF(RA_EIO, "study: cannot create directory '%s': %s", dir, strerror(errno));
}

static void report_free(ra_study_report *r)
{
    if (r->bodyf)
        fclose(r->bodyf);
    free(r->body);
    free(r->headline);
    ra_points_free(r->points);
}

static ra_status write_report(ra_study_report *r, ra_study_ctx *ctx, double wall_s)
{
    const char *name = r->study->name, *dir = ctx->out_dir;
    size_t n = strlen(dir) + strlen(name) + 8;
    char *md = malloc(n), *csv = malloc(n), *svg = malloc(n);
    ra_status st = RA_OK;
    if (!md || !csv || !svg) {
        RA_REPORTF(RA_ENOMEM, "study: out of memory");
        st = RA_ENOMEM;
        goto out;
    }
    snprintf(md, n, "%s/%s.md", dir, name);
    snprintf(csv, n, "%s/%s.csv", dir, name);
    snprintf(svg, n, "%s/%s.svg", dir, name);
    int made = 0;
    char why[512] = "";
    if (r->points) {
        st = ra_points_write_csv(r->points, csv);
        if (st == RA_OK && r->has_plot) {
            unlink(svg); /* a stale plot never stands beside new numbers */
            st = ra_points_plot(&made, why, sizeof why, r->points, &r->plot, svg, ctx->gnuplot);
        }
    }
    if (st != RA_OK)
        goto out;
    FILE *f = fopen(md, "w");
    if (!f) {
        RA_REPORTF(RA_EIO, "study: cannot write '%s': %s", md, strerror(errno));
        st = RA_EIO;
        goto out;
    }
    fprintf(f, "# %s\n\n", r->study->title);
    fprintf(f, "**Headline.** %s\n\n", r->headline ? r->headline : "(the study set none)");
    if (r->points) {
        if (made)
            fprintf(f, "![%s](%s.svg)\n\n", r->plot.title ? r->plot.title : name, name);
        else if (r->has_plot)
            fprintf(f, "_Plot skipped: %s. The CSV and the tables below still stand._\n\n", why);
        fprintf(f, "Every point: [%s.csv](%s.csv).\n\n", name, name);
    }
    write_stamp(f, r, ctx, wall_s);
    fwrite(r->body, 1, r->body_len, f);
    if (ferror(f) | (fclose(f) != 0)) {
        RA_REPORTF(RA_EIO, "study: cannot write '%s'", md);
        st = RA_EIO;
    }
    if (ctx->verbose)
        fprintf(stderr, "study %s: wrote %s%s%s (%.1f s)%s%s\n", name, md, r->points ? ", " : "",
                r->points ? csv : "", wall_s, made ? ", " : "", made ? svg : "");
    if (!made && r->has_plot && st == RA_OK)
        fprintf(stderr, "study %s: plot skipped: %s\n", name, why);
out:
    free(md);
    free(csv);
    free(svg);
    return st;
}

ra_status ra_study_execute(ra_study_ctx *ctx, const ra_study *s)
{
    ra_study_report r;
    memset(&r, 0, sizeof r);
    r.study = s;
    RA_TRY(make_dir(ctx->out_dir));
    if (!(r.bodyf = open_memstream(&r.body, &r.body_len)))
        RA_ERROR("study: out of memory", RA_ENOMEM);
    ctx->ref_hits = ctx->ref_computed = 0;
    double t0 = ra_study_now();
    ra_status st = s->run(ctx, &r);
    double wall = ra_study_now() - t0;
    if (st == RA_OK) {
        if (fflush(r.bodyf) != 0) {
            RA_REPORTF(RA_ENOMEM, "study: out of memory");
            st = RA_ENOMEM;
        }
    }
    if (st == RA_OK)
        st = write_report(&r, ctx, wall);
    report_free(&r);
    return st;
}
