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
#include "core/gdn_case.h"
#include "core/gen_gdn.h"
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
 * A generated case goes through the table of operations that have a
 * generator, so `gen`, `gradcheck`, `bench-ref` and `audit` (its case id)
 * agree on which operations can be generated and how a shape is read.
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
    a->spec.dtype = RA_F32;
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
    if (code == RA_CLI_DTYPE && a->dtype && ra_dtype_parse(&a->spec.dtype, a->dtype) != RA_OK)
        return ra_cli_bad_value(a, "--dtype", a->dtype, "");
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
        a->spec.op = arg;
        return 0;
    case RA_CLI_SHAPE:
        a->spec.shape = arg;
        return 0;
    case RA_CLI_REGIME:
        a->spec.regime = arg;
        return 0;
    case RA_CLI_H0:
        a->spec.h0 = 1;
        return 0;
    case RA_CLI_L2NORM:
        a->spec.l2norm = 1;
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
    case RA_CLI_SEED:
        return ra_cli_parse_u64(&a->spec.seed, cmd, "--seed", arg);
    case RA_CLI_THREADS:
        return ra_cli_parse_int(&a->threads, cmd, "--threads", arg, 1, 4096);
    case RA_CLI_DTYPE:
        a->dtype = arg;
        return (a->syn->late & RA_CLI_BIT(c)) ? 0 : ra_cli_check(a, c);
    case RA_CLI_FORMAT:
        a->format = arg;
        return (a->syn->late & RA_CLI_BIT(c)) ? 0 : ra_cli_check(a, c);
    }
    return no_handler(cmd, c);
}

int ra_cli_parse(ra_cli_args *a, const ra_cli_syntax *syn, int argc, char **argv, void *ctx)
{
    args_init(a, syn, argc, argv);
    int c, rc = 0;
    while ((c = getopt_long(argc, argv, syn->shortopts, syn->longopts, NULL)) != -1) {
        if (c == 'h') {
            syn->help(stdout);
            break; /* the command exits 0 */
        }
        if (c == '?' || c == ':')
            rc = ra_cli_getopt_error(syn->cmd, c, argv, optind, syn->longopts);
        else if (c == 'o' || (c >= RA_CLI_OP && c < RA_CLI_OWN))
            rc = shared_option(a, c, optarg);
        else if (syn->own)
            rc = syn->own(ctx, a, c, optarg);
        else
            rc = no_handler(syn->cmd, c);
        if (rc)
            break;
    }
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

/* --- generated cases ------------------------------------------------------- */

static ra_status gdn_generate(ra_case *c, const ra_cli_case_spec *s)
{
    ra_gdn_gen_opts o;
    memset(&o, 0, sizeof o);
    RA_TRY(ra_gdn_shape_parse(&o.shape, s->shape));
    o.dtype = s->dtype;
    o.regime = s->regime;
    o.seed = s->seed;
    o.h0 = s->h0;
    o.l2norm = s->l2norm;
    return ra_gdn_generate(c, &o);
}

static ra_status gdn_shape(char *buf, size_t len, const ra_cli_case_spec *s)
{
    ra_gdn_shape sh;
    RA_TRY(ra_gdn_shape_parse(&sh, s->shape));
    ra_gdn_shape_format(buf, len, &sh);
    return RA_OK;
}

/* Operations that have a generator (a subset of ra_ops()). */
static const struct generator {
    const char *op;
    ra_status (*generate)(ra_case *c, const ra_cli_case_spec *s);
    /* the canonical text of s->shape (a case id's shape) */
    ra_status (*shape)(char *buf, size_t len, const ra_cli_case_spec *s);
} generators[] = {
    {"gdn", gdn_generate, gdn_shape},
};

static const struct generator *find_generator(const char *op)
{
    for (size_t i = 0; op && i < sizeof generators / sizeof generators[0]; i++)
        if (strcmp(generators[i].op, op) == 0)
            return &generators[i];
    return NULL;
}

int ra_cli_can_generate(const char *op) { return find_generator(op) != NULL; }

ra_status ra_cli_case_generate(ra_case *c, const ra_cli_case_spec *s)
{
    const struct generator *g = find_generator(s->op);
    if (!g)
        RA_ERRORF(RA_EUNSUPPORTED, "--op '%s': no case generator for this operation",
                  s->op ? s->op : "");
    return g->generate(c, s);
}

int ra_cli_case_id(ra_case_id *id, ra_cli_args *a)
{
    const ra_cli_case_spec *s = &a->spec;
    const struct generator *g = find_generator(s->op);
    memset(id, 0, sizeof *id);
    if (!g)
        return ra_cli_usage_error(a->syn->cmd, "--op '%s': no case generator for this operation",
                                  s->op ? s->op : "");
    if (g->shape(id->shape, sizeof id->shape, s) != RA_OK)
        return 2;                      /* the shape parser said why */
    if (ra_cli_check(a, RA_CLI_DTYPE)) /* late, or checked already: passes again */
        return 2;
    const char *regime = s->regime ? s->regime : "default";
    snprintf(id->op, sizeof id->op, "%s", s->op);
    snprintf(id->dtype, sizeof id->dtype, "%s", ra_dtype_name(s->dtype));
    if (snprintf(id->regime, sizeof id->regime, "%s", regime) >= (int)sizeof id->regime)
        return ra_cli_usage_error(a->syn->cmd, "--regime '%s': no such regime", regime);
    id->seed = s->seed;
    id->has_seed = 1;
    id->h0 = s->h0;
    id->l2norm = s->l2norm;
    id->bwd = !a->fwd_only;
    return 0;
}

/* --- the audit commands' pipeline ------------------------------------------ */

FILE *ra_cli_info_stream(ra_format fmt)
{
    return fmt == RA_FMT_TEXT || fmt == RA_FMT_MARKDOWN ? stdout : stderr;
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
