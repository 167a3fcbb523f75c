/* The task pool of the references and gradient checks: threads, workspaces, first error. */
#ifndef RA_REF_POOL_H
#define RA_REF_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <mpfr.h>

#include "core/progress.h"
#include "core/status.h"

/*
 * Every parallel loop of the references and the finite differences has one
 * shape: N independent tasks of uneven cost (dynamic schedule), each thread
 * with its own workspace, MPFR's exponent range widened in every worker
 * (it is a per-thread setting), a progress count, and one error report
 * for the whole loop.  ra_pool_run is that loop, once.
 *
 * Workspaces are made by the calling thread before the parallel region, so
 * that an allocation failure is reported once (by the hook, through
 * RA_ERROR) and no worker starts.  Workers never report: a failing task
 * returns its status and writes its reason into the buffer it is given;
 * the pool keeps the failure of the lowest task index and reports it once
 * after the region.  Workers skip the tasks above the lowest failure seen
 * so far but still run those below it, so the failure reported is the
 * lowest failing index whatever the thread count and the schedule (a plain
 * "stop everything on the first failure" would report whichever failure a
 * thread happened to reach first).  Results that depend on the task alone
 * are therefore bit-identical for any thread count.
 */

/* Threads a parallel loop uses: threads > 0 as given, else the OpenMP
   default; 1 when MPFR is not built thread-safe (mpfr_buildopt_tls_p: its
   flags, exponent range and caches would be shared); at least 1. */
int ra_pool_threads(int threads);

#define RA_POOL_MSG 400

typedef struct ra_pool {
    int64_t ntasks;
    int threads;       /* asked for; ra_pool_threads, at most ntasks */
    int64_t chunk;     /* tasks taken at a time (dynamic schedule); 0: 1 */
    int widen_range;   /* workers run with MPFR's widest exponent range */
    ra_progress *prog; /* advanced by one per task run; may be NULL */
    void *ctx;         /* handed to every hook */
    /* Workspace of worker `worker` (0 .. threads-1), made by the calling
       thread; NULL hook: none.  A failure is reported by the hook. */
    ra_status (*ws_new)(void **ws, void *ctx, int worker);
    /* Frees what ws_new made (also after a failure of a later ws_new). */
    void (*ws_free)(void *ws, void *ctx);
    /* Task `task` in a worker thread with its workspace: must not report;
       on failure returns the status with the reason in msg (msglen bytes). */
    ra_status (*task)(void *ws, void *ctx, int64_t task, char *msg, size_t msglen);
} ra_pool;

/* Runs tasks 0 .. ntasks-1; RA_OK, or the status of the lowest failing
   task (reported once, with its message), or the workspace failure. */
ra_status ra_pool_run(const ra_pool *p);

/* Units of work (a head, a lane) computed at several precisions in one
   pool, as the certification runs p and 2p together: task = (precision
   rank, unit), the highest precision's tasks first (the longest, so that
   the dynamic schedule ends balanced).  A worker's workspace holds one unit
   workspace per precision. */
typedef struct ra_pool_multi {
    int64_t nunits;
    int nprec;
    const mpfr_prec_t *precs; /* nprec of them, any order */
    int threads, widen_range; /* as in ra_pool */
    ra_progress *prog;
    void *ctx;
    /* A unit workspace at prec, made by the calling thread (reports its
       failure); freed by ws_free. */
    ra_status (*ws_new)(void **ws, void *ctx, mpfr_prec_t prec);
    void (*ws_free)(void *ws, void *ctx);
    /* Unit `unit` at precision precs[k] with that precision's workspace;
       as ra_pool's task (never reports). */
    ra_status (*unit)(void *ws, void *ctx, int k, int64_t unit, char *msg, size_t msglen);
} ra_pool_multi;

/* Runs every (precision, unit) task through ra_pool_run. */
ra_status ra_pool_run_multi(const ra_pool_multi *m);

/* Refuses a precision list an MPFR reference cannot run: 1..max entries
   (RA_EINTERNAL), each at least 53 bits so that every stored input is
   exact (RA_EINVAL); op names the reference in the message. */
ra_status ra_pool_check_precs(const mpfr_prec_t *precs, int nprec, int max, const char *op);

#endif
