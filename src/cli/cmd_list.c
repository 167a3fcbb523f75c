/* `recaudit list KIND`: what the suite knows (ops, regimes, ...) as a table. */
#include <config.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/registry.h"
#include "audit/suite.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "core/op.h"
#include "core/table.h"

/*
 * Each kind is one row of `kinds` below: a name, a one-line doc and a
 * function that builds the table (ra_list_fill_fn, commands.h).  The
 * command writes that table in the chosen format after keeping only the
 * rows whose first column matches the optional glob, so every kind gets
 * filtering and every output format for free.  Kinds that depend on
 * plugins (variants) take the --plugin paths; the others refuse them.
 */

static ra_status list_ops(ra_table **out, const char *const *plugins)
{
    (void)plugins;
    static const char *const headers[] = {"op", "doc"};
    RA_TRY(ra_table_new(out, 2, headers));
    for (const ra_op *const *o = ra_ops(); *o; o++) {
        const char *row[] = {(*o)->name, (*o)->doc};
        RA_TRY(ra_table_add_row(*out, row));
    }
    return RA_OK;
}

static ra_status list_regimes(ra_table **out, const char *const *plugins)
{
    (void)plugins;
    static const char *const headers[] = {"regime", "op", "doc"};
    RA_TRY(ra_table_new(out, 3, headers));
    for (const ra_op *const *o = ra_ops(); *o; o++)
        for (const ra_op_item *r = (*o)->regimes; r && r->name; r++) {
            const char *row[] = {r->name, (*o)->name, r->doc};
            RA_TRY(ra_table_add_row(*out, row));
        }
    return RA_OK;
}

static ra_status list_tensors(ra_table **out, const char *const *plugins)
{
    (void)plugins;
    static const char *const roles[] = {"input", "cotangent", "output", "gradient"};
    static const char *const headers[] = {"tensor", "op", "role", "shape", "dtype", "optional"};
    RA_TRY(ra_table_new(out, 6, headers));
    for (const ra_op *const *o = ra_ops(); *o; o++)
        for (const ra_op_tensor *t = (*o)->tensors; t->name; t++) {
            const char *row[] = {t->name,  (*o)->name,
                                 roles[t->role], t->shape,
                                 t->state ? "f32 (f64 in f64 cases)" : "the case's",
                                 t->optional ? "yes" : "no"};
            RA_TRY(ra_table_add_row(*out, row));
        }
    return RA_OK;
}

typedef struct list_kind {
    const char *name;
    const char *doc;
    ra_list_fill_fn *fill;
    int takes_plugins; /* accepts --plugin */
} list_kind;

static const list_kind kinds[] = {
    {"ops", "operations the suite knows, with their tensor layout", list_ops, 0},
    {"tensors", "every operation's tensors: role, shape, storage dtype", list_tensors, 0},
    {"regimes", "input distributions for `recaudit gen --regime`", list_regimes, 0},
    {"variants", "kernel variants: name, op, device, class, capabilities, doc, origin",
     ra_list_variants, 1},
    {"suites", "conformance suites for `recaudit validate --suite`, with their coverage",
     ra_list_suites, 0},
    {NULL, NULL, NULL, 0},
};

static void print_help(FILE *f)
{
    fprintf(f, "usage: recaudit list [--format text|md|csv|json] KIND [GLOB]\n"
               "\n"
               "Lists what the suite knows, one table row each; GLOB keeps the rows\n"
               "whose first column matches (shell pattern).\n"
               "\n"
               "kinds:\n");
    for (const list_kind *k = kinds; k->name; k++)
        fprintf(f, "  %-10s %s\n", k->name, k->doc);
    fprintf(f, "\n"
               "options:\n"
               "  --format F       text (default), md, csv or json\n"
               "  --plugin LIB.so  also load a variant plugin (kinds that list variants)\n"
               "  -h, --help       this help\n"
               "\n"
               "example:\n"
               "  recaudit list regimes\n");
}

/* The rows of t whose first cell matches the shell pattern, as a new table. */
static ra_status filter_rows(ra_table **out, const ra_table *t, const char *pattern)
{
    int nc = ra_table_cols(t);
    const char **row = calloc((size_t)nc, sizeof *row);
    if (!row)
        RA_ERROR("list: out of memory", RA_ENOMEM);
    for (int j = 0; j < nc; j++)
        row[j] = ra_table_header(t, j);
    ra_status st = ra_table_new(out, nc, row);
    for (size_t i = 0; st == RA_OK && i < ra_table_rows(t); i++) {
        if (fnmatch(pattern, ra_table_cell(t, i, 0), 0) != 0)
            continue;
        for (int j = 0; j < nc; j++)
            row[j] = ra_table_cell(t, i, j);
        st = ra_table_add_row(*out, row);
    }
    free(row);
    return st;
}

static const struct option list_options[] = {
    RA_CLI_OPTION_FORMAT,
    RA_CLI_OPTION_PLUGIN,
    RA_CLI_OPTIONS_END,
};

/* --format is checked once the options are read, before the kind. */
static const ra_cli_syntax list_syntax = {.cmd = "list",
                                          .shortopts = ":h",
                                          .longopts = list_options,
                                          .help = print_help,
                                          .style = RA_CLI_HINT,
                                          .late = RA_CLI_BIT(RA_CLI_FORMAT)};

/* The kind the operands name: 0, or the exit status. */
static int find_kind(const list_kind **out, const ra_cli_args *a)
{
    const int argc = a->argc;
    char **argv = a->argv;
    if (optind >= argc)
        return ra_cli_usage_error("list", "which kind? (ops, regimes, ...)");
    for (const list_kind *k = kinds; k->name; k++)
        if (strcmp(k->name, argv[optind]) == 0)
            *out = k;
    if (!*out)
        return ra_cli_usage_error("list", "unknown kind '%s'", argv[optind]);
    if (argc - optind > 2)
        return ra_cli_usage_error("list", "unexpected argument '%s'", argv[optind + 2]);
    if (a->nplugins && !(*out)->takes_plugins)
        return ra_cli_usage_error("list", "'%s' does not load plugins", (*out)->name);
    return 0;
}

int ra_cmd_list(int argc, char **argv)
{
    ra_cli_args a;
    int rc = ra_cli_parse(&a, &list_syntax, argc, argv, NULL);
    if (rc != RA_CLI_GO)
        return rc;
    const list_kind *kind = NULL;
    rc = ra_cli_check(&a, RA_CLI_FORMAT);
    if (rc == 0)
        rc = find_kind(&kind, &a);
    if (rc != 0) {
        ra_cli_args_clear(&a);
        return rc;
    }
    const char *pattern = argc - optind == 2 ? argv[optind + 1] : NULL;

    ra_table *t = NULL, *shown = NULL;
    ra_status st = kind->fill(&t, a.plugins);
    if (st == RA_OK && pattern)
        st = filter_rows(&shown, t, pattern);
    if (st == RA_OK)
        st = ra_table_write(shown ? shown : t, stdout, a.fmt);
    ra_table_free(shown);
    ra_table_free(t);
    ra_cli_args_clear(&a);
    return ra_status_exit_code(st);
}
