/* Declarations of every subcommand (one cmd_<name>.c each). */
#ifndef RA_CLI_COMMANDS_H
#define RA_CLI_COMMANDS_H

#endif
