/* Regions in which library errors are recorded but not printed. */
#ifndef RA_CORE_CAPTURE_H
#define RA_CORE_CAPTURE_H

#include "core/status.h"

/*
 * The audit calls code (parsers, variants) whose error message it wants to
 * re-report with more context (a file and line, a verdict row) instead of
 * letting it be printed bare.  ra_error records the reason for the calling
 * thread (ra_last_error) before it calls the handler, so a handler that
 * does nothing is enough: between begin and end, read ra_last_error().
 * Only the calling thread's reason is kept; code that reports from worker
 * threads is outside the contract (variants report from the caller).
 */

ra_error_handler_t *ra_capture_begin(void);
void ra_capture_end(ra_error_handler_t *prev);

#endif
