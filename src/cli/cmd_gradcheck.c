/* `recaudit gradcheck`: gradients against high-precision finite differences. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"
#include "core/op.h"
#include "core/table.h"
#include "gradcheck/gradcheck.h"

/*
 * The case is a file (positional CASE) or generated from --op, --shape,
 * --regime, --seed, the op's flags and --dtype exactly as `recaudit gen`
 * would; the operation's row gives the default shapes and the
 * finite-difference hooks.  Without
 * --grads the reference backward is checked (the proof that its closed
 * forms are right); with --grads FILE the gradients in FILE are (any
 * backward's output, with the tensor names that docs/gdn.md defines).  One
 * row per input tensor with the decimal digits of agreement; exit 1 when a
 * row is below --min-digits; the last column counts the elements left out
 * because they sit near a non-differentiable point (a ReLU kink).
 */

typedef struct gc_args {
    const char *case_path, *grads_path;
    ra_case_spec spec; /* the generated case (no case_path) */
    double min_digits;
    ra_gc_opts o;
    ra_format fmt;
} gc_args;

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit gradcheck --op OP [--shape S] [--regime R] [--dtype T]\n"
               "                          [--seed N] [--param KEY=VALUE]... [--FLAG]...\n"
               "                          [--mode M] [--prec N] [--h-log2 N] [--min-digits D]\n"
               "                          [--threads N] [--format F]\n"
               "                          [--grads RESULT.safetensors] [CASE.safetensors]\n"
               "\n"
               "Central finite differences of the MPFR forward (step 2^-80, Richardson) of\n"
               "L = sum of <cotangent, output> over the outputs (gdn: <do, o> + <dht, ht>),\n"
               "against the gradients of the reference backward (or those in --grads).\n"
               "Prints, per input tensor, the decimal digits on which they agree: a right\n"
               "formula shows tens of digits, a wrong one about none.\n"
               "\n"
               "options:\n"
               "  --op OP              operation ('recaudit list ops'); optional with CASE\n");
    for (const ra_op *const *o = ra_ops(); *o; o++)
        if ((*o)->gradcheck_shapes[0])
            fprintf(f, "  --shape S            default for %s: %s element-wise,\n"
                       "                       %s otherwise\n",
                    (*o)->name, (*o)->gradcheck_shapes[0], (*o)->gradcheck_shapes[1]);
    fprintf(f, "  --regime R           input distribution of the generated case (default:\n"
               "                       the op's first; 'recaudit list regimes')\n"
               "  --dtype T            storage dtype of the generated case (f32)\n"
               "  --seed N             case seed, and the seed of random directions (0)\n");
    ra_cli_help_flags(f);
    fprintf(f, "  --mode M             elementwise (default): every input element;\n"
               "                       directional: one random direction per input tensor;\n"
               "                       dot: the VJP/JVP dot-product test\n"
               "  --prec N             MPFR precision of everything (default 256)\n"
               "  --h-log2 N           finite-difference step 2^-N (default 80)\n"
               "  --min-digits D       exit 1 when a tensor agrees on fewer digits (30)\n"
               "  --grads FILE         check these gradients (gdn: dq, dk, dv, dg, dbeta, dh0)\n"
               "  --threads N          OpenMP threads (default: all)\n"
               "  --format F           text (default), md, csv, json\n"
               "  -h, --help           this help\n"
               "\n"
               "exit status: 0 every tensor >= --min-digits, 1 one is below, 2 bad usage\n"
               "or input\n");
}

enum { OPT_MODE = RA_CLI_OWN, OPT_PREC, OPT_HLOG2, OPT_MIN, OPT_GRADS };

static const struct option gc_options[] = {
    RA_CLI_CASE_OPTIONS,
    {"mode", required_argument, NULL, OPT_MODE},
    {"prec", required_argument, NULL, OPT_PREC},
    {"h-log2", required_argument, NULL, OPT_HLOG2},
    {"min-digits", required_argument, NULL, OPT_MIN},
    {"grads", required_argument, NULL, OPT_GRADS},
    RA_CLI_OPTION_THREADS,
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTIONS_END,
};

/* One option of gradcheck's own (ctx: the gc_args): 0, or the exit status. */
static int gc_option(void *ctx, const ra_cli_args *cli, int c, const char *arg)
{
    gc_args *a = ctx;
    long v;
    switch (c) {
    case OPT_MODE:
        return ra_gc_mode_parse(&a->o.mode, arg) != RA_OK ? ra_cli_bad_value(cli, "--mode", arg, "")
                                                          : 0;
    case OPT_PREC:
        if (ra_cli_parse_int(&v, "gradcheck", "--prec", arg, 64, 1L << 20))
            return 2;
        a->o.prec = v;
        return 0;
    case OPT_HLOG2:
        if (ra_cli_parse_int(&v, "gradcheck", "--h-log2", arg, 1, 1L << 20))
            return 2;
        a->o.h_log2 = v;
        return 0;
    case OPT_MIN:
        if (ra_cli_parse_int(&v, "gradcheck", "--min-digits", arg, 0, 1000))
            return 2;
        a->min_digits = (double)v;
        return 0;
    case OPT_GRADS:
        a->grads_path = a->o.grads_what = arg;
        return 0;
    }
    return 0;
}

static const ra_cli_syntax gc_syntax = {.cmd = "gradcheck",
                                        .shortopts = ":h",
                                        .longopts = gc_options,
                                        .help = print_help,
                                        .own = gc_option,
                                        .style = RA_CLI_USAGE};

/* Parses argv into a; returns RA_CLI_GO, or the exit status. */
static int parse_args(gc_args *a, int argc, char **argv)
{
    ra_cli_args cli;
    memset(a, 0, sizeof *a);
    ra_gc_opts_init(&a->o);
    a->min_digits = 30;
    int rc = ra_cli_parse(&cli, &gc_syntax, argc, argv, a);
    if (rc != RA_CLI_GO)
        return rc;
    a->o.threads = (int)cli.threads;
    a->fmt = cli.fmt;
    a->case_path = ra_cli_operand(&cli);
    rc = ra_cli_no_more(&cli) ? 2 : 0;
    if (!rc && !a->case_path && !cli.op)
        rc = ra_cli_usage_error("gradcheck", "give --op OP (and a shape), or a CASE file");
    if (!rc && a->case_path && (cli.shape || cli.regime || cli.nflags))
        rc = ra_cli_usage_error("gradcheck", "--shape/--regime and the op's flags describe a "
                                             "generated case; not with CASE");
    if (!rc && a->o.h_log2 >= a->o.prec - 8)
        rc = ra_cli_usage_error("gradcheck", "--h-log2 %ld needs --prec above %ld", a->o.h_log2,
                                a->o.h_log2 + 8);
    a->o.seed = cli.seed;
    if (!rc && !a->case_path) {
        const ra_op *op = ra_op_find(cli.op);
        if (op && !cli.shape)
            cli.shape = op->gradcheck_shapes[a->o.mode != RA_GC_ELEMENTWISE];
        rc = ra_cli_case_spec(&a->spec, &cli);
        if (!rc && !op->gradcheck)
            rc = ra_cli_usage_error("gradcheck", "--op '%s': this operation has no gradient check",
                                    op->name);
    }
    ra_cli_args_clear(&cli);
    return rc ? rc : RA_CLI_GO;
}

static ra_status make_case(ra_case *c, const gc_args *a)
{
    if (a->case_path)
        return ra_case_load(c, a->case_path);
    return ra_case_spec_generate(c, &a->spec);
}

static ra_status print_result(const ra_gc_result *r, ra_format fmt)
{
    static const char *const headers[] = {"tensor", "n",  "digits",  "rel_err",
                                          "worst",  "fd", "analytic", "excluded"};
    ra_table *t;
    RA_TRY(ra_table_new(&t, 8, headers));
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < r->n; i++) {
        const ra_gc_row *w = &r->rows[i];
        char n[32], dig[32], rel[32], worst[32], fd[40], an[40], ex[32];
        snprintf(n, sizeof n, "%lld", (long long)w->n);
        snprintf(dig, sizeof dig, "%.1f", w->digits);
        snprintf(rel, sizeof rel, "%.3g", w->rel);
        snprintf(worst, sizeof worst, "%lld", (long long)w->worst);
        snprintf(fd, sizeof fd, "%.17g", w->fd);
        snprintf(an, sizeof an, "%.17g", w->an);
        snprintf(ex, sizeof ex, "%lld", (long long)w->excluded);
        const char *cells[] = {w->tensor, n, dig, rel, worst, fd, an, ex};
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
    if (rc != RA_CLI_GO)
        return rc;
    ra_case c, g;
    ra_case_init(&c);
    ra_case_init(&g);
    ra_status st = make_case(&c, &a);
    if (st == RA_OK && a.grads_path)
        st = ra_case_load(&g, a.grads_path);
    ra_gc_result r;
    const ra_op *op = st == RA_OK ? ra_op_find(c.op) : NULL;
    if (st == RA_OK && (!op || !op->gradcheck)) {
        RA_REPORTF(RA_EUNSUPPORTED, "%s: op '%s' has no gradient check",
                   a.case_path ? a.case_path : "generated case", c.op ? c.op : "-");
        st = RA_EUNSUPPORTED;
    }
    if (st == RA_OK)
        st = ra_gradcheck(&r, op->gradcheck, &c, &a.o, a.grads_path ? &g.tensors : NULL,
                          a.case_path ? a.case_path : "generated case");
    if (st == RA_OK)
        st = print_result(&r, a.fmt);
    double min = st == RA_OK ? ra_gc_min_digits(&r) : 0;
    if (st == RA_OK && a.fmt == RA_FMT_TEXT)
        printf("gradcheck %s, %s, %ld bits, step 2^-%ld, %s: min %.1f digits (threshold "
               "%.0f): %s\n",
               c.op, ra_gc_mode_name(a.o.mode), (long)a.o.prec, a.o.h_log2,
               a.grads_path ? a.grads_path : "reference backward", min, a.min_digits,
               min >= a.min_digits ? "pass" : "FAIL");
    ra_case_clear(&c);
    ra_case_clear(&g);
    if (st != RA_OK)
        return ra_status_exit_code(st);
    return min >= a.min_digits ? 0 : 1;
}
