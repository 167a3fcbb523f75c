/* The subcommands' shared option parsing, the cases it describes and the audit set-up. */
#include <config.h>

#include "cli/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/report.h"
#include "cli/cli.h"
#include "core/io.h"
#include "core/op.h"
#include "core/tensor.h"

/*
 * Subcommands parse with getopt_long (GNU: options in any order, `--opt
 * value` and `--opt=value`, unambiguous prefixes) with opterr = 0 and a
 * leading ':' in the short-option string, so that getopt prints nothing
 * and every problem becomes one usage error naming the offending argument
 * (ra_cli_getopt_error).  getopt has already advanced optind past the
 * offending element, except inside a cluster of short options ("-xo"),
 * which is why short options are named from optopt.
 *
 * ra_cli_parse stops at the first problem, so a command reports one error
 * and exits 2.  Values are checked when they are given, except --format or
 * --dtype values a command marks late: those are checked where the command
 * first needs them, which decides which of two bad arguments is reported.
 * Every message names the subcommand; the library's own messages (a bad
 * dtype, format, shape or regime) already name the option and value, and
 * the command's style says what follows them.  The styles and the late
 * checks keep each command's messages as they were before the commands
 * shared this parser.
 *
 * A generated case is one ra_case_spec checked against the operation
 * table (ra_case_spec_check), so `gen`, `gradcheck`, `bench-ref` and
 * `audit` agree on which operations exist and how a shape is read; the
 * generation flags (--h0, --l2norm for gdn) are options made from the
 * table's flag names.
 */

int ra_cli_see_help(const char *cmd)
{
    fprintf(stderr, "(see 'recaudit %s --help')\n", cmd);
    return 2;
}

int ra_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "recaudit %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return ra_cli_see_help(cmd);
}

int ra_cli_parse_int(long *out, const char *cmd, const char *opt, const char *text, long min,
                     long max)
{
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || end == text || *end || errno == ERANGE || v < min || v > max)
        return ra_cli_usage_error(cmd, "%s expects an integer in [%ld, %ld], got '%s'", opt, min,
                                  max, text ? text : "");
    *out = v;
    return 0;
}

int ra_cli_parse_u64(unsigned long long *out, const char *cmd, const char *opt, const char *text)
{
    char *end;
    errno = 0;
    unsigned long long v = text && text[0] != '-' ? strtoull(text, &end, 10) : 0;
    if (!text || text[0] == '-' || end == text || *end || errno == ERANGE)
        return ra_cli_usage_error(cmd, "%s expects a non-negative integer, got '%s'", opt,
                                  text ? text : "");
    *out = v;
    return 0;
}

/* Long options whose name starts with the text of arg ("--se" -> 2). */
static int prefix_matches(const struct option *longopts, const char *arg, size_t n)
{
    int k = 0;
    for (const struct option *o = longopts; o && o->name; o++)
        if (strncmp(o->name, arg, n) == 0)
            k++;
    return k;
}

int ra_cli_getopt_error(const char *cmd, int ret, char *const *argv, int ind,
                        const struct option *longopts)
{
    const char *arg = ind > 0 ? argv[ind - 1] : "";
    const char *cur = argv[ind]; /* argv is NULL-terminated */
    int in_cluster = cur && cur[0] == '-' && cur[1] && cur[1] != '-' && optopt > 0 &&
                     optopt < 256 && strchr(cur + 1, optopt);
    if (!in_cluster && strncmp(arg, "--", 2) == 0) {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        if (ret == ':')
            return ra_cli_usage_error(cmd, "option '--%.*s' needs a value", (int)n, name);
        int k = prefix_matches(longopts, name, n);
        if (k == 1 && eq)
            return ra_cli_usage_error(cmd, "option '--%.*s' takes no value", (int)n, name);
        if (k > 1)
            return ra_cli_usage_error(cmd, "option '--%.*s' is ambiguous", (int)n, name);
        return ra_cli_usage_error(cmd, "unknown option '--%.*s'", (int)n, name);
    }
    if (ret == ':')
        return ra_cli_usage_error(cmd, "option '-%c' needs a value", optopt);
    return ra_cli_usage_error(cmd, "unknown option '-%c'", optopt);
}

static void args_init(ra_cli_args *a, const ra_cli_syntax *syn, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->syn = syn;
    a->argc = argc;
    a->argv = argv;
    a->fmt = RA_FMT_TEXT;
    a->dtype = RA_F32;
    optind = 0; /* 0, not 1: GNU getopt then forgets any earlier parse */
    opterr = 0;
}

void ra_cli_args_clear(ra_cli_args *a)
{
    free(a->plugins);
    a->plugins = NULL;
    a->nplugins = 0;
}

int ra_cli_bad_value(const ra_cli_args *a, const char *opt, const char *value, const char *detail)
{
    switch (a->syn->style) {
    case RA_CLI_HINT:
        return ra_cli_see_help(a->syn->cmd);
    case RA_CLI_USAGE:
        return ra_cli_usage_error(a->syn->cmd, "%s '%s'%s", opt, value, detail);
    case RA_CLI_BARE:
        break;
    }
    return 2;
}

int ra_cli_check(ra_cli_args *a, int code)
{
    if (code == RA_CLI_FORMAT && a->format && ra_format_parse(&a->fmt, a->format) != RA_OK)
        return ra_cli_bad_value(a, "--format", a->format, ": text, md, csv or json");
    if (code == RA_CLI_DTYPE && a->dtype_text &&
        ra_dtype_parse(&a->dtype, a->dtype_text) != RA_OK)
        return ra_cli_bad_value(a, "--dtype", a->dtype_text, "");
    return 0;
}

/* The plugin list holds at most every argument: sized on the first one. */
static int add_plugin(ra_cli_args *a, const char *path)
{
    if (!a->plugins && !(a->plugins = calloc((size_t)a->argc + 1, sizeof *a->plugins)))
        return ra_cli_usage_error(a->syn->cmd, "out of memory");
    a->plugins[a->nplugins++] = path;
    return 0;
}

/* --timeout SECONDS: a positive number of seconds, at most a year. */
static int parse_timeout(double *out, const char *cmd, const char *text)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !(v > 0) || v > 31536000)
        return ra_cli_usage_error(cmd, "--timeout expects seconds in (0, 31536000], got '%s'",
                                  text);
    *out = v;
    return 0;
}

void ra_cli_isolation(ra_isolation *iso, const ra_cli_args *a)
{
    ra_isolation_init(iso);
    if (a->timeout_s > 0)
        iso->timeout_s = a->timeout_s;
    const char *env = getenv("RECAUDIT_NO_ISOLATE");
    iso->in_process = a->no_isolate || (env && *env && strcmp(env, "0") != 0);
}

/* A code in a command's table that nothing handles: a bug of the table. */
static int no_handler(const char *cmd, int c)
{
    return ra_cli_usage_error(cmd, "internal error: option code %d has no handler", c);
}

/* A shared option: stores or checks its value; 0, or the exit status. */
static int shared_option(ra_cli_args *a, int c, const char *arg)
{
    const char *cmd = a->syn->cmd;
    switch (c) {
    case 'o':
        a->output = arg;
        return 0;
    case RA_CLI_OP:
        a->op = arg;
        return 0;
    case RA_CLI_SHAPE:
        a->shape = arg;
        return 0;
    case RA_CLI_REGIME:
        a->regime = arg;
        return 0;
    case RA_CLI_VARIANT:
        a->variant = arg;
        return 0;
    case RA_CLI_GATES:
        a->gates = arg;
        return 0;
    case RA_CLI_JSON:
        a->json = arg;
        return 0;
    case RA_CLI_ALLOW_UNCERTIFIED:
        a->allow_uncertified = 1;
        return 0;
    case RA_CLI_FWD_ONLY:
        a->fwd_only = 1;
        return 0;
    case RA_CLI_PLUGIN:
        return add_plugin(a, arg);
    case RA_CLI_NO_ISOLATE:
        a->no_isolate = 1;
        return 0;
    case RA_CLI_PARAM:
        if (a->nparams == RA_CLI_MAX_FLAGS)
            return ra_cli_usage_error(cmd, "at most %d --param options", RA_CLI_MAX_FLAGS);
        a->params[a->nparams++] = arg;
        return 0;
    case RA_CLI_TIMEOUT:
        return parse_timeout(&a->timeout_s, cmd, arg);
    case RA_CLI_SEED:
        return ra_cli_parse_u64(&a->seed, cmd, "--seed", arg);
    case RA_CLI_THREADS:
        return ra_cli_parse_int(&a->threads, cmd, "--threads", arg, 1, 4096);
    case RA_CLI_DTYPE:
        a->dtype_text = arg;
        return (a->syn->late & RA_CLI_BIT(c)) ? 0 : ra_cli_check(a, c);
    case RA_CLI_FORMAT:
        a->format = arg;
        return (a->syn->late & RA_CLI_BIT(c)) ? 0 : ra_cli_check(a, c);
    }
    return no_handler(cmd, c);
}

/* The distinct generation-flag names of every operation, in table order;
   flag option k has code RA_CLI_FLAG + k. */
static size_t flag_names(const char **out, size_t n)
{
    size_t k = 0;
    for (const ra_op *const *o = ra_ops(); *o; o++)
        for (const ra_op_item *f = (*o)->flags; f && f->name; f++) {
            size_t j = 0;
            while (j < k && strcmp(out[j], f->name) != 0)
                j++;
            if (j == k && k < n)
                out[k++] = f->name;
        }
    return k;
}

void ra_cli_help_flags(FILE *f)
{
    fprintf(f, "  --param KEY=VALUE    set a case parameter of the operation (gdn: scale=X,\n"
               "                       X finite and > 0; l2eps=E); repeatable\n");
    for (const ra_op *const *o = ra_ops(); *o; o++)
        for (const ra_op_item *g = (*o)->flags; g && g->name; g++) {
            char opt[48];
            snprintf(opt, sizeof opt, "--%s", g->name);
            fprintf(f, "  %-20s %s: %s\n", opt, (*o)->name, g->doc);
        }
}

/* syn's options, plus the generation flags when it takes --op: a new
   table (freed by the caller), or NULL after reporting. */
static struct option *options_with_flags(const ra_cli_syntax *syn)
{
    size_t n = 0;
    int has_op = 0;
    for (const struct option *o = syn->longopts; o->name; o++, n++)
        has_op |= o->val == RA_CLI_OP;
    const char *names[RA_CLI_MAX_FLAGS];
    size_t nf = has_op ? flag_names(names, RA_CLI_MAX_FLAGS) : 0;
    struct option *all = calloc(n + nf + 1, sizeof *all);
    if (!all) {
        ra_cli_usage_error(syn->cmd, "out of memory");
        return NULL;
    }
    memcpy(all, syn->longopts, n * sizeof *all);
    for (size_t k = 0; k < nf; k++)
        all[n + k] = (struct option){names[k], no_argument, NULL, RA_CLI_FLAG + (int)k};
    return all;
}

static int add_flag(ra_cli_args *a, int code)
{
    const char *names[RA_CLI_MAX_FLAGS];
    size_t nf = flag_names(names, RA_CLI_MAX_FLAGS);
    size_t k = (size_t)(code - RA_CLI_FLAG);
    if (k >= nf)
        return no_handler(a->syn->cmd, code);
    for (size_t i = 0; i < a->nflags; i++)
        if (strcmp(a->flags[i], names[k]) == 0)
            return 0;
    a->flags[a->nflags++] = names[k];
    return 0;
}

int ra_cli_parse(ra_cli_args *a, const ra_cli_syntax *syn, int argc, char **argv, void *ctx)
{
    args_init(a, syn, argc, argv);
    struct option *longopts = options_with_flags(syn);
    if (!longopts)
        return 2;
    int c, rc = 0;
    while ((c = getopt_long(argc, argv, syn->shortopts, longopts, NULL)) != -1) {
        if (c == 'h') {
            syn->help(stdout);
            break; /* the command exits 0 */
        }
        if (c == '?' || c == ':')
            rc = ra_cli_getopt_error(syn->cmd, c, argv, optind, longopts);
        else if (c >= RA_CLI_FLAG && c < RA_CLI_OWN)
            rc = add_flag(a, c);
        else if (c == 'o' || (c >= RA_CLI_OP && c < RA_CLI_OWN))
            rc = shared_option(a, c, optarg);
        else if (syn->own)
            rc = syn->own(ctx, a, c, optarg);
        else
            rc = no_handler(syn->cmd, c);
        if (rc)
            break;
    }
    free(longopts);
    if (c == -1) /* every option read, none wrong */
        return RA_CLI_GO;
    ra_cli_args_clear(a);
    return rc;
}

const char *ra_cli_operand(ra_cli_args *a) { return optind < a->argc ? a->argv[optind++] : NULL; }

int ra_cli_no_more(const ra_cli_args *a)
{
    if (optind < a->argc)
        return ra_cli_usage_error(a->syn->cmd, "unexpected argument '%s'", a->argv[optind]);
    return 0;
}

int ra_cli_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int ra_cli_output_not_input(const char *cmd, const char *out, const char *in)
{
    if (!ra_file_same(out, in))
        return 0;
    fprintf(stderr,
            "recaudit %s: output '%s' is the input '%s' (the same file); refusing to "
            "overwrite it\n",
            cmd, out, in);
    return 2;
}

/* --- generated cases ------------------------------------------------------- */

/* Copies src into a spec field; 0, or 2 after a usage error. */
static int spec_field(char *dst, size_t len, const char *cmd, const char *opt, const char *src)
{
    if (snprintf(dst, len, "%s", src) >= (int)len)
        return ra_cli_usage_error(cmd, "%s '%s' is too long", opt, src);
    return 0;
}

int ra_cli_case_spec(ra_case_spec *s, ra_cli_args *a)
{
    const char *cmd = a->syn->cmd;
    ra_case_spec_init(s);
    const ra_op *op = ra_op_find(a->op);
    if (!op) {
        ra_op_require(&op, a->op, "--op"); /* reports the known operations */
        return ra_cli_see_help(cmd);
    }
    if (ra_cli_check(a, RA_CLI_DTYPE)) /* late, or checked already: passes again */
        return 2;
    int rc = spec_field(s->op, sizeof s->op, cmd, "--op", op->name);
    if (!rc)
        rc = spec_field(s->shape, sizeof s->shape, cmd, "--shape", a->shape ? a->shape : "");
    if (!rc)
        rc = spec_field(s->regime, sizeof s->regime, cmd, "--regime",
                        a->regime ? a->regime : op->regimes[0].name);
    if (rc)
        return rc;
    snprintf(s->dtype, sizeof s->dtype, "%s", ra_dtype_name(a->dtype));
    s->seed = a->seed;
    s->has_seed = 1;
    s->bwd = !a->fwd_only;
    for (size_t i = 0; i < a->nflags; i++)
        if (ra_case_spec_set_flag(s, op, a->flags[i]) != RA_OK)
            return ra_cli_see_help(cmd);
    for (size_t i = 0; i < a->nparams; i++)
        if (ra_case_spec_set_param(s, op, a->params[i]) != RA_OK)
            return ra_cli_see_help(cmd);
    if (ra_case_spec_check(s, "--op") != RA_OK)
        return ra_cli_see_help(cmd);
    return 0;
}

/* --- the audit commands' pipeline ------------------------------------------ */

FILE *ra_cli_info_stream(ra_format fmt)
{
    return fmt == RA_FMT_TEXT || fmt == RA_FMT_MARKDOWN ? stdout : stderr;
}

ra_status ra_cli_json_not_input(const ra_cli_args *a, const char *input)
{
    if (!a->json || strcmp(a->json, "-") == 0)
        return RA_OK;
    const char *in = input && ra_file_same(a->json, input) ? input : NULL;
    if (!in && a->gates && ra_file_same(a->json, a->gates))
        in = a->gates;
    for (size_t i = 0; !in && i < a->nplugins; i++)
        if (ra_file_same(a->json, a->plugins[i]))
            in = a->plugins[i];
    if (in)
        RA_ERRORF(RA_EINVAL,
                  "--json '%s' is the input '%s' (the same file); refusing to overwrite it",
                  a->json, in);
    return RA_OK;
}

ra_status ra_cli_audit_begin(ra_cli_audit *s, const ra_cli_args *a)
{
    s->r = NULL;
    ra_gates_init(&s->gates);
    ra_rows_init(&s->rows);
    ra_audit_opts_init(&s->o);
    s->o.gates = &s->gates;
    s->o.gates_path = a->gates;
    s->o.allow_uncertified = a->allow_uncertified;
    s->o.threads = (int)a->threads;
    ra_cli_isolation(&s->o.iso, a);
    RA_TRY(ra_cli_json_not_input(a, NULL));
    RA_TRY(ra_registry_new_with_plugins(&s->r, a->plugins));
    return ra_gates_load(&s->gates, a->gates);
}

int ra_cli_audit_end(ra_cli_audit *s, ra_status st, const ra_cli_args *a, const char *what,
                     FILE *info)
{
    if (st == RA_OK && a->json)
        st = ra_report_json(a->json, &s->rows, what);
    if (st == RA_OK && info) {
        ra_report_failures(info, &s->rows);
        ra_report_summary(info, &s->rows);
    } else if (st == RA_OK) {
        /* In TAP, anything else must be a comment or go to stderr. */
        fprintf(stdout, "# %zu passed, %zu failed, %zu skipped\n", s->rows.passed, s->rows.failed,
                s->rows.skipped);
    }
    int rc = st != RA_OK ? ra_status_exit_code(st) : s->rows.failed ? 1 : 0;
    ra_rows_clear(&s->rows);
    ra_gates_clear(&s->gates);
    ra_registry_free(s->r);
    s->r = NULL;
    return rc;
}

int ra_cli_op_of_variants(ra_cli_args *a, const char *cmd)
{
    ra_registry *r;
    if (ra_registry_new_with_plugins(&r, a->plugins) != RA_OK)
        return 2;
    const char *op = NULL;
    int several = 0;
    for (size_t i = 0; i < ra_registry_count(r); i++) {
        const ra_variant *v = ra_registry_at(r, i);
        if (!ra_glob_match(a->variant, v->name))
            continue;
        if (op && strcmp(op, v->op) != 0)
            several = 1;
        op = v->op;
    }
    const ra_op *row = op ? ra_op_find(op) : NULL;
    ra_registry_free(r);
    if (!row)
        return ra_cli_usage_error(cmd, "no variant matches '%s' (see 'recaudit list variants')",
                                  a->variant);
    if (several)
        return ra_cli_usage_error(cmd, "variants of several operations match '%s': give --op",
                                  a->variant);
    a->op = row->name; /* a string of the operation table: outlives r */
    return 0;
}
