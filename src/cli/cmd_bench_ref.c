/* `recaudit bench-ref`: MPFR reference speed against bare MPFR loops, and wall time. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpfr.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"
#include "core/table.h"
#include "core/op.h"
#include "ref/refop.h"
#include "ref/ref.h"

/*
 * Per-core rates: one unit of work of the shape (the op's unit_shape; gdn:
 * one head, B = Hk = Hv = 1, the given T, K, V), the default regime, run
 * single-threaded, forward alone and forward + backward; the backward's
 * time is the difference.  Operations are MPFR arithmetic calls counted by
 * formula (the reference's op_count).  Baselines: a 128 x 128 array (a
 * production head's state) swept row by row with the accumulation pattern
 * of the references, x_j <- x_j + S_ij k_i: one mpfr_fma per element, and
 * mpfr_mul + mpfr_add per element (the two calls the references use per
 * multiply-add).  ratio = ns per reference operation / ns per baseline
 * call.  Then the wall time of a certified forward + backward
 * (ra_ref_compute, cache off) for the whole shape.
 */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct bench_args {
    ra_case_spec spec; /* the case (f32, default regime) */
    mpfr_prec_t prec;
    int threads;
} bench_args;

#define BASE_K 128
#define BASE_V 128

static void print_help(FILE *f)
{
    const ra_op *op = ra_ops()[0];
    fprintf(f, "usage: recaudit bench-ref [--op OP] [--shape S] [--prec N] [--threads N] "
               "[--seed N]\n"
               "\n"
               "Measures an operation's MPFR reference: MPFR operations per second per core\n"
               "for the forward and the backward (one unit of work, e.g. one head, one\n"
               "thread; operations counted by formula) against bare mpfr_fma and\n"
               "mpfr_mul+mpfr_add loops at the same precision over a 128 x 128 array, and\n"
               "the wall time of a certified forward + backward (p and the 2p check) of\n"
               "the whole shape.\n"
               "\n"
               "options:\n");
    fprintf(f, "  --op OP        operation (default %s, the first of 'recaudit list ops')\n",
            op->name);
    fprintf(f, "  --shape S      shape (default for %s: %s)\n", op->name, op->bench_shape);
    fprintf(f, 
               "  --prec N       working precision (default 128)\n"
               "  --threads N    threads of the certified run (default: all)\n"
               "  --seed N       case seed (default 0)\n"
               "  -h, --help     this help\n");
}

enum { OPT_PREC = RA_CLI_OWN };

static const struct option bench_options[] = {
    RA_CLI_OPTION_OP,      RA_CLI_OPTION_SHAPE, {"prec", required_argument, NULL, OPT_PREC},
    RA_CLI_OPTION_THREADS, RA_CLI_OPTION_SEED,
    RA_CLI_OPTIONS_END,
};

static int bench_option(void *ctx, const ra_cli_args *cli, int code, const char *value)
{
    (void)cli, (void)code; /* OPT_PREC is bench-ref's only option */
    long v;
    if (ra_cli_parse_int(&v, "bench-ref", "--prec", value, 53, 1L << 20))
        return 2;
    ((bench_args *)ctx)->prec = v;
    return 0;
}

static const ra_cli_syntax bench_syntax = {.cmd = "bench-ref",
                                           .shortopts = ":h",
                                           .longopts = bench_options,
                                           .help = print_help,
                                           .own = bench_option};

/* Parses argv into a; returns RA_CLI_GO, or the exit status. */
static int parse_args(bench_args *a, int argc, char **argv)
{
    ra_cli_args cli;
    a->prec = 128;
    int rc = ra_cli_parse(&cli, &bench_syntax, argc, argv, a);
    if (rc != RA_CLI_GO)
        return rc;
    if (!cli.op)
        cli.op = ra_ops()[0]->name;
    const ra_op *op = ra_op_find(cli.op);
    if (op && !cli.shape)
        cli.shape = op->bench_shape;
    a->threads = (int)cli.threads;
    rc = ra_cli_no_more(&cli) ? 2 : ra_cli_case_spec(&a->spec, &cli);
    ra_cli_args_clear(&cli);
    return rc ? rc : RA_CLI_GO;
}

/* The case of the benchmark with shape text. */
static ra_status gen_case(ra_case *c, const char *shape, const bench_args *a)
{
    ra_case_spec spec = a->spec;
    snprintf(spec.shape, sizeof spec.shape, "%s", shape);
    return ra_case_spec_generate(c, &spec);
}

/* Seconds of one single-threaded reference run of c at prec (with
   gradients or not), and its operation counts. */
static ra_status time_run(double *secs, double *fwd, double *bwd, const ra_ref_op *ref,
                          const ra_case *c, int grads, mpfr_prec_t prec)
{
    void *state;
    ra_ref_outs layout, outs;
    RA_TRY(ref->prepare(&state, &layout, c, grads, "bench case"));
    ref->op_count(state, fwd, bwd);
    memset(&outs, 0, sizeof outs);
    double t0 = now();
    ra_status st = ref->run(&outs, &prec, 1, state, 1, NULL);
    *secs = now() - t0;
    ra_ref_outs_clear(&outs);
    ref->release(state);
    return st;
}

/* ns per call of a bare loop over a K x V array: fma (muladd == 0) or
   mul + add (muladd == 1, ns per call, i.e. per pair / 2). */
static ra_status bare_loop(double *ns, int64_t K, int64_t V, mpfr_prec_t p, double calls,
                           int muladd)
{
    ra_mparr S, k, x, t;
    memset(&S, 0, sizeof S), memset(&k, 0, sizeof k), memset(&x, 0, sizeof x);
    memset(&t, 0, sizeof t);
    ra_status st = ra_mparr_init(&S, (size_t)(K * V), p);
    if (st == RA_OK)
        st = ra_mparr_init(&k, (size_t)K, p);
    if (st == RA_OK)
        st = ra_mparr_init(&x, (size_t)V, p);
    if (st == RA_OK)
        st = ra_mparr_init(&t, 1, p);
    if (st == RA_OK) {
        /* deterministic operands of mixed signs, magnitudes near 1 and all p
           bits significant (divisions by 7 and by i + 3 never terminate in
           binary), like a state and its vectors */
        for (int64_t i = 0; i < K * V; i++) {
            mpfr_set_si(S.x + i, (long)((i * 7919) % 2001) - 1000, MPFR_RNDN);
            mpfr_div_ui(S.x + i, S.x + i, 7 * 997, MPFR_RNDN);
        }
        for (int64_t i = 0; i < K; i++) {
            mpfr_set_ui(k.x + i, 1, MPFR_RNDN);
            mpfr_div_ui(k.x + i, k.x + i, (unsigned long)(3 * i + 7), MPFR_RNDN);
        }
        const int64_t sweeps = (int64_t)(calls / (double)((muladd ? 2 : 1) * K * V)) + 1;
        double t0 = now();
        for (int64_t r = 0; r < sweeps; r++) {
            ra_mp_zero(x.x, (size_t)V);
            for (int64_t i = 0; i < K; i++)
                for (int64_t j = 0; j < V; j++)
                    if (muladd) {
                        mpfr_mul(t.x, S.x + i * V + j, k.x + i, MPFR_RNDN);
                        mpfr_add(x.x + j, x.x + j, t.x, MPFR_RNDN);
                    } else
                        mpfr_fma(x.x + j, S.x + i * V + j, k.x + i, x.x + j, MPFR_RNDN);
        }
        *ns = (now() - t0) / ((double)sweeps * (double)(K * V) * (muladd ? 2 : 1)) * 1e9;
    }
    ra_mparr_free(&S), ra_mparr_free(&k), ra_mparr_free(&x), ra_mparr_free(&t);
    return st;
}

static ra_status add_row(ra_table *t, const char *what, double ops, double secs, double base_fma,
                         double base_ma)
{
    char o[32], s[32], ns[32], rate[32], r1[32], r2[32];
    double per = secs / ops * 1e9;
    snprintf(o, sizeof o, "%.4g", ops);
    snprintf(s, sizeof s, "%.3f", secs);
    snprintf(ns, sizeof ns, "%.1f", per);
    snprintf(rate, sizeof rate, "%.2f", ops / secs / 1e6);
    snprintf(r1, sizeof r1, "%.2f", base_fma > 0 ? per / base_fma : 1.0);
    snprintf(r2, sizeof r2, "%.2f", base_ma > 0 ? per / base_ma : 1.0);
    const char *cells[] = {what, o, s, ns, rate, r1, r2};
    return ra_table_add_row(t, cells);
}

static ra_status bench(const bench_args *a)
{
    const ra_op *op = ra_op_find(a->spec.op);
    if (!op || !op->ref || !op->ref->op_count)
        RA_ERRORF(RA_EUNSUPPORTED, "bench-ref: op %s has no reference operation count",
                  a->spec.op);
    char one[RA_SPEC_SHAPE_MAX];
    RA_TRY(op->unit_shape(one, sizeof one, a->spec.shape));
    ra_case c1;
    ra_case_init(&c1);
    RA_TRY(gen_case(&c1, one, a));
    double fwd_ops, bwd_ops, tf = 0, tfb = 0;
    ra_status st = time_run(&tf, &fwd_ops, &bwd_ops, op->ref, &c1, 0, a->prec);
    if (st == RA_OK)
        st = time_run(&tfb, &fwd_ops, &bwd_ops, op->ref, &c1, 1, a->prec);
    ra_case_clear(&c1);
    double base_fma = 0, base_ma = 0;
    if (st == RA_OK)
        st = bare_loop(&base_fma, BASE_K, BASE_V, a->prec, fwd_ops, 0);
    if (st == RA_OK)
        st = bare_loop(&base_ma, BASE_K, BASE_V, a->prec, fwd_ops, 1);
    RA_TRY(st);

    static const char *const headers[] = {"loop (1 thread)", "mpfr_ops", "seconds",   "ns/op",
                                          "Mops/s/core",     "vs_fma",   "vs_mul+add"};
    ra_table *t;
    RA_TRY(ra_table_new(&t, 7, headers));
    char fwd_row[48], bwd_row[48];
    snprintf(fwd_row, sizeof fwd_row, "%s forward", op->name);
    snprintf(bwd_row, sizeof bwd_row, "%s backward", op->name);
    st = add_row(t, fwd_row, fwd_ops, tf, base_fma, base_ma);
    if (st == RA_OK)
        st = add_row(t, bwd_row, bwd_ops, tfb - tf, base_fma, base_ma);
    if (st == RA_OK)
        st = add_row(t, "bare mpfr_fma", fwd_ops, base_fma * fwd_ops * 1e-9, base_fma, base_ma);
    if (st == RA_OK)
        st = add_row(t, "bare mpfr_mul+add", fwd_ops, base_ma * fwd_ops * 1e-9, base_fma, base_ma);
    if (st == RA_OK) {
        printf("%s reference at %ld bits, one unit %s, default regime:\n", op->name,
               (long)a->prec, one);
        st = ra_table_write(t, stdout, RA_FMT_TEXT);
    }
    ra_table_free(t);
    RA_TRY(st);

    /* certified forward + backward of the whole shape */
    ra_case c, ref;
    ra_case_init(&c);
    ra_case_init(&ref);
    st = gen_case(&c, a->spec.shape, a);
    ra_ref_opts o;
    ra_ref_opts_init(&o);
    o.prec = a->prec;
    o.threads = a->threads;
    o.use_cache = 0;
    if (st == RA_OK) {
        double t0 = now();
        st = ra_ref_compute(&ref, &c, &o, "bench case");
        double wall = now() - t0;
        if (st == RA_OK) {
            const char *text = a->spec.shape;
            char th[32];
            snprintf(th, sizeof th, "%d", a->threads);
            printf("certified forward+backward %s: %.2f s wall (rounds %s, certified %s, "
                   "threads %s)\n",
                   text, wall, ra_case_param(&ref, "ref_rounds"), ra_case_param(&ref, "certified"),
                   a->threads ? th : "all");
        }
    }
    ra_case_clear(&c);
    ra_case_clear(&ref);
    return st;
}

int ra_cmd_bench_ref(int argc, char **argv)
{
    bench_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc != RA_CLI_GO)
        return rc;
    return ra_status_exit_code(bench(&a));
}
