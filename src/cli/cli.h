/* The recaudit program: subcommand table and shared option helpers. */
#ifndef RA_CLI_CLI_H
#define RA_CLI_CLI_H

/*
 * Each subcommand lives in its own cmd_<name>.c and exposes
 * int ra_cmd_<name>(int argc, char **argv) with argv[0] the subcommand name.
 * Return: 0 pass, 1 a gate failed, 2 bad usage or bad input.
 * Usage errors print the subcommand's usage line to stderr.
 */

typedef int ra_cmd_fn(int argc, char **argv);

typedef struct ra_command {
    const char *name;
    ra_cmd_fn *fn;
    const char *summary; /* one line for `recaudit --help` */
} ra_command;

/* The table, terminated by {NULL}. */
extern const ra_command ra_commands[];

/* The helpers below are in src/cli/options.c, with the shared option
   parser (src/cli/options.h) that most commands use instead of them. */

/* Prints "recaudit NAME: message" and a hint to see --help; returns 2. */
int ra_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses a positive int option value; reports and returns 2 when malformed,
   0 on success. */
int ra_cli_parse_int(long *out, const char *cmd, const char *opt, const char *text,
                     long min, long max);
int ra_cli_parse_u64(unsigned long long *out, const char *cmd, const char *opt,
                     const char *text);

/* After getopt_long (opterr = 0, short options string starting with ':')
   returned '?' or ':' as ret, with ind the optind it left: reports an
   unknown, ambiguous or valueless option, or a value given to a flag,
   naming the argument, and returns 2. */
struct option;
int ra_cli_getopt_error(const char *cmd, int ret, char *const *argv, int ind,
                        const struct option *longopts);

#endif
