/* `recaudit bench`: kernel speed of variants on one generated case. */

/*
 * Parses the options, generates the case and prints ra_bench_table (see
 * src/audit/bench.h for what is timed and how), or with --sm-clock the SM
 * clock probe's rows (src/gpu/clock_probe.h).  The table goes to stdout
 * in --format; --json FILE writes the same rows as JSON too.  Exit status:
 * 0 when every matching variant ran (or was skipped), 1 when one failed,
 * 2 for bad usage, a case that cannot be made or a probe without a device.
 */

#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/bench.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/io.h"
#include "gpu/clock_probe.h"

static void print_help(FILE *f)
{
    fprintf(f,
            "usage: recaudit bench --variant GLOB [--op OP] --shape SHAPE [--regime NAME]\n"
            "                      [--dtype f32|bf16|f16|f64] [--seed N] [--FLAG]...\n"
            "                      [--fwd-only] [--reps N] [--warmup N] [--plugin LIB.so]...\n"
            "                      [--threads N] [--format text|md|csv|json] [--json FILE]\n"
            "       recaudit bench --sm-clock [--clock-ms N] [--format F] [--json FILE]\n"
            "\n"
            "Times every variant matching GLOB on one generated case: --warmup untimed\n"
            "runs, then --reps repetitions of the forward and the backward; prints the\n"
            "median, min and max in ms of fwd, bwd and fwd+bwd (their sum per\n"
            "repetition), the nominal TFLOP/s and the GB/s of compulsory traffic.\n"
            "For a variant with forward_backward (a training step in one call), fwd+bwd\n"
            "times that call instead (note 'one call (forward_backward)'), and the row\n"
            "fails unless its tensors equal the separate calls' bit for bit.\n"
            "\n"
            "Timers: CUDA variants time their kernels alone with CUDA events, the L2\n"
            "cache flushed (a write of twice its size) after the inputs are on the\n"
            "device: no copies, dtype conversions or allocations are in the time\n"
            "(timer 'events'). CPU variants time their whole call (timer 'variant');\n"
            "plugins that do not time themselves are timed around the call ('wall').\n"
            "\n"
            "TFLOP/s: the operation's nominal count over the median time, the same\n"
            "count for every variant so that the column compares them:\n");
    for (const ra_op *const *op = ra_ops(); *op; op++)
        fprintf(f, "  %-6s %s\n", (*op)->name,
                (*op)->flops_doc ? (*op)->flops_doc : "(no count stated: no rate printed)");
    fprintf(f,
            "GB/s: bytes of the inputs (and cotangents) read and of the outputs (and\n"
            "gradients) written, in their storage dtypes, over the median time; fwd+bwd\n"
            "counts the inputs twice, a fused call's once.\n"
            "\n"
            "--sm-clock times no variant: it measures the SM clock of CUDA device 0\n"
            "under three loads, one block of 8 warps per SM with no memory traffic:\n"
            "fp32 FFMA chains, mma.sync m16n8k8 tf32 and m16n8k16 bf16. Each block\n"
            "reads clock64() and %%globaltimer at its start and end; sm_mhz is cycles\n"
            "over nanoseconds (median, min and max over the blocks), after an untimed\n"
            "run of the same length. A GPU may clock tensor-core work lower than FFMA\n"
            "work, so kernels of different precisions can differ in time by more\n"
            "than in cycles.\n"
            "\n"
            "options:\n"
            "  --variant GLOB       variants to time (shell pattern, e.g. 'gdn.cuda.*')\n"
            "  --op OP              operation (default: that of the matching variants)\n"
            "  --shape S            the case's shape (required; syntax: 'recaudit gen --help')\n"
            "  --regime NAME        input distribution (default: the operation's first;\n"
            "                       'recaudit list regimes'; gdn's compose as A+B+...)\n"
            "  --dtype D            input dtype (default f32)\n"
            "  --seed N             seed (default 0)\n");
    ra_cli_help_flags(f);
    fprintf(f,
            "  --fwd-only           time the forward alone\n"
            "  --reps N             timed repetitions (default 10)\n"
            "  --warmup N           untimed runs first (default 1)\n"
            "  --plugin LIB.so      load a variant plugin (repeatable)\n"
            "  --threads N          CPU threads for the CPU variants\n"
            "  --format F           table format: text (default), md, csv, json\n"
            "  --json FILE          also write the rows as JSON ('-': stdout)\n"
            "  --sm-clock           measure the SM clock under FFMA and mma loads instead\n"
            "  --clock-ms N         length of each --sm-clock load in ms (default 500)\n"
            "  -h, --help           this help\n"
            "\n"
            "example:\n"
            "  recaudit bench --variant 'gdn.cuda.chunk64.*' --dtype bf16 \\\n"
            "      --shape B=1,T=8192,Hk=16,Hv=32,K=128,V=128\n");
}

enum { OPT_REPS = RA_CLI_OWN, OPT_WARMUP, OPT_SM_CLOCK, OPT_CLOCK_MS };

/* The command's own options. */
typedef struct {
    ra_bench_opts bench;
    int timing;    /* --reps or --warmup given */
    int sm_clock;  /* --sm-clock */
    long clock_ms; /* --clock-ms, 0 when not given */
} bench_cli;

static const struct option bench_options[] = {
    RA_CLI_OPTION_VARIANT,
    RA_CLI_CASE_OPTIONS,
    RA_CLI_OPTION_FWD_ONLY,
    {"reps", required_argument, NULL, OPT_REPS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"sm-clock", no_argument, NULL, OPT_SM_CLOCK},
    {"clock-ms", required_argument, NULL, OPT_CLOCK_MS},
    RA_CLI_OPTION_PLUGIN,
    RA_CLI_OPTION_THREADS,
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTION_JSON,
    RA_CLI_OPTIONS_END,
};

static int bench_option(void *ctx, const ra_cli_args *cli, int code, const char *value)
{
    (void)cli;
    bench_cli *o = ctx;
    long v;
    if (code == OPT_REPS) {
        if (ra_cli_parse_int(&v, "bench", "--reps", value, 1, 1000000))
            return 2;
        o->bench.reps = (int)v, o->timing = 1;
    } else if (code == OPT_WARMUP) {
        if (ra_cli_parse_int(&v, "bench", "--warmup", value, 0, 1000000))
            return 2;
        o->bench.warmup = (int)v, o->timing = 1;
    } else if (code == OPT_SM_CLOCK) {
        o->sm_clock = 1;
    } else {
        if (ra_cli_parse_int(&o->clock_ms, "bench", "--clock-ms", value, 1, 60000))
            return 2;
    }
    return 0;
}

static const ra_cli_syntax bench_syntax = {.cmd = "bench",
                                           .shortopts = ":h",
                                           .longopts = bench_options,
                                           .help = print_help,
                                           .own = bench_option,
                                           .style = RA_CLI_BARE,
                                           .late = RA_CLI_BIT(RA_CLI_DTYPE)};

/* The table as JSON into path ('-': stdout). */
static ra_status write_json(const char *path, const ra_table *t)
{
    if (strcmp(path, "-") == 0)
        return ra_table_write(t, stdout, RA_FMT_JSON);
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        RA_ERROR("bench: out of memory for the JSON rows", RA_ENOMEM);
    ra_status st = ra_table_write(t, mem, RA_FMT_JSON);
    if (fclose(mem) != 0 && st == RA_OK)
        RA_REPORTF(st = RA_ENOMEM, "bench: out of memory for the JSON rows");
    if (st == RA_OK)
        st = ra_file_write_atomic(path, (const uint8_t *)buf, len);
    free(buf);
    return st;
}

static int bench(const ra_cli_args *a, const ra_case_spec *id, const ra_bench_opts *opts)
{
    ra_registry *r;
    if (ra_registry_new_with_plugins(&r, a->plugins) != RA_OK)
        return 2;
    ra_bench_opts o = *opts;
    o.threads = (int)a->threads;
    ra_bench_rows rows;
    ra_bench_rows_init(&rows);
    ra_status st = RA_OK;
    const size_t nv = ra_audit_count_variants(r, a->variant, id->op);
    if (nv == 0)
        RA_REPORTF(st = RA_ENOTFOUND,
                   "bench: no %s variant matches '%s' (see 'recaudit list variants')", id->op,
                   a->variant);
    if (st == RA_OK) {
        o.progress = ra_progress_start("bench", (int64_t)nv, "variants");
        st = ra_bench_case(&rows, r, a->variant, id, &o);
        ra_progress_finish(o.progress);
    }
    ra_table *t = NULL;
    if (st == RA_OK)
        st = ra_bench_table(&t, &rows);
    if (st == RA_OK) {
        FILE *info = ra_cli_info_stream(a->fmt);
        char flags[128];
        ra_case_spec_flags_format(flags, sizeof flags, id, " ");
        fprintf(info, "bench: %s %s regime=%s dtype=%s seed=%llu%s%s reps=%d warmup=%d\n",
                id->op, id->shape, id->regime, id->dtype, id->seed, flags,
                id->bwd ? "" : " fwd-only", o.reps, o.warmup);
        st = ra_table_write(t, stdout, a->fmt);
    }
    if (st == RA_OK && a->json)
        st = write_json(a->json, t);
    const int rc = st != RA_OK ? ra_status_exit_code(st) : rows.failed ? 1 : 0;
    ra_table_free(t);
    ra_bench_rows_clear(&rows);
    ra_registry_free(r);
    return rc;
}

/* --sm-clock: the probe's table (ra_bench_clock_table). */
static int sm_clock(const ra_cli_args *a, long ms)
{
    ra_table *t = NULL;
    ra_progress *pr = ra_progress_start("bench", RA_GPU_LOADS, "loads");
    ra_status st = ra_bench_clock_table(&t, (double)ms, pr);
    ra_progress_finish(pr);
    if (st == RA_OK) {
        fprintf(ra_cli_info_stream(a->fmt), "bench: sm clock, %ld ms a load\n", ms);
        st = ra_table_write(t, stdout, a->fmt);
    }
    if (st == RA_OK && a->json)
        st = write_json(a->json, t);
    ra_table_free(t);
    return st == RA_OK ? 0 : ra_status_exit_code(st);
}

int ra_cmd_bench(int argc, char **argv)
{
    ra_cli_args a;
    bench_cli c = {0};
    ra_bench_opts_init(&c.bench);
    int rc = ra_cli_parse(&a, &bench_syntax, argc, argv, &c);
    if (rc != RA_CLI_GO)
        return rc;
    rc = ra_cli_no_more(&a);
    if (rc == 0 && c.sm_clock) {
        /* none of the variant timing's options applies */
        if (a.variant || a.op || a.shape || a.regime || a.dtype_text || a.nflags || a.nparams ||
            a.fwd_only || a.plugins || a.threads || c.timing)
            rc = ra_cli_usage_error("bench", "--sm-clock times no variant: it takes only "
                                             "--clock-ms, --format and --json");
        else
            rc = sm_clock(&a, c.clock_ms ? c.clock_ms : 500);
        ra_cli_args_clear(&a);
        return rc;
    }
    if (rc == 0 && c.clock_ms)
        rc = ra_cli_usage_error("bench", "--clock-ms goes with --sm-clock");
    if (rc == 0 && !a.variant)
        rc = ra_cli_usage_error("bench", "--variant GLOB is required (e.g. 'gdn.cuda.*')");
    if (rc == 0 && !a.op)
        rc = ra_cli_op_of_variants(&a, "bench");
    if (rc == 0 && !a.shape)
        rc = ra_cli_usage_error("bench", "--shape is required (syntax: 'recaudit gen --help')");
    ra_case_spec id;
    if (rc == 0)
        rc = ra_cli_case_spec(&id, &a);
    if (rc == 0)
        rc = bench(&a, &id, &c.bench);
    ra_cli_args_clear(&a);
    return rc;
}
