/* `recaudit --version`: the suite and every numerical library it runs on. */
#include <config.h>

#include "cli/version.h"

#include <gmp.h>
#include <gsl/gsl_version.h>
#include <jansson.h>
#include <mpfr.h>

#include "gpu/device.h"

/* Versions are read at run time where the library offers it (MPFR, GMP,
   GSL), so a report states what actually ran, not what was compiled. */
void ra_cli_print_version(FILE *f)
{
    fprintf(f, "recaudit %s\n", PACKAGE_VERSION);
    fprintf(f, "MPFR %s (compiled with %s)\n", mpfr_get_version(), MPFR_VERSION_STRING);
    fprintf(f, "GMP %s\n", gmp_version);
    fprintf(f, "GSL %s\n", gsl_version);
    fprintf(f, "jansson %s\n", JANSSON_VERSION);
    char buf[256];
    if (ra_gpu_describe(buf, sizeof buf))
        fprintf(f, "CUDA %s\n", buf);
    else
        fprintf(f, "CUDA not built in\n");
}
