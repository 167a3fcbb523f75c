/* Kernel speed: time variants on one generated case, median and spread of N repetitions. */

/*
 * Each repetition runs the forward into a fresh result and then, when the
 * case asks for gradients, the backward into another (the ABI's backward
 * recomputes what it needs from the case, as a training step's backward
 * does); a variant with forward_backward then runs that one call into a
 * third.  Its time is the fwd+bwd row, and its tensors must be the
 * separate calls' bit for bit: the fused call may skip recomputing, never
 * change the arithmetic, and a row whose bits differ is failed.  The
 * median is the statistic: GPU and CPU timings have a long upper tail
 * (clock ramps, other processes), which the min and max columns show.
 * Times come from the variant when it sets ra_run.elapsed_ms, else from
 * the monotonic clock around the call.
 */

#include <config.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit.h"
#include "audit/bench.h"
#include "core/tensor.h"
#include "gpu/clock_probe.h"

void ra_bench_opts_init(ra_bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->reps = 10;
    o->warmup = 1;
}

void ra_bench_rows_init(ra_bench_rows *rows)
{
    memset(rows, 0, sizeof *rows);
}

void ra_bench_rows_clear(ra_bench_rows *rows)
{
    free(rows->v);
    ra_bench_rows_init(rows);
}

static ra_status row_new(ra_bench_row **out, ra_bench_rows *rows, const ra_variant *v,
                         const char *direction)
{
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? 2 * rows->cap : 16;
        ra_bench_row *nv = realloc(rows->v, cap * sizeof *nv);
        if (!nv)
            RA_ERROR("bench: out of memory for the rows", RA_ENOMEM);
        rows->v = nv, rows->cap = cap;
    }
    ra_bench_row *row = &rows->v[rows->n++];
    memset(row, 0, sizeof *row);
    snprintf(row->variant, sizeof row->variant, "%s", v->name);
    row->device = v->device == RA_CUDA ? "cuda" : "cpu";
    row->timer = "-";
    row->direction = direction;
    row->median_ms = row->min_ms = row->max_ms = row->flops = row->bytes = NAN;
    *out = row;
    return RA_OK;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts x[0..n) and fills the median, min and max of row. */
static void row_stats(ra_bench_row *row, double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    row->reps = n;
    row->min_ms = x[0];
    row->max_ms = x[n - 1];
    row->median_ms = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Bytes of the tensors of c whose role in op is `role` (by name). */
static double role_bytes(const ra_case *c, const ra_op *op, ra_role role)
{
    double sum = 0;
    for (size_t i = 0; i < c->tensors.n; i++) {
        const ra_tensor *t = c->tensors.items[i];
        const ra_op_tensor *ot = ra_op_tensor_find(op, t->name);
        if (ot && ot->role == role)
            sum += (double)t->nbytes;
    }
    return sum;
}

typedef struct bench_times {
    double *fwd, *bwd, *sum; /* reps each; sum: fwd + bwd, or the fused call's */
    int self_timed;          /* every call timed itself */
    ra_case res_f, res_b;    /* the last results: bytes written */
    ra_case res_fb;          /* the last fused result (forward_backward) */
} bench_times;

/* ra_variant_run_forward, _backward or _forward_backward. */
typedef ra_status run_fn(ra_case *result, const ra_variant *v, const ra_case *c, ra_run *run);

/* One call on c into a fresh result; its time in *ms, and bt->self_timed
   cleared unless the variant timed itself. */
static ra_status timed_call(double *ms, bench_times *bt, ra_case *result, run_fn *call,
                            const ra_variant *v, const ra_case *c, int threads)
{
    ra_case_clear(result);
    ra_case_init(result);
    ra_run run;
    memset(&run, 0, sizeof run);
    run.threads = threads;
    run.elapsed_ms = -1;
    const double t0 = now_ms();
    ra_status st = call(result, v, c, &run);
    const double wall = now_ms() - t0;
    bt->self_timed &= run.elapsed_ms >= 0;
    *ms = run.elapsed_ms >= 0 ? run.elapsed_ms : wall;
    return st;
}

/* Warm-up and repetitions of v on c (the fused call too when fused); the
   error of the first failing call. */
static ra_status measure(bench_times *bt, const ra_variant *v, const ra_case *c, int bwd, int fused,
                         const ra_bench_opts *o)
{
    bt->self_timed = 1;
    for (int i = 0; i < o->warmup + o->reps; i++) {
        double tf = 0, tb = 0, tfb = 0;
        RA_TRY(timed_call(&tf, bt, &bt->res_f, ra_variant_run_forward, v, c, o->threads));
        if (bwd)
            RA_TRY(timed_call(&tb, bt, &bt->res_b, ra_variant_run_backward, v, c, o->threads));
        if (fused)
            RA_TRY(timed_call(&tfb, bt, &bt->res_fb, ra_variant_run_forward_backward, v, c,
                              o->threads));
        if (i >= o->warmup) {
            const int r = i - o->warmup;
            bt->fwd[r] = tf, bt->bwd[r] = tb, bt->sum[r] = fused ? tfb : tf + tb;
        }
    }
    return RA_OK;
}

/* Marks row failed (counted in rows), its note "failed: " and the reason. */
static void row_fail(ra_bench_rows *rows, ra_bench_row *row, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void row_fail(ra_bench_rows *rows, ra_bench_row *row, const char *fmt, ...)
{
    row->failed = 1;
    rows->failed++;
    const int w = snprintf(row->note, sizeof row->note, "failed: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(row->note + w, sizeof row->note - (size_t)w, fmt, ap);
    va_end(ap);
}

static ra_status bench_variant(ra_bench_rows *rows, const ra_variant *v, const ra_case *c,
                               const ra_op *op, int bwd, const ra_bench_opts *o)
{
    ra_bench_row *row;
    char why[sizeof row->note - 16];
    if (!ra_variant_supports(v, c, bwd, why, sizeof why)) {
        RA_TRY(row_new(&row, rows, v, bwd ? "fwd+bwd" : "fwd"));
        snprintf(row->note, sizeof row->note, "skipped: %s", why);
        return RA_OK;
    }
    const int fused = bwd && v->forward_backward;
    bench_times bt;
    memset(&bt, 0, sizeof bt);
    ra_case_init(&bt.res_f);
    ra_case_init(&bt.res_b);
    ra_case_init(&bt.res_fb);
    double *buf = calloc(3 * (size_t)o->reps, sizeof *buf);
    if (!buf)
        RA_ERROR("bench: out of memory for the timings", RA_ENOMEM);
    bt.fwd = buf, bt.bwd = buf + o->reps, bt.sum = buf + 2 * o->reps;
    ra_status st = measure(&bt, v, c, bwd, fused, o);
    if (st != RA_OK) {
        const ra_status err = st;
        const char *reason = ra_last_error();
        st = row_new(&row, rows, v, bwd ? "fwd+bwd" : "fwd");
        if (st == RA_OK)
            row_fail(rows, row, "%s", reason && *reason ? reason : ra_strstatus(err));
    } else {
        const double in = role_bytes(c, op, RA_ROLE_INPUT);
        const double cot = role_bytes(c, op, RA_ROLE_COTANGENT);
        const double out = role_bytes(&bt.res_f, op, RA_ROLE_OUTPUT);
        const double grad = role_bytes(&bt.res_b, op, RA_ROLE_GRADIENT);
        const double ff = op->flops ? op->flops(c, 0) : NAN;
        const double fb = op->flops ? op->flops(c, 1) : NAN;
        const char *timer = !bt.self_timed        ? "wall"
                            : v->device == RA_CUDA ? "events"
                                                   : "variant";
        /* The fused call reads the inputs once, the two separate calls each. */
        struct {
            const char *dir;
            double *x, flops, bytes;
        } d[3] = {{"fwd", bt.fwd, ff, in + out},
                  {"bwd", bt.bwd, fb, in + cot + grad},
                  {"fwd+bwd", bt.sum, ff + fb, (fused ? 1 : 2) * in + out + cot + grad}};
        for (int k = 0; st == RA_OK && k < (bwd ? 3 : 1); k++) {
            st = row_new(&row, rows, v, d[k].dir);
            if (st == RA_OK) {
                row_stats(row, d[k].x, o->reps);
                row->timer = timer;
                row->flops = d[k].flops;
                row->bytes = d[k].bytes;
            }
        }
        if (st == RA_OK && fused) {
            /* row is the fwd+bwd one, the last added */
            char diff[sizeof row->note];
            if (ra_fused_differs(diff, sizeof diff, &bt.res_fb, &bt.res_f, &bt.res_b))
                row_fail(rows, row, "forward_backward differs from forward then backward: %s",
                         diff);
            else
                snprintf(row->note, sizeof row->note, "one call (forward_backward)");
        }
    }
    free(buf);
    ra_case_clear(&bt.res_f);
    ra_case_clear(&bt.res_b);
    ra_case_clear(&bt.res_fb);
    return st;
}

ra_status ra_bench_case(ra_bench_rows *rows, const ra_registry *r, const char *glob,
                        const ra_case_spec *id, const ra_bench_opts *o)
{
    if (o->reps < 1 || o->warmup < 0)
        RA_ERRORF(RA_EINVAL, "bench: %d repetitions and %d warm-up runs (need >= 1 and >= 0)",
                  o->reps, o->warmup);
    const ra_op *op;
    RA_TRY(ra_op_require(&op, id->op, "bench"));
    ra_case c;
    ra_case_init(&c);
    ra_status st = ra_case_spec_generate(&c, id);
    for (size_t i = 0; st == RA_OK && i < ra_registry_count(r); i++) {
        const ra_variant *v = ra_registry_at(r, i);
        if (strcmp(v->op, id->op) != 0 || !ra_glob_match(glob, v->name))
            continue;
        st = bench_variant(rows, v, &c, op, id->bwd, o);
        ra_progress_add(o->progress, 1);
    }
    ra_case_clear(&c);
    return st;
}

static void fmt_num(char *buf, size_t len, double x)
{
    if (isnan(x))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.4g", x);
}

ra_status ra_bench_table(ra_table **out, const ra_bench_rows *rows)
{
    static const char *const headers[] = {"variant", "device", "direction", "reps",
                                          "median_ms", "min_ms", "max_ms", "TFLOP/s",
                                          "GB/s", "timer", "note"};
    enum { NCOLS = sizeof headers / sizeof headers[0] };
    ra_table *t;
    RA_TRY(ra_table_new(&t, NCOLS, headers));
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < rows->n; i++) {
        const ra_bench_row *row = &rows->v[i];
        char reps[16], med[32], lo[32], hi[32], tf[32], gb[32];
        snprintf(reps, sizeof reps, "%d", row->reps);
        fmt_num(med, sizeof med, row->median_ms);
        fmt_num(lo, sizeof lo, row->min_ms);
        fmt_num(hi, sizeof hi, row->max_ms);
        fmt_num(tf, sizeof tf, row->flops / (row->median_ms * 1e9));
        fmt_num(gb, sizeof gb, row->bytes / (row->median_ms * 1e6));
        const char *cells[NCOLS] = {row->variant, row->device, row->direction, reps, med, lo,
                                    hi, tf, gb, row->timer, row->note[0] ? row->note : "-"};
        st = ra_table_add_row(t, cells);
    }
    if (st != RA_OK) {
        ra_table_free(t);
        return st;
    }
    *out = t;
    return RA_OK;
}

ra_status ra_bench_clock_table(ra_table **out, double ms, ra_progress *progress)
{
    static const char *const headers[] = {"load", "sm_mhz", "min_mhz", "max_mhz", "blocks",
                                          "ms", "timer_ms", "flop_per_sm_cycle"};
    enum { NCOLS = sizeof headers / sizeof headers[0] };
    ra_table *t;
    RA_TRY(ra_table_new(&t, NCOLS, headers));
    ra_status st = RA_OK;
    for (int l = 0; st == RA_OK && l < RA_GPU_LOADS; l++) {
        ra_gpu_clock c;
        st = ra_gpu_clock_probe((ra_gpu_load)l, ms, &c);
        if (st != RA_OK)
            break;
        char v[NCOLS - 1][32];
        snprintf(v[0], sizeof v[0], "%.0f", c.mhz);
        snprintf(v[1], sizeof v[1], "%.0f", c.mhz_min);
        snprintf(v[2], sizeof v[2], "%.0f", c.mhz_max);
        snprintf(v[3], sizeof v[3], "%d", c.blocks);
        fmt_num(v[4], sizeof v[4], c.ms);
        fmt_num(v[5], sizeof v[5], c.timer_ms);
        fmt_num(v[6], sizeof v[6], c.flop_per_sm_cycle);
        const char *cells[NCOLS] = {ra_gpu_load_name((ra_gpu_load)l), v[0], v[1], v[2], v[3],
                                    v[4], v[5], v[6]};
        st = ra_table_add_row(t, cells);
        ra_progress_add(progress, 1);
    }
    if (st != RA_OK) {
        ra_table_free(t);
        return st;
    }
    *out = t;
    return RA_OK;
}
