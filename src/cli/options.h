/* What the subcommands share: option tables, one parser, generated cases, audit set-up. */
#ifndef RA_CLI_OPTIONS_H
#define RA_CLI_OPTIONS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "audit/audit.h"
#include "audit/gates.h"
#include "audit/registry.h"
#include "core/case.h"
#include "core/op.h"
#include "core/status.h"
#include "core/table.h"

/*
 * A subcommand describes its syntax once, in a ra_cli_syntax: its name,
 * getopt strings, help, the handler of its own options and how a rejected
 * value is reported.  Its `struct option` table is made of the
 * RA_CLI_OPTION_* entries below and its own entries (codes from
 * RA_CLI_OWN), closed by RA_CLI_OPTIONS_END.  ra_cli_parse() runs
 * getopt_long and handles everything shared (--help, getopt errors, the
 * options listed here), storing the values in ra_cli_args:
 *
 *     ra_cli_args a;
 *     int rc = ra_cli_parse(&a, &syntax, argc, argv, &ctx);
 *     if (rc != RA_CLI_GO)
 *         return rc;        (0 after --help, 2 after a reported error)
 *     ... optind is the first operand, as after getopt_long
 *     ra_cli_args_clear(&a);
 *
 * A command has exactly the options its table lists: the set decides
 * which abbreviations are unambiguous, so tables are not padded with
 * options a command does not take.  Defaults are applied after parsing
 * (a value the options did not give is NULL or 0).
 */

/* Codes of the shared options ('o' and 'h' are their short forms). */
enum {
    RA_CLI_OP = 256,
    RA_CLI_SHAPE,
    RA_CLI_REGIME,
    RA_CLI_DTYPE,
    RA_CLI_SEED,
    RA_CLI_VARIANT,
    RA_CLI_PLUGIN,
    RA_CLI_GATES,
    RA_CLI_JSON,
    RA_CLI_FORMAT,
    RA_CLI_THREADS,
    RA_CLI_ALLOW_UNCERTIFIED,
    RA_CLI_FWD_ONLY,
    RA_CLI_TIMEOUT,
    RA_CLI_NO_ISOLATE,
    RA_CLI_PARAM,
    /* --NAME for generation flag i of the operations' tables (--h0,
       --l2norm for gdn): added by ra_cli_parse to every command whose
       table has --op, so the flags come from the operation table */
    RA_CLI_FLAG = 400,
    RA_CLI_OWN = 512 /* first code of a command's own long options */
};

/* Entries of the `struct option` tables (clang-format would spread the
   braces of RA_CLI_ENTRY_ over four lines). */
/* clang-format off */
#define RA_CLI_ENTRY_(name, arg, code) {name, arg, NULL, code}
#define RA_CLI_OPTION_OP       RA_CLI_ENTRY_("op", required_argument, RA_CLI_OP)
#define RA_CLI_OPTION_SHAPE    RA_CLI_ENTRY_("shape", required_argument, RA_CLI_SHAPE)
#define RA_CLI_OPTION_REGIME   RA_CLI_ENTRY_("regime", required_argument, RA_CLI_REGIME)
#define RA_CLI_OPTION_DTYPE    RA_CLI_ENTRY_("dtype", required_argument, RA_CLI_DTYPE)
#define RA_CLI_OPTION_SEED     RA_CLI_ENTRY_("seed", required_argument, RA_CLI_SEED)
#define RA_CLI_OPTION_VARIANT  RA_CLI_ENTRY_("variant", required_argument, RA_CLI_VARIANT)
#define RA_CLI_OPTION_PLUGIN   RA_CLI_ENTRY_("plugin", required_argument, RA_CLI_PLUGIN)
#define RA_CLI_OPTION_GATES    RA_CLI_ENTRY_("gates", required_argument, RA_CLI_GATES)
#define RA_CLI_OPTION_JSON     RA_CLI_ENTRY_("json", required_argument, RA_CLI_JSON)
#define RA_CLI_OPTION_FORMAT   RA_CLI_ENTRY_("format", required_argument, RA_CLI_FORMAT)
#define RA_CLI_OPTION_THREADS  RA_CLI_ENTRY_("threads", required_argument, RA_CLI_THREADS)
#define RA_CLI_OPTION_FWD_ONLY RA_CLI_ENTRY_("fwd-only", no_argument, RA_CLI_FWD_ONLY)
#define RA_CLI_OPTION_OUTPUT   RA_CLI_ENTRY_("output", required_argument, 'o')
#define RA_CLI_OPTION_PARAM    RA_CLI_ENTRY_("param", required_argument, RA_CLI_PARAM)
/* How variants run: a child process per run, its time limit (src/audit/isolate.h). */
#define RA_CLI_OPTION_ISOLATION \
    RA_CLI_ENTRY_("timeout", required_argument, RA_CLI_TIMEOUT), \
    RA_CLI_ENTRY_("no-isolate", no_argument, RA_CLI_NO_ISOLATE)
/* Their help lines. */
#define RA_CLI_HELP_ISOLATION \
    "  --timeout SECONDS    limit of one variant run on one case (default 600); on\n" \
    "                       expiry the run is killed and its row fails\n" \
    "  --no-isolate         run variants inside recaudit, not in a child process\n" \
    "                       (for a debugger; also RECAUDIT_NO_ISOLATE=1)\n"
#define RA_CLI_OPTION_ALLOW_UNCERTIFIED \
    RA_CLI_ENTRY_("allow-uncertified", no_argument, RA_CLI_ALLOW_UNCERTIFIED)
/* The options that describe a generated case (`recaudit gen`'s); the
   operations' generation flags are added to them (RA_CLI_FLAG).  --param
   KEY=VALUE sets one of the operation's case parameters (gdn: scale). */
#define RA_CLI_CASE_OPTIONS \
    RA_CLI_OPTION_OP, RA_CLI_OPTION_SHAPE, RA_CLI_OPTION_DTYPE, RA_CLI_OPTION_REGIME, \
    RA_CLI_OPTION_SEED, RA_CLI_OPTION_PARAM
/* Every command takes --help; the table ends there. */
#define RA_CLI_OPTIONS_END RA_CLI_ENTRY_("help", no_argument, 'h'), {NULL, 0, NULL, 0}
/* clang-format on */

/* How a --format, --dtype (or the command's own) value that the library
   rejected, after printing its reason, is reported. */
typedef enum ra_cli_style {
    RA_CLI_BARE,  /* the library's line alone */
    RA_CLI_HINT,  /* then "(see 'recaudit CMD --help')" */
    RA_CLI_USAGE, /* then a usage error naming the option and the value */
} ra_cli_style;

/* Bit of a shared option code, for ra_cli_syntax.late. */
#define RA_CLI_BIT(code) (1u << ((code)-RA_CLI_OP))

struct ra_cli_args;
/* A command's own option (code >= RA_CLI_OWN, value NULL for a flag) for
   the context given to ra_cli_parse: 0, or the exit status after
   reporting. */
typedef int ra_cli_own_fn(void *ctx, const struct ra_cli_args *a, int code, const char *value);

typedef struct ra_cli_syntax {
    const char *cmd;               /* "gen": messages and help hints */
    const char *shortopts;         /* getopt_long's, starting with ':' */
    const struct option *longopts; /* ends with RA_CLI_OPTIONS_END */
    void (*help)(FILE *f);         /* --help, to stdout */
    ra_cli_own_fn *own;            /* NULL: the command has no own options */
    ra_cli_style style;
    /* RA_CLI_BIT of --format / --dtype when the command checks that value
       itself, with ra_cli_check (ra_cli_case_id does for --dtype), before
       using a->fmt or a->dtype, instead of when it is given */
    unsigned late;
} ra_cli_syntax;

#define RA_CLI_MAX_FLAGS 16

typedef struct ra_cli_args {
    const ra_cli_syntax *syn;
    int argc;
    char **argv;
    /* the case options as given (NULL: not given) */
    const char *op, *shape, *regime;
    ra_dtype dtype; /* --dtype once checked (ra_cli_check); RA_F32 */
    unsigned long long seed;
    const char *flags[RA_CLI_MAX_FLAGS]; /* generation flags given ("h0") */
    size_t nflags;
    const char *params[RA_CLI_MAX_FLAGS]; /* --param KEY=VALUE as given */
    size_t nparams;
    const char *variant, *gates, *json, *output; /* NULL: not given */
    const char *format, *dtype_text;             /* --format, --dtype as given */
    ra_format fmt;                               /* the format (RA_FMT_TEXT) */
    long threads;                                /* 0: not given */
    int allow_uncertified, fwd_only;
    double timeout_s; /* --timeout (0: not given) */
    int no_isolate;   /* --no-isolate */
    const char **plugins; /* NULL-terminated --plugin list, NULL when none */
    size_t nplugins;
} ra_cli_args;

/* "Go on": what ra_cli_parse and the commands' parsers return when the
   options were fine; anything else is the exit status. */
#define RA_CLI_GO (-1)

/* Parses every option of argv (argv[0] the command's name) into a, which
   it initialises: the shared ones there, the command's own through
   syn->own(ctx, ...).  Stops at the first problem.  Returns RA_CLI_GO, or
   the exit status the command must return at once: 0 after --help, 2
   after a usage error was printed (a is cleared then). */
int ra_cli_parse(ra_cli_args *a, const ra_cli_syntax *syn, int argc, char **argv, void *ctx);
/* Frees the --plugin list. */
void ra_cli_args_clear(ra_cli_args *a);

/* Checks the --format or --dtype value given (code RA_CLI_FORMAT or
   RA_CLI_DTYPE; absent values pass), setting a->fmt or a->dtype; 0, or 2
   after reporting it in the command's style. */
int ra_cli_check(ra_cli_args *a, int code);

/* Reports a rejected option value (the library has printed why) in the
   command's style; detail follows "OPT 'VALUE'" in a usage error.
   Returns 2. */
int ra_cli_bad_value(const ra_cli_args *a, const char *opt, const char *value, const char *detail);

/* Prints "(see 'recaudit CMD --help')" to stderr; returns 2. */
int ra_cli_see_help(const char *cmd);

/* The next operand (advancing optind), or NULL when there is none. */
const char *ra_cli_operand(ra_cli_args *a);
/* 0 when no operand is left, else 2 after "unexpected argument 'X'". */
int ra_cli_no_more(const ra_cli_args *a);

/* 1 if s ends with suffix. */
int ra_cli_ends_with(const char *s, const char *suffix);

/* 0 when the output file out is not the input file in; else 2 after
   saying so.  Compared by device and inode (ra_file_same), so a symbolic
   or hard link to the input counts as the input: an output never
   overwrites what the command reads. */
int ra_cli_output_not_input(const char *cmd, const char *out, const char *in);

/* Prints --param's help and the generation flags of every operation,
   one help line each. */
void ra_cli_help_flags(FILE *f);

/* The checked spec of the case a's options describe (op, canonical shape,
   regime (the op's first when not given), dtype name, seed, flags,
   parameters), for
   generation and ra_audit_case; bwd unless --fwd-only.  Checks --dtype
   here when it is late.  0, or 2 after reporting (a bad shape, regime or
   flag is reported as the library words it, then the command's help
   hint). */
int ra_cli_case_spec(ra_case_spec *s, ra_cli_args *a);

/* Without --op: sets a->op to the one operation of the variants a->variant
   matches (with a's plugins); 0, or 2 after a usage error of cmd (no
   variant matches, or variants of several operations do). */
int ra_cli_op_of_variants(ra_cli_args *a, const char *cmd);

/* How a's command runs variants: --timeout (default RA_TIMEOUT_DEFAULT_S),
   in process under --no-isolate or RECAUDIT_NO_ISOLATE=1. */
void ra_cli_isolation(ra_isolation *iso, const ra_cli_args *a);

/* --- the audit commands' pipeline ------------------------------------------ */

/* Where audit, validate and check print lines that are not the table:
   stdout beside a text or markdown table, stderr beside csv or json so
   that stdout stays parseable. */
FILE *ra_cli_info_stream(ra_format fmt);

/* What audit and validate set up from the shared options. */
typedef struct ra_cli_audit {
    ra_registry *r;
    ra_gates gates;
    ra_rows rows;
    ra_audit_opts o;
} ra_cli_audit;

/* RA_EINVAL when --json names a file the command reads (input, --gates,
   a --plugin), by device and inode as ra_cli_output_not_input. */
ra_status ra_cli_json_not_input(const ra_cli_args *a, const char *input);
/* The registry with a's --plugin list, the --gates table (NULL: the
   shipped one) and audit options using them with --allow-uncertified and
   --threads.  Whatever it returns, s is ready for ra_cli_audit_end. */
ra_status ra_cli_audit_begin(ra_cli_audit *s, const ra_cli_args *a);

/* When st is RA_OK: writes the rows to --json as command `what`, then the
   failing rows and the summary line to info (info NULL: the counts as one
   TAP comment on stdout).  Frees s; returns the exit status: that of st,
   else 1 when a row failed, else 0. */
int ra_cli_audit_end(ra_cli_audit *s, ra_status st, const ra_cli_args *a, const char *what,
                     FILE *info);

#endif
