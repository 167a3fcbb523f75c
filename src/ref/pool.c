/* The task pool: an OpenMP loop over independent tasks, with workspaces and one error report. */
#include "ref/pool.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpfr.h>
#include <omp.h>

#include "ref/mparr.h"

/*
 * Dynamic schedule: tasks of one loop may differ in cost (heads at two
 * precisions, q elements that feed a whole group of heads next to v
 * elements that feed one), so threads take the next task when free.
 *
 * First error: `at` holds the lowest failing index recorded so far
 * (INT64_MAX while none).  A worker skips task t only when t > at; any
 * task below the failure still runs and may lower `at`.  When the loop
 * ends, every task below the final `at` has run and succeeded, so `at` is
 * the lowest failing index of the whole loop, independent of which thread
 * ran what and when.  The message of that task is kept under a critical
 * section (the slow path, taken only on failure); the fast path is one
 * relaxed atomic load per task.
 */

int ra_pool_threads(int threads)
{
    int nt = threads > 0 ? threads : omp_get_max_threads();
    if (!mpfr_buildopt_tls_p() || nt < 1)
        nt = 1;
    return nt;
}

typedef struct first_error {
    _Atomic int64_t at;
    ra_status st;
    char msg[RA_POOL_MSG];
} first_error;

static void record(first_error *e, int64_t at, ra_status st, const char *msg)
{
#pragma omp critical(ra_pool_first_error)
    if (at < atomic_load(&e->at)) {
        e->st = st;
        snprintf(e->msg, sizeof e->msg, "%s", msg);
        atomic_store(&e->at, at);
    }
}

ra_status ra_pool_run(const ra_pool *p)
{
    if (p->ntasks <= 0)
        return RA_OK;
    int nt = ra_pool_threads(p->threads);
    if (nt > p->ntasks)
        nt = (int)p->ntasks;
    const int64_t chunk = p->chunk > 0 ? p->chunk : 1;
    void **ws = calloc((size_t)nt, sizeof *ws);
    if (!ws)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = RA_OK;
    int made = 0;
    while (p->ws_new && made < nt && st == RA_OK) {
        st = p->ws_new(&ws[made], p->ctx, made);
        if (st == RA_OK)
            made++;
    }
    first_error fe;
    atomic_init(&fe.at, INT64_MAX);
    fe.st = RA_OK;
    fe.msg[0] = '\0';
    if (st == RA_OK) {
#pragma omp parallel num_threads(nt)
        {
            void *w = ws[omp_get_thread_num()];
            ra_mp_range range;
            if (p->widen_range)
                ra_mp_range_widen(&range);
            char msg[RA_POOL_MSG];
#pragma omp for schedule(dynamic, chunk)
            for (int64_t t = 0; t < p->ntasks; t++) {
                if (t > atomic_load_explicit(&fe.at, memory_order_relaxed))
                    continue;
                msg[0] = '\0';
                ra_status ts = p->task(w, p->ctx, t, msg, sizeof msg);
                if (ts != RA_OK)
                    record(&fe, t, ts, msg[0] ? msg : "a task failed without a reason");
                ra_progress_add(p->prog, 1);
            }
            if (p->widen_range)
                ra_mp_range_restore(&range);
            /* the worker's MPFR caches (constants at the loop's precision)
               would stay allocated in the idle OpenMP thread */
            mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
        }
        if (fe.st != RA_OK) {
            RA_REPORTF(fe.st, "%s", fe.msg);
            st = fe.st;
        }
    }
    for (int i = 0; p->ws_free && i < made; i++)
        p->ws_free(ws[i], p->ctx);
    free(ws);
    return st;
}

/* --- several precisions ------------------------------------------------------------------------ */

typedef struct multi_run {
    const ra_pool_multi *m;
    int *order; /* precision indices, highest precision first */
} multi_run;

static void multi_ws_free(void *ws, void *ctx)
{
    const multi_run *r = ctx;
    void **w = ws;
    for (int k = 0; w && k < r->m->nprec; k++)
        if (w[k])
            r->m->ws_free(w[k], r->m->ctx);
    free(w);
}

static ra_status multi_ws_new(void **ws, void *ctx, int worker)
{
    (void)worker;
    const multi_run *r = ctx;
    void **w = calloc((size_t)r->m->nprec, sizeof *w);
    if (!w)
        RA_ERROR("out of memory for the workspaces", RA_ENOMEM);
    for (int k = 0; k < r->m->nprec; k++) {
        ra_status st = r->m->ws_new(&w[k], r->m->ctx, r->m->precs[k]);
        if (st != RA_OK) {
            multi_ws_free(w, ctx);
            return st;
        }
    }
    *ws = w;
    return RA_OK;
}

static ra_status multi_task(void *ws, void *ctx, int64_t task, char *msg, size_t msglen)
{
    const multi_run *r = ctx;
    const int k = r->order[task / r->m->nunits];
    return r->m->unit(((void **)ws)[k], r->m->ctx, k, task % r->m->nunits, msg, msglen);
}

ra_status ra_pool_run_multi(const ra_pool_multi *m)
{
    if (m->nprec < 1)
        RA_ERRORF(RA_EINTERNAL, "pool: %d precisions in one run", m->nprec);
    multi_run r = {m, calloc((size_t)m->nprec, sizeof(int))};
    if (!r.order)
        RA_ERROR("out of memory", RA_ENOMEM);
    for (int k = 0; k < m->nprec; k++)
        r.order[k] = k;
    for (int a = 1; a < m->nprec; a++) /* insertion sort, decreasing precision */
        for (int b = a; b > 0 && m->precs[r.order[b]] > m->precs[r.order[b - 1]]; b--) {
            const int t = r.order[b];
            r.order[b] = r.order[b - 1], r.order[b - 1] = t;
        }
    const ra_pool pool = {.ntasks = m->nunits * m->nprec,
                          .threads = m->threads,
                          .widen_range = m->widen_range,
                          .prog = m->prog,
                          .ctx = &r,
                          .ws_new = multi_ws_new,
                          .ws_free = multi_ws_free,
                          .task = multi_task};
    const ra_status st = ra_pool_run(&pool);
    free(r.order);
    return st;
}

ra_status ra_pool_check_precs(const mpfr_prec_t *precs, int nprec, int max, const char *op)
{
    if (nprec < 1 || nprec > max)
        RA_ERRORF(RA_EINTERNAL, "%s reference: %d precisions in one run", op, nprec);
    for (int k = 0; k < nprec; k++)
        if (precs[k] < 53 || precs[k] > MPFR_PREC_MAX)
            RA_ERRORF(RA_EINVAL,
                      "precision %ld bits: the %s reference needs at least 53 (so every stored "
                      "input is exact)",
                      (long)precs[k], op);
    return RA_OK;
}
