/* recaudit: entry point, global options and subcommand dispatch. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/version.h"

static void print_help(FILE *f)
{
    fprintf(f,
            "usage: recaudit [--help] [--version] COMMAND [ARGS]\n"
            "\n"
            "Certified numerical verification of linear-recurrence kernels\n"
            "(gated delta rule and friends) against GNU MPFR references.\n"
            "\n"
            "commands:\n");
    for (const ra_command *c = ra_commands; c->name; c++)
        fprintf(f, "  %-10s %s\n", c->name, c->summary);
    fprintf(f, "\n'recaudit COMMAND --help' describes a command.\n"
               "exit status: 0 pass, 1 a gate failed, 2 bad usage or bad input\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_help(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            for (const ra_command *c = ra_commands; c->name; c++)
                if (strcmp(c->name, argv[2]) == 0) {
                    char *sub[] = {argv[2], "--help", NULL};
                    return c->fn(2, sub);
                }
        }
        print_help(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        ra_cli_print_version(stdout);
        return 0;
    }
    for (const ra_command *c = ra_commands; c->name; c++)
        if (strcmp(c->name, argv[1]) == 0)
            return c->fn(argc - 1, argv + 1);
    fprintf(stderr, "recaudit: unknown command '%s'\n\n", argv[1]);
    print_help(stderr);
    return 2;
}
