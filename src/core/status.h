/* Error status codes and the one settable error handler (GSL style). */
#ifndef RA_CORE_STATUS_H
#define RA_CORE_STATUS_H

/*
 * Library functions return an ra_status.  The place that detects a problem
 * reports it once with RA_ERROR / RA_ERRORF (reason, source file and line go
 * to the current handler) and returns the code; callers pass the code up
 * with RA_TRY without reporting again, so one failure gives one message.
 * Library code never exits.  The default handler prints "recaudit: reason"
 * on stderr and remembers the reason (ra_last_error) for the calling thread.
 */

#include "recaudit/types.h" /* ra_status */

#ifdef __cplusplus
extern "C" {
#endif

typedef void ra_error_handler_t(const char *reason, const char *file, int line,
                                ra_status code);

/* Installs a handler (NULL restores the default); returns the previous one. */
ra_error_handler_t *ra_set_error_handler(ra_error_handler_t *handler);

/* Reports through the current handler. */
void ra_error(const char *reason, const char *file, int line, ra_status code);
void ra_errorf(const char *file, int line, ra_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reason of the last error reported on this thread ("" if none). */
const char *ra_last_error(void);
void ra_clear_error(void);

/* A short name for a status ("bad input", "format error", ...). */
const char *ra_strstatus(ra_status code);

/* Exit status the command line uses for a library status (0 or 2). */
int ra_status_exit_code(ra_status code);

#define RA_ERROR(reason, code)                                                 \
    do {                                                                       \
        ra_error((reason), __FILE__, __LINE__, (code));                        \
        return (code);                                                         \
    } while (0)

#define RA_ERRORF(code, ...)                                                   \
    do {                                                                       \
        ra_errorf(__FILE__, __LINE__, (code), __VA_ARGS__);                    \
        return (code);                                                         \
    } while (0)

/* Report without returning (for void functions or cleanup paths). */
#define RA_REPORTF(code, ...) ra_errorf(__FILE__, __LINE__, (code), __VA_ARGS__)

#define RA_TRY(expr)                                                           \
    do {                                                                       \
        ra_status ra_try_st_ = (expr);                                         \
        if (ra_try_st_ != RA_OK)                                               \
            return ra_try_st_;                                                 \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
