/* `recaudit pairs`: the covering-array rows of an operation's feature matrix, or a suite's
 * coverage. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/gdn_matrix.h"
#include "audit/suite.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"

/*
 * Without --suite: writes the suite rows (TSV, no header) of the pairwise
 * covering array over the op's feature matrix (src/audit/gdn_matrix.h), the
 * rows data/suites/quick.tsv holds for that op, seeds from --seed (default
 * 100) on.  With --suite: how many of the matrix's pairs the suite covers,
 * and the pairs it misses.  Deterministic: tests/suite-pairs.sh checks
 * that quick's gdn rows are this command's output.
 */

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit pairs [--op gdn] [--seed N] [--suite S]\n"
               "\n"
               "Writes the rows of a pairwise covering array over the operation's\n"
               "feature matrix (head dims, T against the block sizes, grouped heads,\n"
               "l2norm, h0, dht, parameters, batch, regime, input dtype) as suite lines:\n"
               "every pair of feature values appears in some row, big shapes on rows\n"
               "with small T and B. With --suite, prints the suite's coverage of the\n"
               "matrix and the pairs it misses; exit 1 when some are missed.\n"
               "\n"
               "options:\n"
               "  --op OP      operation (default gdn; the only one with a matrix)\n"
               "  --seed N     seed of the first row (default 100), then N+1, ...\n"
               "  --suite S    quick, full or a suite file: report its coverage\n"
               "  -h, --help   this help\n"
               "\n"
               "example:\n"
               "  recaudit pairs --suite quick\n");
}

enum { OPT_SUITE = RA_CLI_OWN, OPT_SEED };

typedef struct pairs_args {
    const char *suite;
    unsigned long long seed;
} pairs_args;

static const struct option pairs_options[] = {
    RA_CLI_OPTION_OP,
    {"seed", required_argument, NULL, OPT_SEED},
    {"suite", required_argument, NULL, OPT_SUITE},
    RA_CLI_OPTIONS_END,
};

static int pairs_option(void *ctx, const ra_cli_args *cli, int c, const char *arg)
{
    (void)cli;
    pairs_args *a = ctx;
    if (c == OPT_SUITE)
        a->suite = arg;
    if (c == OPT_SEED && ra_cli_parse_u64(&a->seed, "pairs", "--seed", arg))
        return 2;
    return 0;
}

static const ra_cli_syntax pairs_syntax = {.cmd = "pairs",
                                           .shortopts = ":h",
                                           .longopts = pairs_options,
                                           .help = print_help,
                                           .own = pairs_option,
                                           .style = RA_CLI_USAGE};

static int report(const char *name, const char *op)
{
    ra_suite s;
    ra_suite_init(&s);
    ra_status st = ra_suite_load(&s, name);
    size_t covered = 0, total = 0;
    if (st == RA_OK)
        st = ra_matrix_coverage(&s, op, &covered, &total);
    if (st == RA_OK && !total) {
        ra_suite_clear(&s);
        return ra_cli_usage_error("pairs", "op '%s' has no feature matrix (%s has)", op,
                                  ra_matrix_default_op());
    }
    if (st != RA_OK) {
        ra_suite_clear(&s);
        return ra_status_exit_code(st);
    }
    printf("%s: %s pairs covered %zu of %zu\n", name, op, covered, total);
    static char buf[1 << 16];
    size_t missing = ra_matrix_missing(&s, op, buf, sizeof buf);
    fputs(buf, stdout);
    ra_suite_clear(&s);
    return missing ? 1 : 0;
}

int ra_cmd_pairs(int argc, char **argv)
{
    ra_cli_args cli;
    pairs_args a = {NULL, 100};
    int rc = ra_cli_parse(&cli, &pairs_syntax, argc, argv, &a);
    if (rc != RA_CLI_GO)
        return rc;
    const char *op = cli.op ? cli.op : ra_matrix_default_op();
    rc = ra_cli_no_more(&cli) ? 2 : 0;
    ra_cli_args_clear(&cli);
    if (rc)
        return rc;
    if (a.suite)
        return report(a.suite, op);
    char *text;
    size_t n;
    ra_status st = ra_matrix_generate(&text, &n, op, a.seed);
    if (st != RA_OK)
        return ra_status_exit_code(st);
    fputs(text, stdout);
    free(text);
    return 0;
}
