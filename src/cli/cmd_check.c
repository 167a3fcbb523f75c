/* `recaudit check`: a result file against the certified reference of its case. */
#include <config.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/gates.h"
#include "audit/registry.h"
#include "audit/report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/case.h"
#include "core/op.h"
#include "ref/ref.h"

/*
 * The reference comes from --ref or from ra_ref_compute (cached), with
 * gradients when the case carries a cotangent and the result is not
 * declared forward-only (metadata forward_only=true, written by `run
 * --fwd-only` and by `run` of a variant without a backward).  It must be
 * certified unless --allow-uncertified; its certified bits are always
 * printed.  The result must hold every tensor the case calls for, as the
 * operation's row lists them: every output, and the gradient d<x> of every
 * input x the case holds when gradients are due.  A missing one is a FAIL
 * row naming it, never a silent pass: a kernel that forgets ht or dk must
 * not go green.
 *
 * Gates are selected by precision class (data/gates.tsv), never by name.
 * The class is --class C, else the declared class of the variant named by
 * --variant or by the result's "variant" metadata when that variant is
 * registered (built in or --plugin); a --class that contradicts a
 * registered variant's declaration is refused (exit 2).  Once a variant or
 * a class is named, a verdict is asked for and every tensor must be gated:
 * a named variant that is not registered and no --class leaves every
 * tensor ungated, which FAILS with a note asking for --class (an unknown
 * name must not turn a verdict into a metrics report).  With neither, the
 * metrics alone are reported (exit 0).
 *
 * A result whose metadata names a different case (shape, seed, regime,
 * dtype) than the case file is refused: comparing it would measure the
 * mix-up, not the kernel.  A --ref file must moreover carry the input_hash
 * of this case's tensors (XXH3-64, src/ref/cache.c): metadata alone cannot
 * tell an edited case from the original, so a reference of another case
 * with equal metadata, or one written before input hashes existed, is
 * refused (exit 2).  A reference that is not representable in f64 (a
 * non-finite value) gives no verdict, --allow-uncertified or not.
 */

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit check CASE.safetensors RESULT.safetensors [--ref REF.safetensors]\n"
               "                      [--variant NAME] [--class C] [--plugin LIB.so]\n"
               "                      [--gates FILE] [--format text|md|csv|json]\n"
               "                      [--allow-uncertified] [--threads N]\n"
               "\n"
               "Compares every output and gradient of RESULT with the certified reference of\n"
               "CASE: max_ulp and p99_ulp (in the result's storage dtype, over elements\n"
               "with |ref| >= 2^-10 rms(ref)), max_ulp_rms (max|err| in ulps of rms(ref)),\n"
               "ulp_cls (max|err| / (u rms(ref)), u the unit roundoff of the precision\n"
               "class; '-' without a class), rel_rms, max_rel, max_abs, cos, NaN/Inf counts\n"
               "and the worst element. With\n"
               "a precision class (--class, or the declared class of the registered variant\n"
               "named by --variant or the result's metadata) the gates of data/gates.tsv\n"
               "for that class apply and the exit status is 1 when one fails; a named\n"
               "variant that is not registered, without --class, fails ungated.\n"
               "\n"
               "options:\n"
               "  --ref FILE           reference file ('recaudit ref'); default: computed, cached\n"
               "  --variant NAME       gate as this variant (default: the result's metadata)\n"
               "  --class C            precision class to gate by: f64 f32 ieee tf32 tf32x3 bf16\n"
               "                       (default: the registered variant's declared class)\n"
               "  --plugin LIB.so      load a plugin's variants (repeatable)\n"
               "  --gates FILE         gates table (default: the shipped data/gates.tsv)\n"
               "  --format F           text (default), md, csv or json\n"
               "  --allow-uncertified  accept a reference below the certified bits\n"
               "  --threads N          threads for computing the reference\n"
               "  -h, --help           this help\n"
               "\n"
               "example:\n"
               "  recaudit check case.safetensors result.safetensors --variant gdn.cpu.f32\n");
}

typedef struct check_args {
    const char *case_path, *result_path, *ref_path;
    const char *pclass;     /* --class */
    const ra_cli_args *cli; /* --variant, --gates, --format, --threads, ... */
} check_args;

/* other (a result or a reference) was made from case c, as far as both
   files' metadata say. */
static ra_status same_case(const ra_case *c, const char *case_path, const ra_case *other,
                           const char *other_path)
{
    static const char *const keys[] = {"shape", "seed", "regime", "dtype"};
    if (!other->op || !c->op || strcmp(other->op, c->op) != 0)
        RA_ERRORF(RA_EINVAL, "%s: op '%s' but the case %s is '%s'", other_path,
                  other->op ? other->op : "-", case_path, c->op ? c->op : "-");
    const ra_op *op = ra_op_find(c->op);
    const size_t ngeneric = sizeof keys / sizeof keys[0];
    for (size_t i = 0;; i++) {
        /* the generic keys, then the operation's parameters */
        const char *key = i < ngeneric ? keys[i]
                          : op && op->params && op->params[i - ngeneric].name
                              ? op->params[i - ngeneric].name
                              : NULL;
        if (!key)
            break;
        const char *x = ra_case_param(c, key), *y = ra_case_param(other, key);
        if (x && y && strcmp(x, y) != 0)
            RA_ERRORF(RA_EINVAL, "%s: metadata %s=%s, but the case %s has %s=%s: not made from it",
                      other_path, key, y, case_path, key, x);
    }
    return RA_OK;
}

/* 1 when the case carries a cotangent of an output (gradients are due). */
static int has_cotangent(const ra_case *c, const ra_op *op)
{
    for (const ra_op_tensor *t = op->tensors; t->name; t++)
        if (t->role == RA_ROLE_COTANGENT && ra_tensors_find(&c->tensors, t->name))
            return 1;
    return 0;
}

/* The NULL-ended names the result must hold: the op's outputs (an optional
   one when the reference has it), then, with grads, d<x> for every input x
   in the case.  Each must be in the reference. */
static ra_status expected_names(const char ***out, const ra_op *op, const ra_case *c,
                                const ra_case *ref, int grads, const check_args *a)
{
    size_t n = 0;
    for (const ra_op_tensor *t = op->tensors; t->name; t++)
        n++;
    const char **names = calloc(n + 1, sizeof *names);
    if (!names)
        RA_ERROR("out of memory", RA_ENOMEM);
    n = 0;
    for (const ra_op_tensor *t = op->tensors; t->name; t++) {
        int want = t->role == RA_ROLE_OUTPUT
                       ? !t->optional || ra_tensors_find(&ref->tensors, t->name)
                       : t->role == RA_ROLE_GRADIENT && grads && ra_is_gradient_of(t->name, c);
        if (!want)
            continue;
        if (!ra_tensors_find(&ref->tensors, t->name)) {
            free(names);
            RA_ERRORF(RA_EINVAL, "%s: the reference lacks %s %s, which %s calls for (%s)",
                      a->ref_path ? a->ref_path : "computed reference",
                      t->role == RA_ROLE_OUTPUT ? "output" : "gradient", t->name, a->case_path,
                      a->ref_path ? "recompute it with 'recaudit ref' without --no-grads"
                                  : "internal error");
        }
        names[n++] = t->name;
    }
    *out = names;
    return RA_OK;
}

static ra_status get_reference(ra_case *ref, const ra_case *c, int grads, const check_args *a)
{
    if (a->ref_path) {
        RA_TRY(ra_case_load(ref, a->ref_path));
        RA_TRY(same_case(c, a->case_path, ref, a->ref_path));
        const char *stored = ra_case_param(ref, "input_hash");
        char h[17];
        if (!stored)
            RA_ERRORF(RA_EINVAL,
                      "%s: no input_hash (written before references recorded their case's "
                      "inputs): recompute it with 'recaudit ref %s'",
                      a->ref_path, a->case_path);
        RA_TRY(ra_ref_input_hash(h, c));
        if (strcmp(stored, h) != 0)
            RA_ERRORF(RA_EINVAL,
                      "%s: not the reference of %s: its input_hash %s differs from the case's "
                      "%s (the case's tensors differ from those it was computed from)",
                      a->ref_path, a->case_path, stored, h);
        return RA_OK;
    }
    ra_ref_opts o;
    ra_ref_opts_init(&o);
    o.grads = grads;
    o.threads = (int)a->cli->threads;
    return ra_ref_compute(ref, c, &o, a->case_path);
}

/* The class the gates are selected by (*out NULL: none): --class, else the
   declaration of the registered variant; a contradiction is refused. */
static ra_status class_of(const char **out, const char *given, const char *variant,
                          const ra_registry *reg)
{
    const ra_variant *v = variant && reg ? ra_registry_find(reg, variant) : NULL;
    *out = given;
    if (!v)
        return RA_OK;
    if (given && strcmp(given, v->pclass) != 0)
        RA_ERRORF(RA_EINVAL,
                  "--class %s contradicts variant %s, which declares precision class %s; a "
                  "registered variant is gated by its declared class",
                  given, variant, v->pclass);
    *out = v->pclass;
    return RA_OK;
}

static int check(const check_args *a)
{
    ra_case c, res, ref;
    ra_case_init(&c);
    ra_case_init(&res);
    ra_case_init(&ref);
    ra_gates gates;
    ra_gates_init(&gates);
    ra_rows rows;
    ra_rows_init(&rows);
    FILE *info = ra_cli_info_stream(a->cli->fmt);
    const char *variant = a->cli->variant, *pclass = NULL;
    ra_registry *reg = NULL;
    const char **expected = NULL;
    const ra_op *op = NULL;
    int grads = 0, fwd_only = 0;

    ra_status st = ra_case_load(&c, a->case_path);
    if (st == RA_OK)
        st = ra_case_load(&res, a->result_path);
    if (st == RA_OK)
        st = same_case(&c, a->case_path, &res, a->result_path);
    if (st == RA_OK)
        st = ra_op_require(&op, c.op, a->case_path);
    if (st == RA_OK)
        st = ra_case_param_bool(&fwd_only, &res, "forward_only", 0);
    if (st == RA_OK) {
        grads = !fwd_only && has_cotangent(&c, op);
        if (fwd_only && has_cotangent(&c, op))
            fprintf(info, "result %s is forward-only (forward_only=true): gradients not checked\n",
                    a->result_path);
        st = get_reference(&ref, &c, grads, a);
    }
    if (st == RA_OK)
        st = expected_names(&expected, op, &c, &ref, grads, a);
    if (st == RA_OK) {
        char bits[1024];
        const char *cert = ra_case_param(&ref, "certified");
        const char *prec = ra_case_param(&ref, "ref_prec");
        const char *cprec = ra_case_param(&ref, "ref_check_prec");
        ra_ref_bits_format(bits, sizeof bits, &ref);
        /* A file's "cache" entry describes the run that wrote it: not shown. */
        const char *cache = a->ref_path ? NULL : ra_case_param(&ref, "cache");
        fprintf(info, "reference: %s%s%s%s, precision %s (checked at %s), certified %s; bits: %s\n",
                a->ref_path ? a->ref_path : "computed", cache ? " (cache " : "", cache ? cache : "",
                cache ? ")" : "", prec ? prec : "?", cprec ? cprec : "-", cert ? cert : "absent",
                bits);
        const char *what = a->ref_path ? a->ref_path : a->case_path;
        st = ra_ref_require_representable(&ref, what);
        if (st == RA_OK && !a->cli->allow_uncertified)
            st = ra_ref_require_certified(&ref, what);
    }
    if (st == RA_OK && !variant)
        variant = ra_case_param(&res, "variant");
    if (st == RA_OK && variant)
        st = ra_registry_new_with_plugins(&reg, a->cli->plugins);
    if (st == RA_OK)
        st = class_of(&pclass, a->pclass, variant, reg);
    const int verdict = st == RA_OK && (variant || pclass);
    if (verdict)
        st = ra_gates_load(&gates, a->cli->gates);
    if (st == RA_OK) {
        for (size_t i = 0; i < res.tensors.n; i++)
            if (!ra_tensors_find(&ref.tensors, res.tensors.items[i]->name))
                fprintf(stderr,
                        "recaudit check: note: %s: tensor '%s' has no reference; not checked\n",
                        a->result_path, res.tensors.items[i]->name);
        char repro[1024];
        snprintf(repro, sizeof repro, "recaudit check %s %s%s%s%s%s%s%s%s%s", a->case_path,
                 a->result_path, a->ref_path ? " --ref " : "", a->ref_path ? a->ref_path : "",
                 variant ? " --variant " : "", variant ? variant : "", a->pclass ? " --class " : "",
                 a->pclass ? a->pclass : "", a->cli->gates ? " --gates " : "",
                 a->cli->gates ? a->cli->gates : "");
        for (size_t i = 0; i < a->cli->nplugins; i++) /* the variant's class comes from them */
            snprintf(repro + strlen(repro), sizeof repro - strlen(repro), " --plugin %s",
                     a->cli->plugins[i]);
        ra_case_spec id;
        ra_case_spec_from_case(&id, &c, 1);
        ra_check_opts co = {verdict ? &gates : NULL, variant, 1, expected, repro, pclass};
        st = ra_check_compare(&rows, &res, &ref, &id, &co);
    }
    if (st == RA_OK)
        st = ra_report_metrics_table(stdout, &rows, a->cli->fmt, 0);
    if (st == RA_OK && verdict) {
        ra_report_failures(info, &rows);
        fprintf(info, "gates of %s (class %s): ", variant ? variant : "-",
                pclass ? pclass : "none: give --class");
        ra_report_summary(info, &rows);
    }
    int rc = st != RA_OK ? ra_status_exit_code(st) : rows.failed ? 1 : 0;
    free(expected);
    ra_rows_clear(&rows);
    ra_gates_clear(&gates);
    ra_registry_free(reg);
    ra_case_clear(&ref);
    ra_case_clear(&res);
    ra_case_clear(&c);
    return rc;
}

enum { OPT_REF = RA_CLI_OWN, OPT_CLASS };

static const struct option check_options[] = {
    {"ref", required_argument, NULL, OPT_REF},
    {"class", required_argument, NULL, OPT_CLASS},
    RA_CLI_OPTION_VARIANT,
    RA_CLI_OPTION_PLUGIN,
    RA_CLI_OPTION_GATES,
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTION_ALLOW_UNCERTIFIED,
    RA_CLI_OPTION_THREADS,
    RA_CLI_OPTIONS_END,
};

static int check_option(void *ctx, const ra_cli_args *cli, int code, const char *value)
{
    (void)cli;
    check_args *a = ctx;
    if (code == OPT_REF) {
        a->ref_path = value;
        return 0;
    }
    if (!ra_pclass_known(value))
        return ra_cli_usage_error("check",
                                  "--class '%s' is not a precision class (f64, f32, ieee, tf32, "
                                  "tf32x3, bf16)",
                                  value);
    a->pclass = value;
    return 0;
}

static const ra_cli_syntax check_syntax = {.cmd = "check",
                                           .shortopts = ":h",
                                           .longopts = check_options,
                                           .help = print_help,
                                           .own = check_option};

int ra_cmd_check(int argc, char **argv)
{
    ra_cli_args cli;
    check_args a = {NULL, NULL, NULL, NULL, &cli};
    int rc = ra_cli_parse(&cli, &check_syntax, argc, argv, &a);
    if (rc != RA_CLI_GO)
        return rc;
    if (argc - optind != 2)
        rc = ra_cli_usage_error("check", "expected CASE.safetensors RESULT.safetensors");
    else {
        a.case_path = argv[optind];
        a.result_path = argv[optind + 1];
        rc = check(&a);
    }
    ra_cli_args_clear(&cli); /* the --plugin list */
    return rc;
}
