/* `recaudit validate`: every matching variant over a suite's grid, gated. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>

#include "audit/audit.h"
#include "audit/report.h"
#include "audit/suite.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/progress.h"

/*
 * The library's ra_validate does the work; this prints its rows: the table
 * `variant | shape | regime | dtype | tensor | metric | value | gate | pass`
 * (or TAP 13 with --tap), each failing row with the command reproducing
 * it, and the line "N passed, M failed, K skipped".  Exit 1 when a row
 * fails, 2 for bad usage or input.  Progress (variant runs) on stderr.
 */

static void print_help(FILE *f)
{
    fprintf(f,
            "usage: recaudit validate [--variant GLOB] [--suite quick|full|PATH]\n"
            "                         [--plugin LIB.so]... [--gates FILE] [--json FILE] [--tap]\n"
            "                         [--format text|md|csv|json] [--threads N]\n"
            "                         [--allow-uncertified] [--timeout SECONDS] [--no-isolate]\n"
            "\n"
            "Runs every variant matching GLOB on every case of the suite, compares each\n"
            "output and gradient with its certified reference (cached) and applies the\n"
            "gates. Variants that cannot serve a case are skipped, not passed. Each variant\n"
            "runs on each case in a child process with read-only inputs: a crash, an exit\n"
            "or a timeout is that variant's FAIL row, and the run goes on. A second\n"
            "process computes the references of the last rows into the cache meanwhile\n"
            "(RECAUDIT_NO_PREFETCH=1: none, every reference in turn).\n"
            "\n"
            "options:\n"
            "  --variant GLOB       variants (default '*')\n"
            "  --suite S            quick (default), full, or a suite file (.tsv)\n"
            "  --plugin LIB.so      load a variant plugin (repeatable)\n"
            "  --gates FILE         gates table (default: the shipped data/gates.tsv)\n"
            "  --json FILE          also write every row, with its worst element, as JSON\n"
            "  --tap                TAP version 13 on stdout instead of the table\n"
            "  --format F           table format: text (default), md, csv, json\n"
            "  --threads N          CPU threads for the variants and references\n"
            "  --allow-uncertified  use references below the certified bits\n"
            RA_CLI_HELP_ISOLATION
            "  -h, --help           this help\n"
            "\n"
            "example:\n"
            "  recaudit validate --variant 'gdn.cpu.chunk64.*' --suite quick\n");
}

enum { OPT_SUITE = RA_CLI_OWN, OPT_TAP };

static const struct option validate_options[] = {
    RA_CLI_OPTION_VARIANT,
    {"suite", required_argument, NULL, OPT_SUITE},
    RA_CLI_OPTION_PLUGIN,
    RA_CLI_OPTION_GATES,
    RA_CLI_OPTION_JSON,
    {"tap", no_argument, NULL, OPT_TAP},
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTION_THREADS,
    RA_CLI_OPTION_ALLOW_UNCERTIFIED,
    RA_CLI_OPTION_ISOLATION,
    RA_CLI_OPTIONS_END,
};

/* validate's own options. */
typedef struct validate_args {
    const char *suite; /* --suite: name or path */
    int tap;           /* --tap */
} validate_args;

static int validate_option(void *ctx, const ra_cli_args *a, int code, const char *value)
{
    (void)a;
    validate_args *v = ctx;
    if (code == OPT_SUITE)
        v->suite = value;
    else
        v->tap = 1; /* OPT_TAP */
    return 0;
}

static const ra_cli_syntax validate_syntax = {.cmd = "validate",
                                              .shortopts = ":h",
                                              .longopts = validate_options,
                                              .help = print_help,
                                              .own = validate_option};

static int validate(const ra_cli_args *a, const validate_args *v)
{
    ra_cli_audit s;
    ra_suite suite;
    ra_suite_init(&suite);
    ra_status st = ra_cli_audit_begin(&s, a);
    if (st == RA_OK)
        st = ra_suite_load(&suite, v->suite);
    if (st == RA_OK)
        st = ra_cli_json_not_input(a, suite.path);
    if (st == RA_OK) {
        int64_t total = 0;
        for (size_t i = 0; i < suite.n; i++)
            total += (int64_t)ra_audit_count_variants(s.r, a->variant, suite.rows[i].spec.op);
        s.o.progress = ra_progress_start("validate", total, "runs");
        st = ra_validate(&s.rows, s.r, a->variant, &suite, &s.o);
        ra_progress_finish(s.o.progress);
    }
    FILE *info = v->tap ? NULL : ra_cli_info_stream(a->fmt);
    if (st == RA_OK) {
        if (v->tap) {
            ra_report_tap(stdout, &s.rows);
        } else {
            fprintf(info, "validate: suite %s (%zu cases), variants '%s'\n", suite.path, suite.n,
                    a->variant);
            st = ra_report_validate_table(stdout, &s.rows, a->fmt);
        }
    }
    ra_suite_clear(&suite);
    return ra_cli_audit_end(&s, st, a, "validate", info);
}

int ra_cmd_validate(int argc, char **argv)
{
    ra_cli_args a;
    validate_args v = {"quick", 0};
    int rc = ra_cli_parse(&a, &validate_syntax, argc, argv, &v);
    if (rc != RA_CLI_GO)
        return rc;
    a.variant = a.variant ? a.variant : "*";
    rc = ra_cli_no_more(&a);
    if (rc == 0)
        rc = validate(&a, &v);
    ra_cli_args_clear(&a);
    return rc;
}
