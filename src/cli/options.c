/* Shared option-parsing help for the subcommands (getopt_long errors). */
#include <config.h>

#include <getopt.h>
#include <string.h>

#include "cli/cli.h"

/*
 * Subcommands parse with getopt_long (GNU: options in any order, `--opt
 * value` and `--opt=value`, unambiguous prefixes) with opterr = 0 and a
 * leading ':' in the short-option string, so that getopt prints nothing
 * and every problem becomes one usage error naming the offending argument
 * here.  getopt has already advanced optind past the offending element,
 * except inside a cluster of short options ("-xo"), which is why short
 * options are named from optopt.
 */

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
