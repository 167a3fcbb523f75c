/* `recaudit --version`: the suite and every numerical library it runs on. */
#ifndef RA_CLI_VERSION_H
#define RA_CLI_VERSION_H

#include <stdio.h>

void ra_cli_print_version(FILE *f);

#endif
