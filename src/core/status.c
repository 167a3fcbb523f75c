/* Error reporting: one settable handler, per-thread last reason. */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The handler pointer is process-wide (set once by the program or a test);
 * the last reason is thread-local so that OpenMP workers reporting at the
 * same time do not overwrite each other's text.
 */

#define RA_REASON_MAX 1024

static _Thread_local char last_reason[RA_REASON_MAX];

static void default_handler(const char *reason, const char *file, int line,
                            ra_status code)
{
    (void)code;
    if (getenv("RECAUDIT_DEBUG"))
        fprintf(stderr, "recaudit: %s [%s:%d]\n", reason, file, line);
    else
        fprintf(stderr, "recaudit: %s\n", reason);
}

static ra_error_handler_t *current_handler = default_handler;

ra_error_handler_t *ra_set_error_handler(ra_error_handler_t *handler)
{
    ra_error_handler_t *old = current_handler;
    current_handler = handler ? handler : default_handler;
    return old;
}

void ra_error(const char *reason, const char *file, int line, ra_status code)
{
    snprintf(last_reason, sizeof last_reason, "%s", reason);
    current_handler(reason, file, line, code);
}

void ra_errorf(const char *file, int line, ra_status code, const char *fmt, ...)
{
    char buf[RA_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ra_error(buf, file, line, code);
}

const char *ra_last_error(void) { return last_reason; }

void ra_clear_error(void) { last_reason[0] = '\0'; }

const char *ra_strstatus(ra_status code)
{
    switch (code) {
    case RA_OK: return "ok";
    case RA_EINVAL: return "bad input";
    case RA_EFORMAT: return "format error";
    case RA_EIO: return "I/O error";
    case RA_ENOMEM: return "out of memory";
    case RA_EOVERFLOW: return "size overflow";
    case RA_ENOTFOUND: return "not found";
    case RA_EUNSUPPORTED: return "unsupported";
    case RA_EINTERNAL: return "internal error";
    case RA_ENUMERIC: return "numerical failure";
    }
    return "unknown status";
}

int ra_status_exit_code(ra_status code)
{
    /* DESIGN: 0 pass, 1 a gate failed, 2 bad usage or bad input.  Failures of
       the environment (I/O, memory) also end the run before any verdict. */
    return code == RA_OK ? 0 : 2;
}
