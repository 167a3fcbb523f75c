/* `recaudit gradcheck`: gradients against high-precision finite differences. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/case.h"
#include "core/gen_gdn.h"
#include "core/table.h"
#include "gradcheck/gradcheck.h"

/*
 * The case is a file (positional CASE) or generated from --shape, --regime,
 * --seed, --h0, --l2norm, --dtype exactly as `recaudit gen` would.  Without
 * --grads the reference backward is checked (the proof that its closed
 * forms are right); with --grads FILE the gradients in FILE (any backward's
 * output, by their SPEC.md names) are.  One row per input tensor with the
 * decimal digits of agreement; exit 1 when a row is below --min-digits.
 */

#define DEFAULT_SHAPE_SMALL "B=1,T=6,Hk=1,Hv=2,K=4,V=3"
#define DEFAULT_SHAPE_LARGE "B=1,T=32,Hk=2,Hv=4,K=8,V=8"

typedef struct gc_args {
    const char *op, *shape, *regime, *case_path, *grads_path;
    ra_dtype dtype;
    unsigned long long seed;
    int h0, l2norm;
    double min_digits;
    ra_gc_opts o;
    ra_format fmt;
} gc_args;

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit gradcheck --op gdn [--shape S] [--regime R] [--seed N] [--h0]\n"
               "                          [--l2norm] [--mode M] [--prec N] [--min-digits D]\n"
               "                          [--grads RESULT.safetensors] [CASE.safetensors]\n"
               "\n"
               "Central finite differences of the MPFR forward (step 2^-80, Richardson) of\n"
               "L = <do, o> + <dht, ht>, against the gradients of the reference backward (or\n"
               "those in --grads).  Prints, per input tensor, the decimal digits on which\n"
               "they agree: a right formula shows tens of digits, a wrong one about none.\n"
               "\n"
               "options:\n"
               "  --op OP            operation (gdn); optional with CASE\n"
               "  --shape S          generated case shape (default " DEFAULT_SHAPE_SMALL "\n"
               "                     element-wise, " DEFAULT_SHAPE_LARGE " otherwise)\n"
               "  --regime R         input regime of the generated case (default)\n"
               "  --dtype T          storage dtype of the generated case (f32)\n"
               "  --seed N           case seed, and the seed of random directions (0)\n"
               "  --h0, --l2norm     generated case with h0 / with l2norm=true\n"
               "  --mode M           elementwise (default): every input element;\n"
               "                     directional: one random direction per input tensor;\n"
               "                     dot: the VJP/JVP dot-product test\n"
               "  --prec N           MPFR precision of everything (default 256)\n"
               "  --h-log2 N         finite-difference step 2^-N (default 80)\n"
               "  --min-digits D     exit 1 when a tensor agrees on fewer digits (30)\n"
               "  --grads FILE       check these gradients (dq, dk, dv, dg, dbeta, dh0)\n"
               "  --threads N        OpenMP threads (default: all)\n"
               "  --format F         text (default), md, csv, json\n"
               "  -h, --help         this help\n"
               "\n"
               "exit status: 0 every tensor >= --min-digits, 1 one is below, 2 bad usage\n"
               "or input\n");
}

static int parse_args(gc_args *a, int argc, char **argv)
{
    enum {
        OPT_OP = 256,
        OPT_SHAPE,
        OPT_REGIME,
        OPT_DTYPE,
        OPT_SEED,
        OPT_H0,
        OPT_L2NORM,
        OPT_MODE,
        OPT_PREC,
        OPT_HLOG2,
        OPT_MIN,
        OPT_GRADS,
        OPT_THREADS,
        OPT_FORMAT
    };
    static const struct option longopts[] = {
        {"op", required_argument, NULL, OPT_OP},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"regime", required_argument, NULL, OPT_REGIME},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"h0", no_argument, NULL, OPT_H0},
        {"l2norm", no_argument, NULL, OPT_L2NORM},
        {"mode", required_argument, NULL, OPT_MODE},
        {"prec", required_argument, NULL, OPT_PREC},
        {"h-log2", required_argument, NULL, OPT_HLOG2},
        {"min-digits", required_argument, NULL, OPT_MIN},
        {"grads", required_argument, NULL, OPT_GRADS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    ra_gc_opts_init(&a->o);
    a->dtype = RA_F32;
    a->min_digits = 30;
    a->fmt = RA_FMT_TEXT;
    optind = 0;
    opterr = 0;
    long v;
    for (int c; (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
        switch (c) {
        case 'h':
            print_help(stdout);
            return -1;
        case OPT_OP:
            a->op = optarg;
            break;
        case OPT_SHAPE:
            a->shape = optarg;
            break;
        case OPT_REGIME:
            a->regime = optarg;
            break;
        case OPT_DTYPE:
            if (ra_dtype_parse(&a->dtype, optarg) != RA_OK)
                return ra_cli_usage_error("gradcheck", "--dtype '%s'", optarg);
            break;
        case OPT_SEED:
            if (ra_cli_parse_u64(&a->seed, "gradcheck", "--seed", optarg))
                return 2;
            break;
        case OPT_H0:
            a->h0 = 1;
            break;
        case OPT_L2NORM:
            a->l2norm = 1;
            break;
        case OPT_MODE:
            if (ra_gc_mode_parse(&a->o.mode, optarg) != RA_OK)
                return ra_cli_usage_error("gradcheck", "--mode '%s'", optarg);
            break;
        case OPT_PREC:
            if (ra_cli_parse_int(&v, "gradcheck", "--prec", optarg, 64, 1L << 20))
                return 2;
            a->o.prec = v;
            break;
        case OPT_HLOG2:
            if (ra_cli_parse_int(&v, "gradcheck", "--h-log2", optarg, 1, 1L << 20))
                return 2;
            a->o.h_log2 = v;
            break;
        case OPT_MIN:
            if (ra_cli_parse_int(&v, "gradcheck", "--min-digits", optarg, 0, 1000))
                return 2;
            a->min_digits = (double)v;
            break;
        case OPT_GRADS:
            a->grads_path = optarg;
            break;
        case OPT_THREADS:
            if (ra_cli_parse_int(&v, "gradcheck", "--threads", optarg, 1, 4096))
                return 2;
            a->o.threads = (int)v;
            break;
        case OPT_FORMAT:
            if (ra_format_parse(&a->fmt, optarg) != RA_OK)
                return ra_cli_usage_error("gradcheck", "--format '%s': text, md, csv or json",
                                          optarg);
            break;
        default:
            return ra_cli_getopt_error("gradcheck", c, argv, optind, longopts);
        }
    }
    if (optind < argc)
        a->case_path = argv[optind++];
    if (optind < argc)
        return ra_cli_usage_error("gradcheck", "unexpected argument '%s'", argv[optind]);
    if (!a->case_path && !a->op)
        return ra_cli_usage_error("gradcheck", "give --op gdn (and a shape), or a CASE file");
    if (a->op && strcmp(a->op, "gdn") != 0)
        return ra_cli_usage_error("gradcheck", "--op '%s': gradient checks exist for: gdn", a->op);
    if (a->case_path && (a->shape || a->regime || a->h0 || a->l2norm))
        return ra_cli_usage_error("gradcheck",
                                  "--shape/--regime/--h0/--l2norm describe a generated case; "
                                  "not with CASE");
    if (a->o.h_log2 >= a->o.prec - 8)
        return ra_cli_usage_error("gradcheck", "--h-log2 %ld needs --prec above %ld", a->o.h_log2,
                                  a->o.h_log2 + 8);
    a->o.seed = a->seed;
    return 0;
}

static ra_status make_case(ra_case *c, const gc_args *a)
{
    if (a->case_path)
        return ra_case_load(c, a->case_path);
    ra_gdn_gen_opts g;
    memset(&g, 0, sizeof g);
    const char *shape = a->shape                         ? a->shape
                        : a->o.mode == RA_GC_ELEMENTWISE ? DEFAULT_SHAPE_SMALL
                                                         : DEFAULT_SHAPE_LARGE;
    RA_TRY(ra_gdn_shape_parse(&g.shape, shape));
    g.dtype = a->dtype;
    g.regime = a->regime;
    g.seed = a->seed;
    g.h0 = a->h0;
    g.l2norm = a->l2norm;
    return ra_gdn_generate(c, &g);
}

static ra_status print_result(const ra_gc_result *r, ra_format fmt)
{
    static const char *const headers[] = {"tensor", "n",  "digits",  "rel_err",
                                          "worst",  "fd", "analytic"};
    ra_table *t;
    RA_TRY(ra_table_new(&t, 7, headers));
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < r->n; i++) {
        const ra_gc_row *w = &r->rows[i];
        char n[32], dig[32], rel[32], worst[32], fd[40], an[40];
        snprintf(n, sizeof n, "%lld", (long long)w->n);
        snprintf(dig, sizeof dig, "%.1f", w->digits);
        snprintf(rel, sizeof rel, "%.3g", w->rel);
        snprintf(worst, sizeof worst, "%lld", (long long)w->worst);
        snprintf(fd, sizeof fd, "%.17g", w->fd);
        snprintf(an, sizeof an, "%.17g", w->an);
        const char *cells[] = {w->tensor, n, dig, rel, worst, fd, an};
        st = ra_table_add_row(t, cells);
    }
    if (st == RA_OK)
        st = ra_table_write(t, stdout, fmt);
    ra_table_free(t);
    return st;
}

int ra_cmd_gradcheck(int argc, char **argv)
{
    gc_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    ra_case c, g;
    ra_case_init(&c);
    ra_case_init(&g);
    ra_status st = make_case(&c, &a);
    if (st == RA_OK && a.grads_path)
        st = ra_case_load(&g, a.grads_path);
    ra_gc_result r;
    if (st == RA_OK)
        st = ra_gradcheck_gdn(&r, &c, &a.o, a.grads_path ? &g.tensors : NULL,
                              a.case_path ? a.case_path : "generated case");
    if (st == RA_OK)
        st = print_result(&r, a.fmt);
    double min = st == RA_OK ? ra_gc_min_digits(&r) : 0;
    if (st == RA_OK && a.fmt == RA_FMT_TEXT)
        printf("gradcheck gdn, %s, %ld bits, step 2^-%ld, %s: min %.1f digits (threshold "
               "%.0f): %s\n",
               ra_gc_mode_name(a.o.mode), (long)a.o.prec, a.o.h_log2,
               a.grads_path ? a.grads_path : "reference backward", min, a.min_digits,
               min >= a.min_digits ? "pass" : "FAIL");
    ra_case_clear(&c);
    ra_case_clear(&g);
    if (st != RA_OK)
        return ra_status_exit_code(st);
    return min >= a.min_digits ? 0 : 1;
}
