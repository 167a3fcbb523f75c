/* `recaudit audit`: generate a case, reference it, check every matching variant. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/gdn_case.h"
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
        "usage: recaudit audit --variant GLOB [--op gdn] --shape B=..,T=..,Hk=..,Hv=..,K=..,V=..\n"
        "                      [--regime NAME] [--dtype f32|bf16|f16|f64] [--seed N] [--h0]\n"
        "                      [--l2norm] [--fwd-only] [--plugin LIB.so]... [--gates FILE]\n"
        "                      [--threads N] [--format text|md|csv|json] [--json FILE]\n"
        "                      [--allow-uncertified]\n"
        "\n"
        "Generates the case, computes its certified reference once (cached), runs every\n"
        "variant whose name matches GLOB, and prints one table of metrics per variant\n"
        "and tensor with the verdict of the gates (data/gates.tsv).\n"
        "\n"
        "options:\n"
        "  --variant GLOB       variants to audit (shell pattern, e.g. 'gdn.cpu.*')\n"
        "  --op OP              operation (default gdn)\n"
        "  --shape S            the case's shape (required)\n"
        "  --regime NAME        input distribution (default: default; 'recaudit list regimes')\n"
        "  --dtype D            input dtype (default f32)\n"
        "  --seed N             seed (default 0)\n"
        "  --h0                 with an initial state\n"
        "  --l2norm             kernels normalise q and k themselves\n"
        "  --fwd-only           outputs only, no gradients\n"
        "  --plugin LIB.so      load a variant plugin (repeatable)\n"
        "  --gates FILE         gates table (default: the shipped data/gates.tsv)\n"
        "  --threads N          CPU threads for the variants and the reference\n"
        "  --format F           table format: text (default), md, csv, json\n"
        "  --json FILE          also write every verdict row as JSON ('-': stdout)\n"
        "  --allow-uncertified  use a reference below the certified bits\n"
        "  -h, --help           this help\n"
        "\n"
        "example:\n"
        "  recaudit audit --variant 'gdn.cpu.*' --shape B=1,T=128,Hk=1,Hv=2,K=32,V=32\n");
}

typedef struct audit_args {
    const char *glob, *gates_path, *json_path;
    ra_case_id id;
    ra_format fmt;
    int allow_uncertified;
    long threads;
    const char **plugins;
} audit_args;

static int audit(const audit_args *a)
{
    ra_registry *r = NULL;
    ra_gates gates;
    ra_gates_init(&gates);
    ra_rows rows;
    ra_rows_init(&rows);
    ra_status st = ra_registry_new_with_plugins(&r, a->plugins);
    if (st == RA_OK)
        st = ra_gates_load(&gates, a->gates_path);
    size_t nv = st == RA_OK ? ra_audit_count_variants(r, a->glob, a->id.op) : 0;
    if (st == RA_OK && nv == 0) {
        RA_REPORTF(RA_ENOTFOUND, "audit: no %s variant matches '%s' (see 'recaudit list variants')",
                   a->id.op, a->glob);
        st = RA_ENOTFOUND;
    }
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    o.gates_path = a->gates_path;
    o.allow_uncertified = a->allow_uncertified;
    o.threads = (int)a->threads;
    if (st == RA_OK) {
        o.progress = ra_progress_start("audit", (int64_t)nv, "variants");
        st = ra_audit_case(&rows, r, a->glob, &a->id, &o);
        ra_progress_finish(o.progress);
    }
    int text = a->fmt == RA_FMT_TEXT || a->fmt == RA_FMT_MARKDOWN;
    FILE *info = text ? stdout : stderr;
    if (st == RA_OK) {
        fprintf(info, "audit: %s %s regime=%s dtype=%s seed=%llu%s%s%s\n", a->id.op, a->id.shape,
                a->id.regime, a->id.dtype, a->id.seed, a->id.h0 ? " h0" : "",
                a->id.l2norm ? " l2norm" : "", a->id.bwd ? "" : " fwd-only");
        st = ra_report_metrics_table(stdout, &rows, a->fmt, 1);
    }
    if (st == RA_OK && a->json_path)
        st = ra_report_json(a->json_path, &rows, "audit");
    if (st == RA_OK) {
        ra_report_failures(info, &rows);
        ra_report_summary(info, &rows);
    }
    int rc = st != RA_OK ? ra_status_exit_code(st) : rows.failed ? 1 : 0;
    ra_rows_clear(&rows);
    ra_gates_clear(&gates);
    ra_registry_free(r);
    return rc;
}

int ra_cmd_audit(int argc, char **argv)
{
    enum {
        OPT_VARIANT = 256,
        OPT_OP,
        OPT_SHAPE,
        OPT_REGIME,
        OPT_DTYPE,
        OPT_SEED,
        OPT_H0,
        OPT_L2NORM,
        OPT_FWD_ONLY,
        OPT_PLUGIN,
        OPT_GATES,
        OPT_THREADS,
        OPT_FORMAT,
        OPT_JSON,
        OPT_ALLOW
    };
    static const struct option longopts[] = {
        {"variant", required_argument, NULL, OPT_VARIANT},
        {"op", required_argument, NULL, OPT_OP},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"regime", required_argument, NULL, OPT_REGIME},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"h0", no_argument, NULL, OPT_H0},
        {"l2norm", no_argument, NULL, OPT_L2NORM},
        {"fwd-only", no_argument, NULL, OPT_FWD_ONLY},
        {"plugin", required_argument, NULL, OPT_PLUGIN},
        {"gates", required_argument, NULL, OPT_GATES},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"json", required_argument, NULL, OPT_JSON},
        {"allow-uncertified", no_argument, NULL, OPT_ALLOW},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    audit_args a;
    memset(&a, 0, sizeof a);
    a.fmt = RA_FMT_TEXT;
    a.id.bwd = 1;
    a.id.has_seed = 1;
    const char *op = "gdn", *shape = NULL, *regime = "default", *dtype = "f32";
    a.plugins = calloc((size_t)argc + 1, sizeof *a.plugins);
    size_t nplugins = 0;
    if (!a.plugins)
        return ra_cli_usage_error("audit", "out of memory");
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
        case OPT_OP:
            op = optarg;
            break;
        case OPT_SHAPE:
            shape = optarg;
            break;
        case OPT_REGIME:
            regime = optarg;
            break;
        case OPT_DTYPE:
            dtype = optarg;
            break;
        case OPT_SEED:
            rc = ra_cli_parse_u64(&a.id.seed, "audit", "--seed", optarg);
            break;
        case OPT_H0:
            a.id.h0 = 1;
            break;
        case OPT_L2NORM:
            a.id.l2norm = 1;
            break;
        case OPT_FWD_ONLY:
            a.id.bwd = 0;
            break;
        case OPT_PLUGIN:
            a.plugins[nplugins++] = optarg;
            break;
        case OPT_GATES:
            a.gates_path = optarg;
            break;
        case OPT_THREADS:
            rc = ra_cli_parse_int(&a.threads, "audit", "--threads", optarg, 1, 4096);
            break;
        case OPT_FORMAT:
            if (ra_format_parse(&a.fmt, optarg) != RA_OK)
                rc = 2;
            break;
        case OPT_JSON:
            a.json_path = optarg;
            break;
        case OPT_ALLOW:
            a.allow_uncertified = 1;
            break;
        default:
            rc = ra_cli_getopt_error("audit", c, argv, optind, longopts);
        }
    }
    if (rc == 0 && optind < argc)
        rc = ra_cli_usage_error("audit", "unexpected argument '%s'", argv[optind]);
    if (rc == 0 && !a.glob)
        rc = ra_cli_usage_error("audit", "--variant GLOB is required (e.g. 'gdn.cpu.*')");
    if (rc == 0 && strcmp(op, "gdn") != 0)
        rc = ra_cli_usage_error("audit", "--op %s: cases can be generated for gdn only", op);
    if (rc == 0 && !shape)
        rc =
            ra_cli_usage_error("audit", "--shape is required (e.g. B=1,T=128,Hk=1,Hv=2,K=32,V=32)");
    ra_gdn_shape s;
    ra_dtype dt;
    if (rc == 0 && (ra_gdn_shape_parse(&s, shape) != RA_OK || ra_dtype_parse(&dt, dtype) != RA_OK))
        rc = 2;
    if (rc == 0) {
        snprintf(a.id.op, sizeof a.id.op, "%s", op);
        ra_gdn_shape_format(a.id.shape, sizeof a.id.shape, &s);
        snprintf(a.id.dtype, sizeof a.id.dtype, "%s", ra_dtype_name(dt));
        if (snprintf(a.id.regime, sizeof a.id.regime, "%s", regime) >= (int)sizeof a.id.regime)
            rc = ra_cli_usage_error("audit", "--regime '%s': no such regime", regime);
    }
    if (rc == 0)
        rc = audit(&a);
    free(a.plugins);
    return rc;
}
