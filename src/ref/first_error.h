/* The first failure of a parallel loop over tasks, reported once after it. */
#ifndef RA_REF_FIRST_ERROR_H
#define RA_REF_FIRST_ERROR_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/status.h"

/*
 * Worker threads must not report (one failure would print once per thread,
 * in a thread-dependent order).  Each records its failure with the task
 * index; the lowest index wins, so the message is the same for any thread
 * count, and the loop's owner reports it once the parallel region ends.
 * `failed` lets the other workers skip their remaining tasks.
 */

typedef struct ra_first_error {
    atomic_int failed;
    int64_t at;
    ra_status st;
    char msg[400];
} ra_first_error;

void ra_first_error_init(ra_first_error *e);
/* Thread-safe; keeps the failure of the lowest task index. */
void ra_first_error_record(ra_first_error *e, int64_t at, ra_status st, const char *msg);
static inline int ra_first_error_seen(ra_first_error *e) { return atomic_load(&e->failed); }
/* Outside the parallel region: reports the kept failure (if any) and
   returns its status, RA_OK when none. */
ra_status ra_first_error_report(const ra_first_error *e);

#endif
