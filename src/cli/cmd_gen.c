/* `recaudit gen`: write a case file (inputs and cotangents) for one operation. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/case.h"
#include "core/gen_gdn.h"
#include "core/ops.h"
#include "core/tensor.h"

/*
 * Options are collected first and checked as a whole (missing --op,
 * --shape or -o are usage errors, exit 2); the operation's generator then
 * parses the shape and draws the tensors.  Generation is a pure function
 * of the arguments (GSL mt19937 streams per tensor, basic-operation
 * transforms: src/core/rng.h), so the same command writes the same bytes
 * on every machine.  The output must be .safetensors: a case holds several
 * named tensors plus metadata, which one .npy array cannot.
 */

typedef struct gen_args {
    const char *op, *shape, *regime, *out;
    ra_dtype dtype;
    unsigned long long seed;
    int h0, l2norm;
} gen_args;

static ra_status gen_gdn(ra_case *c, const gen_args *a)
{
    ra_gdn_gen_opts o;
    memset(&o, 0, sizeof o);
    RA_TRY(ra_gdn_shape_parse(&o.shape, a->shape));
    o.dtype = a->dtype;
    o.regime = a->regime;
    o.seed = a->seed;
    o.h0 = a->h0;
    o.l2norm = a->l2norm;
    return ra_gdn_generate(c, &o);
}

/* Operations that have a generator (a subset of ra_ops()). */
static const struct {
    const char *op;
    ra_status (*gen)(ra_case *c, const gen_args *a);
} generators[] = {
    {"gdn", gen_gdn},
};

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit gen --op OP --shape SHAPE [options] -o FILE.safetensors\n"
               "\n"
               "Writes a case file: the inputs and output cotangents of one operation,\n"
               "drawn from an input regime with a fixed seed.  The same arguments give\n"
               "the same bytes on every machine.\n"
               "\n"
               "options:\n"
               "  --op OP            operation ('recaudit list ops'): gdn\n"
               "  --shape SHAPE      gdn: B=..,T=..,Hk=..,Hv=..,K=..,V=.. (any order;\n"
               "                     H= sets Hk and Hv, D= sets K and V)\n"
               "  --dtype T          storage of q, k, v, do: f32 (default), bf16, f16, f64;\n"
               "                     g, beta, h0, dht are f32 (f64 when T is f64)\n"
               "  --regime NAME      input distribution ('recaudit list regimes'; default:\n"
               "                     default)\n"
               "  --seed N           random seed (default 0)\n"
               "  --h0               also draw an initial state h0\n"
               "  --l2norm           set l2norm=true: the kernel L2-normalises q and k\n"
               "  -o, --output FILE  the case file to write (.safetensors)\n"
               "  -h, --help         this help\n"
               "\n"
               "example:\n"
               "  recaudit gen --op gdn --shape B=1,T=64,Hk=1,Hv=2,K=16,V=16 --dtype bf16 \\\n"
               "      --seed 7 -o case.safetensors\n");
}

/* After a library message about an option value: the hint, exit 2. */
static int see_help(void)
{
    fprintf(stderr, "(see 'recaudit gen --help')\n");
    return 2;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Parses argv into a; returns 0, or the exit status (help: -1 -> 0). */
static int parse_args(gen_args *a, int argc, char **argv)
{
    enum { OPT_OP = 256, OPT_SHAPE, OPT_DTYPE, OPT_REGIME, OPT_SEED, OPT_H0, OPT_L2NORM };
    static const struct option longopts[] = {
        {"op", required_argument, NULL, OPT_OP},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"dtype", required_argument, NULL, OPT_DTYPE},
        {"regime", required_argument, NULL, OPT_REGIME},
        {"seed", required_argument, NULL, OPT_SEED},
        {"h0", no_argument, NULL, OPT_H0},
        {"l2norm", no_argument, NULL, OPT_L2NORM},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->dtype = RA_F32;
    optind = 0;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1;) {
        switch (c) {
        case 'h':
            print_help(stdout);
            return -1;
        case 'o':
            a->out = optarg;
            break;
        case OPT_OP:
            a->op = optarg;
            break;
        case OPT_SHAPE:
            a->shape = optarg;
            break;
        case OPT_REGIME:
            a->regime = optarg;
            break;
        case OPT_H0:
            a->h0 = 1;
            break;
        case OPT_L2NORM:
            a->l2norm = 1;
            break;
        case OPT_DTYPE:
            if (ra_dtype_parse(&a->dtype, optarg) != RA_OK)
                return see_help(); /* the library named the value */
            break;
        case OPT_SEED:
            if (ra_cli_parse_u64(&a->seed, "gen", "--seed", optarg))
                return 2;
            break;
        default:
            return ra_cli_getopt_error("gen", c, argv, optind, longopts);
        }
    }
    if (optind < argc)
        return ra_cli_usage_error("gen", "unexpected argument '%s'", argv[optind]);
    if (!a->op)
        return ra_cli_usage_error("gen", "missing --op (one of: 'recaudit list ops')");
    if (!a->shape)
        return ra_cli_usage_error("gen", "missing --shape");
    if (!a->out)
        return ra_cli_usage_error("gen", "missing -o FILE.safetensors");
    if (!ends_with(a->out, ".safetensors"))
        return ra_cli_usage_error("gen",
                                  "-o '%s': a case holds several tensors and metadata, so it is "
                                  "written as .safetensors (.npy holds one array)",
                                  a->out);
    return 0;
}

int ra_cmd_gen(int argc, char **argv)
{
    gen_args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    ra_status (*gen)(ra_case *, const gen_args *) = NULL;
    for (size_t i = 0; i < sizeof generators / sizeof generators[0]; i++)
        if (strcmp(generators[i].op, a.op) == 0)
            gen = generators[i].gen;
    if (!gen)
        return ra_cli_usage_error("gen",
                                  ra_op_find(a.op)
                                      ? "--op '%s': this operation has no generator yet"
                                      : "--op '%s': unknown operation (gdn, ...: "
                                        "'recaudit list ops')",
                                  a.op);
    ra_case c;
    ra_case_init(&c);
    ra_status st = gen(&c, &a);
    if (st == RA_OK)
        st = ra_case_save(&c, a.out);
    ra_case_clear(&c);
    if (st == RA_EINVAL) /* the shape or regime did not fit: bad usage */
        return see_help();
    return ra_status_exit_code(st);
}
