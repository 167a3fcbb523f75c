/* The first failure of a parallel loop over tasks, reported once after it. */
#include "ref/first_error.h"

#include <stdio.h>

void ra_first_error_init(ra_first_error *e)
{
    atomic_init(&e->failed, 0);
    e->at = INT64_MAX;
    e->st = RA_OK;
    e->msg[0] = '\0';
}

void ra_first_error_record(ra_first_error *e, int64_t at, ra_status st, const char *msg)
{
    atomic_store(&e->failed, 1);
#pragma omp critical(ra_first_error)
    if (at < e->at) {
        e->at = at;
        e->st = st;
        snprintf(e->msg, sizeof e->msg, "%s", msg);
    }
}

ra_status ra_first_error_report(const ra_first_error *e)
{
    if (e->st != RA_OK)
        RA_REPORTF(e->st, "%s", e->msg);
    return e->st;
}
