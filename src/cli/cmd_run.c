/* `recaudit run`: one kernel variant on a case file, result to a file. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/registry.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"

/*
 * The forward always runs; the backward too when the variant has one, the
 * case carries cotangents (do, dht) and --fwd-only is absent.  The result
 * file holds the outputs and gradients, under the tensor names that
 * docs/gdn.md defines, in the variant's storage dtypes; its metadata is the
 * case's parameters plus "variant", so `recaudit check` can apply that
 * variant's gates, and "forward_only=true" when no backward was asked for
 * (--fwd-only) or the variant has none: `check` then checks the outputs
 * alone, and otherwise fails a result that lacks a gradient the case's
 * cotangents call for.  A variant that cannot serve the case (capability, or
 * its own refusal) is bad input: exit 2 with its reason.
 */

static void print_help(FILE *f)
{
    fprintf(
        f,
        "usage: recaudit run --variant NAME CASE.safetensors -o RESULT.safetensors\n"
        "                    [--threads N] [--fwd-only] [--plugin LIB.so]...\n"
        "                    [--timeout SECONDS] [--no-isolate]\n"
        "\n"
        "Runs one kernel variant on a case: the forward, and the backward when the\n"
        "variant has one and the case carries cotangents (then its forward_backward\n"
        "too, if it has one, which must give the same tensors bit for bit, else the\n"
        "run fails). Writes the outputs and gradients, named as the operation's doc\n"
        "does ('recaudit list tensors'), with metadata op, variant and the case's\n"
        "parameters. The variant runs in a child process with read-only inputs; a\n"
        "crash, an exit or a timeout is reported and exits 2.\n"
        "\n"
        "options:\n"
        "  --variant NAME   the variant ('recaudit list variants')\n"
        "  -o FILE          result file (.safetensors)\n"
        "  --threads N      CPU threads for the variant (default: its own choice)\n"
        "  --fwd-only       skip the backward\n"
        "  --plugin LIB.so  load a variant plugin first (repeatable)\n"
        "  --timeout S      time limit of the variant in seconds (default 600); on\n"
        "                   expiry it is killed with SIGKILL and run exits 2\n"
        "  --no-isolate     run the variant inside recaudit, not in a child process\n"
        "                   (for a debugger; also RECAUDIT_NO_ISOLATE=1)\n"
        "  -h, --help       this help\n"
        "\n"
        "example:\n"
        "  recaudit run --variant gdn.cpu.chunk64.tf32 case.safetensors -o result.safetensors\n");
}

static int run(const ra_cli_args *a, const char *case_path)
{
    const char *name = a->variant, *out_path = a->output;
    ra_registry *r = NULL;
    ra_case c;
    ra_case_init(&c);
    ra_outcome out;
    ra_outcome_init(&out);
    const ra_case *result = &out.result;
    ra_sealed sealed;
    memset(&sealed, 0, sizeof sealed);
    ra_status st = ra_registry_new_with_plugins(&r, a->plugins);
    const ra_variant *v = NULL;
    if (st == RA_OK && !(v = ra_registry_find(r, name))) {
        RA_REPORTF(RA_ENOTFOUND, "run: no variant '%s' (see 'recaudit list variants')", name);
        st = RA_ENOTFOUND;
    }
    if (st == RA_OK)
        st = ra_case_load(&c, case_path);
    char why[256];
    if (st == RA_OK && !ra_variant_supports(v, &c, 0, why, sizeof why)) {
        RA_REPORTF(RA_EUNSUPPORTED, "run: variant %s cannot serve %s: %s", name, case_path, why);
        st = RA_EUNSUPPORTED;
    }
    ra_run rr;
    memset(&rr, 0, sizeof rr);
    rr.threads = (int)a->threads;
    rr.elapsed_ms = -1;
    ra_isolation iso;
    ra_cli_isolation(&iso, a);
    if (st == RA_OK)
        st = ra_inputs_seal(&sealed, &c);
    /* The variant's own messages go to stderr as it reports them. */
    if (st == RA_OK)
        st = ra_variant_run_guarded(&out, v, &c, !a->fwd_only, &rr, &iso, &sealed, 0);
    if (st == RA_OK && out.died[0]) {
        RA_REPORTF(RA_EINTERNAL, "run: variant %s: %s", name, out.died);
        st = RA_EINTERNAL;
    }
    if (st == RA_OK)
        st = out.fst != RA_OK ? out.fst : out.bst;
    if (st == RA_OK && (a->fwd_only || !(v->caps & RA_BWD)))
        st = ra_kv_set(&out.result.params, "forward_only", "true");
    if (st == RA_OK)
        st = ra_case_save(result, out_path);
    if (st == RA_OK) {
        printf("%s: %s on %s\n", out_path, name, case_path);
        for (size_t i = 0; i < result->tensors.n; i++) {
            const ra_tensor *t = result->tensors.items[i];
            char shape[128];
            ra_shape_format(shape, sizeof shape, t->ndim, t->shape);
            printf("  %-6s %-5s %s\n", t->name, ra_dtype_name(t->dtype), shape);
        }
        int grads = 0;
        for (size_t i = 0; i < result->tensors.n; i++)
            grads |= ra_is_gradient_of(result->tensors.items[i]->name, &c);
        if (!a->fwd_only && !grads)
            printf("  (no gradients: %s)\n", (v->caps & RA_BWD)
                                                 ? "the case carries no output cotangent"
                                                 : "the variant has no backward");
    }
    ra_outcome_clear(&out);
    ra_inputs_unseal(&sealed, &c);
    ra_case_clear(&c);
    ra_registry_free(r);
    return ra_status_exit_code(st);
}

static const struct option run_options[] = {
    RA_CLI_OPTION_VARIANT, RA_CLI_OPTION_THREADS, RA_CLI_OPTION_FWD_ONLY,
    RA_CLI_OPTION_PLUGIN,  RA_CLI_OPTION_OUTPUT,  RA_CLI_OPTION_ISOLATION,
    RA_CLI_OPTIONS_END,
};

static const ra_cli_syntax run_syntax = {
    .cmd = "run", .shortopts = ":ho:", .longopts = run_options, .help = print_help};

int ra_cmd_run(int argc, char **argv)
{
    ra_cli_args a;
    int rc = ra_cli_parse(&a, &run_syntax, argc, argv, NULL);
    if (rc != RA_CLI_GO)
        return rc;
    rc = 0;
    if (!a.variant)
        rc = ra_cli_usage_error("run", "--variant NAME is required");
    if (rc == 0 && !a.output)
        rc = ra_cli_usage_error("run", "-o RESULT.safetensors is required");
    if (rc == 0 && !ra_cli_ends_with(a.output, ".safetensors"))
        rc = ra_cli_usage_error("run", "-o '%s': the result is a .safetensors file", a.output);
    if (rc == 0 && argc - optind != 1)
        rc = ra_cli_usage_error("run", argc - optind ? "exactly one case file expected"
                                                     : "which case file?");
    if (rc == 0)
        rc = ra_cli_output_not_input("run", a.output, argv[optind]);
    if (rc == 0)
        rc = run(&a, argv[optind]);
    ra_cli_args_clear(&a);
    return rc;
}
