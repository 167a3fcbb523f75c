/* Data directory lookup: $RECAUDIT_DATA, installed pkgdatadir, ./data. */
#include <config.h>

#include "audit/datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/*
 * RA_PKGDATADIR comes from the build (src/audit/local.mk) as the configured
 * $(pkgdatadir).  Existence is tested with stat(); whether the file is a
 * readable, well-formed table is for its parser to say, with the path.
 */

#ifndef RA_PKGDATADIR
#error "RA_PKGDATADIR must be defined by the build (src/audit/local.mk)"
#endif

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static ra_status join(char *buf, size_t len, const char *dir, const char *rel)
{
    int n = snprintf(buf, len, "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= len)
        RA_ERRORF(RA_EINVAL, "data path '%s/%s' is too long", dir, rel);
    return RA_OK;
}

ra_status ra_data_find(char *buf, size_t len, const char *rel)
{
    const char *env = getenv("RECAUDIT_DATA");
    if (env && *env) {
        RA_TRY(join(buf, len, env, rel));
        if (!exists(buf))
            RA_ERRORF(RA_ENOTFOUND, "data file %s not found (RECAUDIT_DATA=%s)", buf, env);
        return RA_OK;
    }
    RA_TRY(join(buf, len, RA_PKGDATADIR, rel));
    if (exists(buf))
        return RA_OK;
    RA_TRY(join(buf, len, "data", rel));
    if (exists(buf))
        return RA_OK;
    RA_ERRORF(RA_ENOTFOUND,
              "data file '%s' not found in %s nor in ./data (set RECAUDIT_DATA to the "
              "directory holding gates.tsv and suites/)",
              rel, RA_PKGDATADIR);
}
