/* `recaudit study NAME`: run an error-growth study and write its report under reports/. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "study/study.h"

/*
 * Parses the options, builds the study context (built-in registry, reference
 * options with the cache on) and hands over to ra_study_execute, which
 * writes DIR/NAME.md, .csv and .svg.  `all` runs every study of the table
 * in order.  Exit status: 0 written, 2 bad usage or a study that could not
 * run (the reason printed).  A study reports findings; it has no gate.
 */

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit study NAME|all [--out DIR] [--quick] [--threads N]\n"
               "                      [--no-cache] [--gnuplot PROG] [--quiet]\n"
               "       recaudit study --list\n"
               "\n"
               "Runs one error-growth study and writes DIR/NAME.md (headline finding\n"
               "first, stamped with commit, date, machine, MPFR and seeds), DIR/NAME.csv\n"
               "(every point) and DIR/NAME.svg (a gnuplot plot; without gnuplot the\n"
               "report says the plot was skipped).  References come from the cache\n"
               "($RECAUDIT_CACHE, else ~/.cache/recaudit) when it has them.\n"
               "\n"
               "options:\n"
               "  --list          the studies, one line each\n"
               "  --out DIR       where the report goes (default reports)\n"
               "  --quick         a small grid (seconds; for tests, not the study's figures)\n"
               "  --threads N     OpenMP threads (default: all)\n"
               "  --no-cache      compute every reference, store none\n"
               "  --gnuplot PROG  the gnuplot program (default $RECAUDIT_GNUPLOT, else\n"
               "                  gnuplot on PATH; 'none' skips the plot)\n"
               "  --quiet         no progress lines on stderr\n"
               "  -h, --help      this help\n"
               "\n"
               "exit status: 0 report written, 2 bad usage or the study failed\n");
}

typedef struct study_args {
    int list, quick, no_cache, quiet;
    const char *out, *gnuplot;
} study_args;

enum { OPT_LIST = RA_CLI_OWN, OPT_OUT, OPT_QUICK, OPT_NO_CACHE, OPT_GNUPLOT, OPT_QUIET };

static const struct option study_options[] = {
    {"list", no_argument, NULL, OPT_LIST},
    {"out", required_argument, NULL, OPT_OUT},
    {"quick", no_argument, NULL, OPT_QUICK},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"gnuplot", required_argument, NULL, OPT_GNUPLOT},
    {"quiet", no_argument, NULL, OPT_QUIET},
    RA_CLI_OPTION_THREADS,
    RA_CLI_OPTIONS_END,
};

static int study_option(void *ctx, const ra_cli_args *cli, int c, const char *arg)
{
    (void)cli;
    study_args *a = ctx;
    switch (c) {
    case OPT_LIST:
        a->list = 1;
        break;
    case OPT_OUT:
        a->out = arg;
        break;
    case OPT_QUICK:
        a->quick = 1;
        break;
    case OPT_NO_CACHE:
        a->no_cache = 1;
        break;
    case OPT_GNUPLOT:
        a->gnuplot = arg;
        break;
    case OPT_QUIET:
        a->quiet = 1;
        break;
    }
    return 0;
}

static const ra_cli_syntax study_syntax = {.cmd = "study",
                                           .shortopts = ":h",
                                           .longopts = study_options,
                                           .help = print_help,
                                           .own = study_option,
                                           .style = RA_CLI_USAGE};

static int run_one(ra_study_ctx *ctx, const ra_study *s, const study_args *a)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "recaudit study %s%s%s%s", s->name, a->quick ? " --quick" : "",
             a->out ? " --out " : "", a->out ? a->out : "");
    ctx->command = cmd;
    ra_status st = ra_study_execute(ctx, s);
    if (st != RA_OK) {
        fprintf(stderr, "recaudit study: %s failed: %s\n", s->name, ra_strstatus(st));
        return 2;
    }
    return 0;
}

int ra_cmd_study(int argc, char **argv)
{
    study_args a;
    memset(&a, 0, sizeof a);
    ra_cli_args cli;
    int rc = ra_cli_parse(&cli, &study_syntax, argc, argv, &a);
    if (rc != RA_CLI_GO)
        return rc;
    const char *name = ra_cli_operand(&cli);
    if (!(rc = ra_cli_no_more(&cli))) {
        if (a.list && name)
            rc = ra_cli_usage_error("study", "--list takes no study name");
        else if (!a.list && !name)
            rc = ra_cli_usage_error("study", "which study? (recaudit study --list)");
    }
    long threads = cli.threads;
    ra_cli_args_clear(&cli);
    if (rc)
        return rc;
    if (a.list) {
        for (const ra_study *s = ra_studies; s->name; s++)
            printf("%-10s %s\n", s->name, s->doc);
        return 0;
    }
    const ra_study *one = strcmp(name, "all") == 0 ? NULL : ra_study_find(name);
    if (!one && strcmp(name, "all") != 0) {
        fprintf(stderr, "recaudit study: unknown study '%s'; the studies:", name);
        for (const ra_study *s = ra_studies; s->name; s++)
            fprintf(stderr, " %s", s->name);
        fprintf(stderr, "\n");
        return ra_cli_see_help("study");
    }
    ra_study_ctx ctx;
    ra_study_ctx_init(&ctx);
    if (a.out)
        ctx.out_dir = a.out;
    ctx.quick = a.quick;
    ctx.threads = (int)threads;
    ctx.ref.threads = (int)threads;
    ctx.ref.use_cache = !a.no_cache;
    ctx.gnuplot = a.gnuplot;
    ctx.verbose = !a.quiet;
    if (ra_registry_new(&ctx.registry) != RA_OK)
        return 2;
    for (const ra_study *s = ra_studies; !rc && s->name; s++)
        if (!one || s == one)
            rc = run_one(&ctx, s, &a);
    ra_registry_free(ctx.registry);
    return rc;
}
