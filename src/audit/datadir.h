/* Where the shipped data files (gates, suites) are found at run time. */
#ifndef RA_AUDIT_DATADIR_H
#define RA_AUDIT_DATADIR_H

#include <stddef.h>

#include "core/status.h"

/*
 * One search order for every data file, so that a test, an installed
 * program and a program run from the source tree read the same way:
 *   1. $RECAUDIT_DATA, when set (and then only there: an explicit setting
 *      that points at the wrong place must fail, not fall back silently);
 *   2. the installed pkgdatadir (RA_PKGDATADIR, set by the build);
 *   3. ./data (running from the source tree before `make install`).
 * rel is a path below the data directory ("gates.tsv", "suites"); it may
 * name a file or a directory.  RA_ENOTFOUND names every place tried.
 */
ra_status ra_data_find(char *buf, size_t len, const char *rel);

#endif
