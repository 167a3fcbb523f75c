/* Progress bar on stderr (terminal only): count, rate and ETA. */
#ifndef RA_CORE_PROGRESS_H
#define RA_CORE_PROGRESS_H

#include <stdint.h>

/*
 * Drawn only when stderr is a terminal and RECAUDIT_NO_PROGRESS is unset;
 * otherwise every call is a cheap no-op, so library code can report
 * progress unconditionally.  ra_progress_add is safe to call from OpenMP
 * worker threads (atomic counter; the thread that crosses a redraw time
 * draws).
 */

typedef struct ra_progress ra_progress;

/* label: "reference gdn", unit: "heads"; total <= 0 means unknown (count
   and rate only, no percent or ETA).  Returns NULL when disabled (every
   function accepts NULL). */
ra_progress *ra_progress_start(const char *label, int64_t total, const char *unit);
void ra_progress_add(ra_progress *p, int64_t n);
/* Clears the line and frees. */
void ra_progress_finish(ra_progress *p);

#endif
