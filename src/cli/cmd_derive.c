/* `recaudit derive`: every closed-form gradient formula, shipped or published, against finite
 * differences. */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mpfr.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/op.h"
#include "core/table.h"
#include "gradcheck/derive.h"

/*
 * Runs every formula set of every operation (ra_op.derive; --op keeps one
 * operation's), prints one row per formula and parameterisation, and
 * writes the markdown report (--out, default reports/derivations.md).
 * Exit status: 1 when a formula the suite ships fails (a published one
 * that fails is a verdict, not an error), 2 bad usage or input.
 */

#define MAX_ROWS 256

typedef struct derive_args {
    const char *op, *out;
    ra_gc_opts o;
    double min_digits;
    ra_format fmt;
} derive_args;

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit derive [--op OP] [--out FILE.md] [--prec N] [--h-log2 N]\n"
               "                       [--min-digits D] [--threads N] [--format F]\n"
               "\n"
               "Implements every closed-form gradient formula the suite ships or a seed\n"
               "publishes exactly as written, evaluates it in MPFR and compares it element\n"
               "by element with finite differences of the operation's MPFR forward.  One\n"
               "row per formula and parameterisation: digits of agreement and the verdict;\n"
               "a formula that fails is shown with its corrected form and that form's\n"
               "digits.\n"
               "\n"
               "options:\n"
               "  --op OP           only this operation's formula sets\n"
               "  --out FILE        the markdown report (default reports/derivations.md)\n"
               "  --prec N          MPFR precision (default 256)\n"
               "  --h-log2 N        finite-difference step 2^-N (default 80)\n"
               "  --min-digits D    digits a formula needs to hold (default 30)\n"
               "  --threads N       OpenMP threads (default: all)\n"
               "  --format F        table format: text (default), md, csv, json\n"
               "  -h, --help        this help\n"
               "\n"
               "exit status: 0 every shipped formula holds, 1 one does not, 2 bad usage or\n"
               "input\n");
}

enum { OPT_OUT = RA_CLI_OWN, OPT_PREC, OPT_HLOG2, OPT_MIN };

static const struct option derive_options[] = {
    RA_CLI_OPTION_OP,
    {"out", required_argument, NULL, OPT_OUT},
    {"prec", required_argument, NULL, OPT_PREC},
    {"h-log2", required_argument, NULL, OPT_HLOG2},
    {"min-digits", required_argument, NULL, OPT_MIN},
    RA_CLI_OPTION_THREADS,
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTIONS_END,
};

static int derive_option(void *ctx, const ra_cli_args *cli, int c, const char *arg)
{
    (void)cli;
    derive_args *a = ctx;
    long v;
    switch (c) {
    case OPT_OUT:
        a->out = arg;
        return 0;
    case OPT_PREC:
        if (ra_cli_parse_int(&v, "derive", "--prec", arg, 64, 1L << 20))
            return 2;
        a->o.prec = v;
        return 0;
    case OPT_HLOG2:
        if (ra_cli_parse_int(&v, "derive", "--h-log2", arg, 1, 1L << 20))
            return 2;
        a->o.h_log2 = v;
        return 0;
    case OPT_MIN:
        if (ra_cli_parse_int(&v, "derive", "--min-digits", arg, 0, 1000))
            return 2;
        a->min_digits = (double)v;
        return 0;
    }
    return 0;
}

static const ra_cli_syntax derive_syntax = {.cmd = "derive",
                                            .shortopts = ":h",
                                            .longopts = derive_options,
                                            .help = print_help,
                                            .own = derive_option,
                                            .style = RA_CLI_USAGE};

static int parse_args(derive_args *a, int argc, char **argv)
{
    ra_cli_args cli;
    memset(a, 0, sizeof *a);
    ra_gc_opts_init(&a->o);
    a->min_digits = 30;
    a->out = "reports/derivations.md";
    int rc = ra_cli_parse(&cli, &derive_syntax, argc, argv, a);
    if (rc != RA_CLI_GO)
        return rc;
    a->o.threads = (int)cli.threads;
    a->fmt = cli.fmt;
    a->op = cli.op;
    rc = ra_cli_no_more(&cli) ? 2 : 0;
    if (!rc && a->o.h_log2 >= a->o.prec - 8)
        rc = ra_cli_usage_error("derive", "--h-log2 %ld needs --prec above %ld", a->o.h_log2,
                                a->o.h_log2 + 8);
    if (!rc && a->op) {
        const ra_op *op;
        if (ra_op_require(&op, a->op, "--op") != RA_OK)
            rc = ra_cli_see_help("derive");
    }
    ra_cli_args_clear(&cli);
    return rc ? rc : RA_CLI_GO;
}

static ra_status print_rows(const ra_derive_row *rows, size_t n, ra_format fmt)
{
    static const char *const headers[] = {
        "set", "formula", "kind", "parameterisation", "digits", "verdict", "corrected_digits"};
    ra_table *t;
    RA_TRY(ra_table_new(&t, 7, headers));
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < n; i++) {
        const ra_derive_row *r = &rows[i];
        char dig[32], corr[32] = "-";
        snprintf(dig, sizeof dig, "%.1f", r->digits);
        if (r->corr_digits >= 0)
            snprintf(corr, sizeof corr, "%.1f", r->corr_digits);
        const char *cells[] = {
            r->set->name, r->f->written, r->set->shipped ? "shipped" : "published",
            r->cs->label, dig,           r->holds ? "holds" : "FAILS",
            corr};
        st = ra_table_add_row(t, cells);
    }
    if (st == RA_OK)
        st = ra_table_write(t, stdout, fmt);
    ra_table_free(t);
    return st;
}

static ra_status write_report(const derive_args *a, const ra_derive_row *rows, size_t n)
{
    char stamp[256], date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    snprintf(stamp, sizeof stamp,
             "recaudit %s, MPFR %s, %s; %ld bits, step 2^-%ld, cases generated with seed 1 in f64",
             PACKAGE_VERSION, mpfr_get_version(), date, (long)a->o.prec, a->o.h_log2);
    FILE *f = fopen(a->out, "w");
    if (!f)
        RA_ERRORF(RA_EIO, "derive: cannot write '%s': %s", a->out, strerror(errno));
    ra_status st = ra_derive_report(f, rows, n, stamp, a->min_digits);
    if (fclose(f) != 0 && st == RA_OK)
        RA_ERRORF(RA_EIO, "derive: cannot write '%s': %s", a->out, strerror(errno));
    return st;
}

int ra_cmd_derive(int argc, char **argv)
{
    derive_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc != RA_CLI_GO)
        return rc;
    static ra_derive_row rows[MAX_ROWS];
    size_t n = 0;
    ra_status st = RA_OK;
    for (const ra_op *const *o = ra_ops(); st == RA_OK && *o; o++) {
        if (a.op && strcmp(a.op, (*o)->name) != 0)
            continue;
        for (const struct ra_derive_set *const *s = (*o)->derive; st == RA_OK && s && *s; s++)
            st = ra_derive_check(rows, &n, MAX_ROWS, *s, &a.o, a.min_digits);
    }
    if (st == RA_OK)
        st = print_rows(rows, n, a.fmt);
    if (st == RA_OK)
        st = write_report(&a, rows, n);
    if (st != RA_OK)
        return ra_status_exit_code(st);
    int failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += rows[i].set->shipped && !rows[i].holds;
    FILE *info = a.fmt == RA_FMT_TEXT || a.fmt == RA_FMT_MARKDOWN ? stdout : stderr;
    fprintf(info, "derive: %zu formulas checked, %d shipped formula%s failing; report %s\n", n,
            failed, failed == 1 ? "" : "s", a.out);
    return failed ? 1 : 0;
}
