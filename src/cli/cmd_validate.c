/* `recaudit validate`: every matching variant over a suite's grid, gated. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/report.h"
#include "audit/suite.h"
#include "cli/cli.h"
#include "cli/commands.h"
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
            "                         [--allow-uncertified]\n"
            "\n"
            "Runs every variant matching GLOB on every case of the suite, compares each\n"
            "output and gradient with its certified reference (cached) and applies the\n"
            "gates. Variants that cannot serve a case are skipped, not passed.\n"
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
            "  -h, --help           this help\n"
            "\n"
            "example:\n"
            "  recaudit validate --variant 'gdn.cpu.chunk64.*' --suite quick\n");
}

typedef struct validate_args {
    const char *glob, *suite, *gates_path, *json_path;
    const char **plugins;
    int tap, allow_uncertified;
    ra_format fmt;
    long threads;
} validate_args;

static int validate(const validate_args *a)
{
    ra_registry *r = NULL;
    ra_gates gates;
    ra_gates_init(&gates);
    ra_suite suite;
    ra_suite_init(&suite);
    ra_rows rows;
    ra_rows_init(&rows);
    ra_status st = ra_registry_new_with_plugins(&r, a->plugins);
    if (st == RA_OK)
        st = ra_gates_load(&gates, a->gates_path);
    if (st == RA_OK)
        st = ra_suite_load(&suite, a->suite);
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    o.gates_path = a->gates_path;
    o.allow_uncertified = a->allow_uncertified;
    o.threads = (int)a->threads;
    if (st == RA_OK) {
        int64_t total = 0;
        for (size_t i = 0; i < suite.n; i++)
            total += (int64_t)ra_audit_count_variants(r, a->glob, suite.rows[i].op);
        o.progress = ra_progress_start("validate", total, "runs");
        st = ra_validate(&rows, r, a->glob, &suite, &o);
        ra_progress_finish(o.progress);
    }
    int text = !a->tap && (a->fmt == RA_FMT_TEXT || a->fmt == RA_FMT_MARKDOWN);
    FILE *info = text ? stdout : stderr;
    if (st == RA_OK) {
        if (a->tap) {
            ra_report_tap(stdout, &rows);
        } else {
            fprintf(info, "validate: suite %s (%zu cases), variants '%s'\n", suite.path, suite.n,
                    a->glob);
            st = ra_report_validate_table(stdout, &rows, a->fmt);
        }
    }
    if (st == RA_OK && a->json_path)
        st = ra_report_json(a->json_path, &rows, "validate");
    if (st == RA_OK) {
        if (a->tap) {
            /* In TAP, anything else must be a comment or go to stderr. */
            fprintf(stdout, "# %zu passed, %zu failed, %zu skipped\n", rows.passed, rows.failed,
                    rows.skipped);
        } else {
            ra_report_failures(info, &rows);
            ra_report_summary(info, &rows);
        }
    }
    int rc = st != RA_OK ? ra_status_exit_code(st) : rows.failed ? 1 : 0;
    ra_rows_clear(&rows);
    ra_suite_clear(&suite);
    ra_gates_clear(&gates);
    ra_registry_free(r);
    return rc;
}

int ra_cmd_validate(int argc, char **argv)
{
    enum {
        OPT_VARIANT = 256,
        OPT_SUITE,
        OPT_PLUGIN,
        OPT_GATES,
        OPT_JSON,
        OPT_TAP,
        OPT_FORMAT,
        OPT_THREADS,
        OPT_ALLOW
    };
    static const struct option longopts[] = {
        {"variant", required_argument, NULL, OPT_VARIANT},
        {"suite", required_argument, NULL, OPT_SUITE},
        {"plugin", required_argument, NULL, OPT_PLUGIN},
        {"gates", required_argument, NULL, OPT_GATES},
        {"json", required_argument, NULL, OPT_JSON},
        {"tap", no_argument, NULL, OPT_TAP},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"allow-uncertified", no_argument, NULL, OPT_ALLOW},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    validate_args a;
    memset(&a, 0, sizeof a);
    a.glob = "*";
    a.suite = "quick";
    a.fmt = RA_FMT_TEXT;
    a.plugins = calloc((size_t)argc + 1, sizeof *a.plugins);
    size_t nplugins = 0;
    if (!a.plugins)
        return ra_cli_usage_error("validate", "out of memory");
    int rc = 0;
    optind = 0;
    opterr = 0;
    for (int c; rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
        switch (c) {
        case 'h':
            print_help(stdout);
            free(a.plugins);
            return 0;
        case OPT_VARIANT:
            a.glob = optarg;
            break;
        case OPT_SUITE:
            a.suite = optarg;
            break;
        case OPT_PLUGIN:
            a.plugins[nplugins++] = optarg;
            break;
        case OPT_GATES:
            a.gates_path = optarg;
            break;
        case OPT_JSON:
            a.json_path = optarg;
            break;
        case OPT_TAP:
            a.tap = 1;
            break;
        case OPT_FORMAT:
            if (ra_format_parse(&a.fmt, optarg) != RA_OK)
                rc = 2;
            break;
        case OPT_THREADS:
            rc = ra_cli_parse_int(&a.threads, "validate", "--threads", optarg, 1, 4096);
            break;
        case OPT_ALLOW:
            a.allow_uncertified = 1;
            break;
        default:
            rc = ra_cli_getopt_error("validate", c, argv, optind, longopts);
        }
    }
    if (rc == 0 && optind < argc)
        rc = ra_cli_usage_error("validate", "unexpected argument '%s'", argv[optind]);
    if (rc == 0)
        rc = validate(&a);
    free(a.plugins);
    return rc;
}
