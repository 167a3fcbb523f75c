/* The subcommand table: one row per cmd_<name>.c. */
#include <stddef.h>

#include "cli/cli.h"
#include "cli/commands.h"

const ra_command ra_commands[] = {
    {NULL, NULL, NULL},
};
