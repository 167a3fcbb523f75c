/* `recaudit gen`: write a case file (inputs and cotangents) for one operation. */
#include <config.h>

#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"
#include "core/op.h"

/*
 * Options are collected first and checked as a whole (missing --op,
 * --shape or -o are usage errors, exit 2); the operation's generator then
 * parses the shape and draws the tensors.  Generation is a pure function
 * of the arguments (GSL mt19937 streams per tensor, basic-operation
 * transforms: src/core/rng.h), so the same command writes the same bytes
 * on every machine.  --fwd-only leaves the cotangents out (the case then
 * serves forward runs only).  The output must be .safetensors: a case holds several
 * named tensors plus metadata, which one .npy array cannot.
 */

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit gen --op OP --shape SHAPE [options] -o FILE.safetensors\n"
               "\n"
               "Writes a case file: the inputs and output cotangents of one operation,\n"
               "drawn from an input regime with a fixed seed.  The same arguments give\n"
               "the same bytes on every machine.\n"
               "\n"
               "options:\n"
               "  --op OP              operation ('recaudit list ops')\n"
               "  --shape SHAPE        in the operation's syntax:\n");
    for (const ra_op *const *o = ra_ops(); *o; o++)
        fprintf(f, "                         %s: %s\n", (*o)->name, (*o)->shape_example);
    fprintf(f, "  --dtype T            storage of the inputs and cotangents: f32 (default),\n"
               "                       bf16, f16, f64; gates and states stay f32 (f64 when T\n"
               "                       is f64): 'recaudit list tensors' says which\n"
               "  --regime NAME        input distribution ('recaudit list regimes'; default:\n"
               "                       the operation's first); gdn's compose as A+B+...\n"
               "                       in list order, e.g. strong-decay+raw-keys+small-beta\n"
               "  --seed N             random seed (default 0)\n"
               "  --fwd-only           a forward-only case: no cotangents (gdn: no do, dht)\n");
    ra_cli_help_flags(f);
    fprintf(f, "  -o, --output FILE    the case file to write (.safetensors)\n"
               "  -h, --help           this help\n"
               "\n"
               "example:\n"
               "  recaudit gen --op gdn --shape B=1,T=64,Hk=1,Hv=2,K=16,V=16 --dtype bf16 \\\n"
               "      --seed 7 -o case.safetensors\n");
}

static const struct option gen_options[] = {
    RA_CLI_CASE_OPTIONS,
    RA_CLI_OPTION_FWD_ONLY,
    RA_CLI_OPTION_OUTPUT,
    RA_CLI_OPTIONS_END,
};

static const ra_cli_syntax gen_syntax = {.cmd = "gen",
                                         .shortopts = ":o:h",
                                         .longopts = gen_options,
                                         .help = print_help,
                                         .style = RA_CLI_HINT};

/* The options, checked as a whole: 0, or the exit status. */
static int check_args(const ra_cli_args *a)
{
    if (ra_cli_no_more(a))
        return 2;
    if (!a->op)
        return ra_cli_usage_error("gen", "missing --op (one of: 'recaudit list ops')");
    if (!a->shape)
        return ra_cli_usage_error("gen", "missing --shape");
    if (!a->output)
        return ra_cli_usage_error("gen", "missing -o FILE.safetensors");
    if (!ra_cli_ends_with(a->output, ".safetensors"))
        return ra_cli_usage_error("gen",
                                  "-o '%s': a case holds several tensors and metadata, so it is "
                                  "written as .safetensors (.npy holds one array)",
                                  a->output);
    return 0;
}

int ra_cmd_gen(int argc, char **argv)
{
    ra_cli_args a;
    int rc = ra_cli_parse(&a, &gen_syntax, argc, argv, NULL);
    if (rc != RA_CLI_GO)
        return rc;
    rc = check_args(&a);
    ra_case_spec spec;
    if (!rc)
        rc = ra_cli_case_spec(&spec, &a);
    ra_cli_args_clear(&a);
    if (rc)
        return rc;
    ra_case c;
    ra_case_init(&c);
    ra_status st = ra_case_spec_generate(&c, &spec);
    if (st == RA_OK && !spec.bwd) /* --fwd-only: the backward's inputs are left out */
        ra_case_drop_role(&c, ra_op_find(spec.op), RA_ROLE_COTANGENT);
    if (st == RA_OK)
        st = ra_case_save(&c, a.output);
    ra_case_clear(&c);
    if (st == RA_EINVAL) /* the shape or regime did not fit: bad usage */
        return ra_cli_see_help("gen");
    return ra_status_exit_code(st);
}
