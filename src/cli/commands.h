/* Declarations of every subcommand (one cmd_<name>.c each). */
#ifndef RA_CLI_COMMANDS_H
#define RA_CLI_COMMANDS_H

#include "core/table.h"

int ra_cmd_gen(int argc, char **argv);
int ra_cmd_inspect(int argc, char **argv);
int ra_cmd_list(int argc, char **argv);
int ra_cmd_run(int argc, char **argv);
int ra_cmd_check(int argc, char **argv);
int ra_cmd_audit(int argc, char **argv);
int ra_cmd_validate(int argc, char **argv);
int ra_cmd_ref(int argc, char **argv);
int ra_cmd_gradcheck(int argc, char **argv);
int ra_cmd_bench(int argc, char **argv);
int ra_cmd_derive(int argc, char **argv);
int ra_cmd_bench_ref(int argc, char **argv);
int ra_cmd_study(int argc, char **argv);
int ra_cmd_pairs(int argc, char **argv);

/* A row of `recaudit list KIND` (the kinds table in cmd_list.c): builds the
   table for one kind (first column: the name GLOB filters on).  plugins is
   the NULL-terminated --plugin list (empty unless the row accepts them). */
typedef ra_status ra_list_fill_fn(ra_table **out, const char *const *plugins);

#endif
