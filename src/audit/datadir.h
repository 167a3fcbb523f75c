/* Where the shipped data files (gates, suites) are found at run time. */
#ifndef RA_AUDIT_DATADIR_H
#define RA_AUDIT_DATADIR_H

#include <stddef.h>

#include "core/status.h"

/*
 * One search order for every data file, so that a test, an installed
 * program, a program run from the source tree and a binary copied alone to
 * another machine read the same way:
 *   1. $RECAUDIT_DATA, when set (and then only there: an explicit setting
 *      that points at the wrong place must fail, not fall back silently);
 *   2. the installed pkgdatadir (RA_PKGDATADIR, set by the build);
 *   3. ./data (running from the source tree before `make install`);
 *   4. the copy compiled into the program (src/audit/embedded_data.S).
 * rel is a path below the data directory ("gates.tsv", "suites/quick.tsv",
 * "suites").
 */

/* The path of data file or directory rel (steps 1-3); RA_ENOTFOUND naming
   every place tried.  The built-in copy has no path: see ra_data_read. */
ra_status ra_data_find(char *buf, size_t len, const char *rel);

/* The text of data file rel (malloc'ed, NUL-terminated) and where it came
   from: its path, or "built-in copy of data/REL" (into where, wlen
   bytes).  RA_ENOTFOUND when no step has it. */
ra_status ra_data_read(char **text, char *where, size_t wlen, const char *rel);

/* The names (without .tsv) of the suites under the data directory of the
   first step that has a suites/ directory, or of the built-in copies,
   sorted; *dir gets that directory or "built-in".  Free each name and the
   array. */
ra_status ra_data_suites(char ***names, size_t *n, char *dir, size_t dirlen);

/* "built-in": the dir of ra_data_suites when the suites are compiled in. */
#define RA_DATA_BUILTIN "built-in"

#endif
