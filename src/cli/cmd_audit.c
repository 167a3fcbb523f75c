/* `recaudit audit`: generate a case, reference it, check every matching variant. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/progress.h"

/*
 * gen + ref + run + check in one command (the library's ra_audit_case):
 * one reference (cached) for every variant matching --variant, one table
 * with a row per (variant, tensor), then the failing gates with the
 * command that reproduces each, and a summary line.  Exit 1 when a gate
 * fails.  The case options and their defaults are those of `recaudit gen`.
 */

static void print_help(FILE *f)
{
    fprintf(
        f,
        "usage: recaudit audit --variant GLOB [--op OP] --shape SHAPE [--regime NAME]\n"
        "                      [--dtype f32|bf16|f16|f64] [--seed N] [--FLAG]...\n"
        "                      [--fwd-only] [--plugin LIB.so]... [--gates FILE]\n"
        "                      [--threads N] [--format text|md|csv|json] [--json FILE]\n"
        "                      [--allow-uncertified] [--timeout SECONDS] [--no-isolate]\n"
        "\n"
        "Generates the case, computes its certified reference once (cached), runs every\n"
        "variant whose name matches GLOB, and prints one table of metrics per variant\n"
        "and tensor with the verdict of the gates (data/gates.tsv).\n"
        "\n"
        "options:\n"
        "  --variant GLOB       variants to audit (shell pattern, e.g. 'gdn.cpu.*')\n"
        "  --op OP              operation (default: that of the matching variants)\n"
        "  --shape S            the case's shape (required; syntax: 'recaudit gen --help')\n"
        "  --regime NAME        input distribution (default: the operation's first;\n"
        "                       'recaudit list regimes'; gdn's compose as A+B+...)\n"
        "  --dtype D            input dtype (default f32)\n"
        "  --seed N             seed (default 0)\n");
    ra_cli_help_flags(f);
    fprintf(f,
        "  --fwd-only           outputs only, no gradients\n"
        "  --plugin LIB.so      load a variant plugin (repeatable)\n"
        "  --gates FILE         gates table (default: the shipped data/gates.tsv)\n"
        "  --threads N          CPU threads for the variants and the reference\n"
        "  --format F           table format: text (default), md, csv, json\n"
        "  --json FILE          also write every verdict row as JSON ('-': stdout)\n"
        "  --allow-uncertified  use a reference below the certified bits\n"
        RA_CLI_HELP_ISOLATION
        "  -h, --help           this help\n"
        "\n"
        "example:\n"
        "  recaudit audit --variant 'gdn.cpu.*' --shape B=1,T=128,Hk=1,Hv=2,K=32,V=32\n");
}

static const struct option audit_options[] = {
    RA_CLI_OPTION_VARIANT, RA_CLI_CASE_OPTIONS, RA_CLI_OPTION_FWD_ONLY,
    RA_CLI_OPTION_PLUGIN,  RA_CLI_OPTION_GATES, RA_CLI_OPTION_THREADS,
    RA_CLI_OPTION_FORMAT,  RA_CLI_OPTION_JSON,  RA_CLI_OPTION_ALLOW_UNCERTIFIED,
    RA_CLI_OPTION_ISOLATION, RA_CLI_OPTIONS_END,
};

/* --dtype is checked with the shape, once the required options are there. */
static const ra_cli_syntax audit_syntax = {.cmd = "audit",
                                           .shortopts = ":h",
                                           .longopts = audit_options,
                                           .help = print_help,
                                           .style = RA_CLI_BARE,
                                           .late = RA_CLI_BIT(RA_CLI_DTYPE)};

static int audit(const ra_cli_args *a, const ra_case_spec *id)
{
    ra_cli_audit s;
    ra_status st = ra_cli_audit_begin(&s, a);
    size_t nv = st == RA_OK ? ra_audit_count_variants(s.r, a->variant, id->op) : 0;
    if (st == RA_OK && nv == 0) {
        RA_REPORTF(RA_ENOTFOUND, "audit: no %s variant matches '%s' (see 'recaudit list variants')",
                   id->op, a->variant);
        st = RA_ENOTFOUND;
    }
    if (st == RA_OK) {
        s.o.progress = ra_progress_start("audit", (int64_t)nv, "variants");
        st = ra_audit_case(&s.rows, s.r, a->variant, id, &s.o);
        ra_progress_finish(s.o.progress);
    }
    FILE *info = ra_cli_info_stream(a->fmt);
    if (st == RA_OK) {
        char flags[128];
        ra_case_spec_flags_format(flags, sizeof flags, id, " ");
        fprintf(info, "audit: %s %s regime=%s dtype=%s seed=%llu%s%s\n", id->op, id->shape,
                id->regime, id->dtype, id->seed, flags, id->bwd ? "" : " fwd-only");
        st = ra_report_metrics_table(stdout, &s.rows, a->fmt, 1);
    }
    return ra_cli_audit_end(&s, st, a, "audit", info);
}

int ra_cmd_audit(int argc, char **argv)
{
    ra_cli_args a;
    int rc = ra_cli_parse(&a, &audit_syntax, argc, argv, NULL);
    if (rc != RA_CLI_GO)
        return rc;
    rc = ra_cli_no_more(&a);
    if (rc == 0 && !a.variant)
        rc = ra_cli_usage_error("audit", "--variant GLOB is required (e.g. 'gdn.cpu.*')");
    if (rc == 0 && !a.op)
        rc = ra_cli_op_of_variants(&a, "audit");
    if (rc == 0 && !a.shape)
        rc = ra_cli_usage_error("audit", "--shape is required (syntax: 'recaudit gen --help')");
    ra_case_spec id;
    if (rc == 0)
        rc = ra_cli_case_spec(&id, &a);
    if (rc == 0)
        rc = audit(&a, &id);
    ra_cli_args_clear(&a);
    return rc;
}
