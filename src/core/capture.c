/* Silent error handler for regions whose errors are re-reported with context. */
#include <config.h>

#include "core/capture.h"

/*
 * The handler is process-wide (status.c); begin/end save and restore the
 * caller's handler, so nesting works and a test's recording handler is
 * back in place afterwards.
 */

static void quiet(const char *reason, const char *file, int line, ra_status code)
{
    (void)reason, (void)file, (void)line, (void)code;
}

ra_error_handler_t *ra_capture_begin(void)
{
    ra_clear_error();
    return ra_set_error_handler(quiet);
}

void ra_capture_end(ra_error_handler_t *prev) { ra_set_error_handler(prev); }
