/* `recaudit ref`: the certified MPFR reference of a case, written to a file. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"
#include "core/table.h"
#include "ref/ref.h"

/*
 * Loads the case, calls ra_ref_compute (cached unless --no-cache), writes
 * the reference (every output and gradient as f64, the certificate in the
 * metadata) and prints one row per tensor with its certified bits.  Exit
 * status: 0 when certified (or certification was turned off), 1 when a
 * tensor fell short of --min-bits at the precision cap (the file is still
 * written: the shortfall is in it), 2 for bad usage or input.  Without -o
 * the reference goes next to the case, CASE.ref.safetensors.
 */

typedef struct ref_args {
    const char *in, *out;
    ra_ref_opts o;
    ra_format fmt;
} ref_args;

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit ref CASE.safetensors [-o REF.safetensors] [options]\n"
               "\n"
               "Computes the operation's outputs (and, when the case has cotangents, its\n"
               "gradients) in GNU MPFR at a working precision p and again at a check\n"
               "precision, certifies the number of agreeing leading bits per tensor, raises\n"
               "the precision while a tensor has fewer than --min-bits (up to --prec-cap),\n"
               "and writes every tensor rounded to f64 with the certificate in its metadata.\n"
               "\n"
               "options:\n"
               "  -o, --output FILE  reference file (default: CASE.ref.safetensors)\n"
               "  --prec N           working precision in bits (default 128, at least 53)\n"
               "  --check-prec N     check precision (default 2p)\n"
               "  --prec-cap N       highest working precision the Ziv loop may use (1024)\n"
               "  --min-bits N       bits every tensor must agree on (default 60)\n"
               "  --threads N        OpenMP threads (default: all)\n"
               "  --no-certify       one run at p, no check run (certified=unchecked)\n"
               "  --no-cache         neither read nor write $RECAUDIT_CACHE\n"
               "  --no-grads         outputs only, even when the case has cotangents\n"
               "  --format F         table format: text (default), md, csv, json\n"
               "  -h, --help         this help\n"
               "\n"
               "exit status: 0 certified, 1 a tensor is short of --min-bits at the cap,\n"
               "2 bad usage or bad input\n");
}

static int parse_prec(mpfr_prec_t *out, const char *opt, const char *text, long min)
{
    long v;
    if (ra_cli_parse_int(&v, "ref", opt, text, min, 1L << 24))
        return 2;
    *out = (mpfr_prec_t)v;
    return 0;
}

enum {
    OPT_PREC = RA_CLI_OWN,
    OPT_CHECK,
    OPT_CAP,
    OPT_MINBITS,
    OPT_NOCERT,
    OPT_NOCACHE,
    OPT_NOGRADS,
};

static const struct option ref_options[] = {
    RA_CLI_OPTION_OUTPUT,
    {"prec", required_argument, NULL, OPT_PREC},
    {"check-prec", required_argument, NULL, OPT_CHECK},
    {"prec-cap", required_argument, NULL, OPT_CAP},
    {"min-bits", required_argument, NULL, OPT_MINBITS},
    RA_CLI_OPTION_THREADS,
    {"no-certify", no_argument, NULL, OPT_NOCERT},
    {"no-cache", no_argument, NULL, OPT_NOCACHE},
    {"no-grads", no_argument, NULL, OPT_NOGRADS},
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTIONS_END,
};

/* One option of ref's own (ctx: the ra_ref_opts): 0, or the exit status. */
static int ref_option(void *ctx, const ra_cli_args *cli, int c, const char *arg)
{
    (void)cli;
    ra_ref_opts *o = ctx;
    long v;
    switch (c) {
    case OPT_PREC:
        return parse_prec(&o->prec, "--prec", arg, 53);
    case OPT_CHECK:
        return parse_prec(&o->check_prec, "--check-prec", arg, 54);
    case OPT_CAP:
        return parse_prec(&o->prec_cap, "--prec-cap", arg, 53);
    case OPT_MINBITS:
        if (ra_cli_parse_int(&v, "ref", "--min-bits", arg, 1, 1L << 24))
            return 2;
        o->min_bits = (int)v;
        return 0;
    case OPT_NOCERT:
        o->certify = 0;
        return 0;
    case OPT_NOCACHE:
        o->use_cache = 0;
        return 0;
    case OPT_NOGRADS:
        o->grads = 0;
        return 0;
    }
    return 0;
}

static const ra_cli_syntax ref_syntax = {.cmd = "ref",
                                         .shortopts = ":o:h",
                                         .longopts = ref_options,
                                         .help = print_help,
                                         .own = ref_option,
                                         .style = RA_CLI_USAGE};

/* Parses argv into a; returns RA_CLI_GO, or the exit status. */
static int parse_args(ref_args *a, int argc, char **argv)
{
    ra_cli_args cli;
    memset(a, 0, sizeof *a);
    ra_ref_opts_init(&a->o);
    int rc = ra_cli_parse(&cli, &ref_syntax, argc, argv, &a->o);
    if (rc != RA_CLI_GO)
        return rc;
    a->out = cli.output;
    a->o.threads = (int)cli.threads;
    a->fmt = cli.fmt;
    if (!(a->in = ra_cli_operand(&cli)))
        return ra_cli_usage_error("ref", "missing CASE.safetensors");
    if (ra_cli_no_more(&cli))
        return 2;
    if (a->o.prec_cap < a->o.prec)
        return ra_cli_usage_error("ref", "--prec-cap %ld is below --prec %ld", (long)a->o.prec_cap,
                                  (long)a->o.prec);
    if (a->o.check_prec && a->o.check_prec <= a->o.prec)
        return ra_cli_usage_error("ref", "--check-prec %ld must exceed --prec %ld",
                                  (long)a->o.check_prec, (long)a->o.prec);
    return RA_CLI_GO;
}

/* CASE.safetensors -> CASE.ref.safetensors (any other name: NAME.ref.safetensors). */
static char *default_output(const char *in)
{
    const char *ext = ".safetensors";
    size_t n = strlen(in), m = strlen(ext);
    size_t stem = n >= m && strcmp(in + n - m, ext) == 0 ? n - m : n;
    char *out = malloc(stem + sizeof ".ref.safetensors");
    if (out)
        snprintf(out, stem + sizeof ".ref.safetensors", "%.*s.ref.safetensors", (int)stem, in);
    return out;
}

static ra_status print_table(const ra_case *ref, ra_format fmt)
{
    static const char *const headers[] = {"tensor", "shape", "certified_bits", "status"};
    ra_table *t;
    RA_TRY(ra_table_new(&t, 4, headers));
    const char *min_text = ra_case_param(ref, "ref_min_bits");
    long min_bits = min_text ? strtol(min_text, NULL, 10) : 0;
    ra_status st = RA_OK;
    for (size_t i = 0; st == RA_OK && i < ref->tensors.n; i++) {
        const ra_tensor *x = ref->tensors.items[i];
        char shape[128], key[64];
        ra_shape_format(shape, sizeof shape, x->ndim, x->shape);
        snprintf(key, sizeof key, "certified_bits.%s", x->name);
        const char *bits = ra_case_param(ref, key);
        const char *status = !bits                                ? "unchecked"
                             : strtol(bits, NULL, 10) >= min_bits ? "ok"
                                                                  : "SHORT";
        const char *cells[] = {x->name, shape, bits ? bits : "-", status};
        st = ra_table_add_row(t, cells);
    }
    if (st == RA_OK)
        st = ra_table_write(t, stdout, fmt);
    ra_table_free(t);
    return st;
}

int ra_cmd_ref(int argc, char **argv)
{
    ref_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc != RA_CLI_GO)
        return rc;
    char *out = a.out ? NULL : default_output(a.in);
    const char *path = a.out ? a.out : out;
    if (!path) {
        fprintf(stderr, "recaudit ref: out of memory\n");
        return 2;
    }
    if (ra_cli_output_not_input("ref", path, a.in)) {
        free(out);
        return 2;
    }
    ra_case c, ref;
    ra_case_init(&c);
    ra_case_init(&ref);
    ra_status st = ra_case_load(&c, a.in);
    if (st == RA_OK)
        st = ra_ref_compute(&ref, &c, &a.o, a.in);
    if (st == RA_OK)
        st = ra_case_save(&ref, path);
    if (st == RA_OK)
        st = print_table(&ref, a.fmt);
    const char *cert = st == RA_OK ? ra_case_param(&ref, "certified") : NULL;
    if (st == RA_OK && a.fmt == RA_FMT_TEXT) {
        const char *cp = ra_case_param(&ref, "ref_check_prec");
        printf("precision %s bits%s%s%s, certified: %s, rounds: %s, cache: %s, MPFR %s\n"
               "reference written to %s\n",
               ra_case_param(&ref, "ref_prec"), cp ? " (check " : "", cp ? cp : "",
               cp ? " bits)" : "", cert,
               ra_case_param(&ref, "ref_rounds") ? ra_case_param(&ref, "ref_rounds") : "-",
               ra_case_param(&ref, "cache"), ra_case_param(&ref, "mpfr_version"), path);
    }
    if (st == RA_OK && cert && strcmp(cert, "no") == 0)
        fprintf(stderr,
                "recaudit ref: not certified: a tensor agrees on fewer than %d bits at the "
                "precision cap %ld (raise --prec-cap)\n",
                a.o.min_bits, (long)a.o.prec_cap);
    const int short_of_bits = cert && strcmp(cert, "no") == 0;
    ra_case_clear(&c);
    ra_case_clear(&ref);
    free(out);
    if (st != RA_OK)
        return ra_status_exit_code(st);
    return short_of_bits ? 1 : 0;
}
