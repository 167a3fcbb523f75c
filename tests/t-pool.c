/* Check suite for the task pool (src/ref/pool.c): thread rule, workspaces, first error. */
#include <config.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpfr.h>
#include <omp.h>

#include "ref/pool.h"
#include "testutil.h"

/*
 * A toy loop whose expected behaviour is stated by hand: task t writes
 * 3 t + 1 into its slot and counts its runs; workers count how many tasks
 * their workspace served.  For the first-error rule, task 0 is slow and
 * task 1 fails: with chunks of four tasks, a second worker meets the
 * failures at 9 and 40 long before the first worker reaches task 1, and the
 * pool must still run task 1 and report it, once, for every thread count.
 */

#define NT 200

typedef struct toy {
    int64_t out[NT];
    atomic_int runs[NT];
    atomic_int made, freed, served;
    int fail_ws;     /* worker whose workspace cannot be made (-1: none) */
    int64_t fail[3]; /* failing tasks (-1: unused) */
    int64_t slow;    /* a task that sleeps before it runs (-1: none) */
    int check_range; /* tasks check the widened exponent range */
    atomic_int range_bad;
} toy;

typedef struct toy_ws {
    int worker, served;
} toy_ws;

static ra_status toy_ws_new(void **ws, void *ctx, int worker)
{
    toy *t = ctx;
    if (worker == t->fail_ws)
        RA_ERRORF(RA_ENOMEM, "no workspace for worker %d", worker);
    toy_ws *w = calloc(1, sizeof *w);
    ck_assert_ptr_nonnull(w);
    w->worker = worker;
    atomic_fetch_add(&t->made, 1);
    *ws = w;
    return RA_OK;
}

static void toy_ws_free(void *ws, void *ctx)
{
    toy *t = ctx;
    toy_ws *w = ws;
    atomic_fetch_add(&t->freed, 1);
    atomic_fetch_add(&t->served, w->served);
    free(w);
}

static ra_status toy_task(void *ws, void *ctx, int64_t task, char *msg, size_t msglen)
{
    toy *t = ctx;
    toy_ws *w = ws;
    w->served++;
    atomic_fetch_add(&t->runs[task], 1);
    if (t->check_range &&
        (mpfr_get_emin() != mpfr_get_emin_min() || mpfr_get_emax() != mpfr_get_emax_max()))
        atomic_store(&t->range_bad, 1);
    if (task == t->slow)
        nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
    for (int i = 0; i < 3; i++)
        if (task == t->fail[i]) {
            snprintf(msg, msglen, "task %lld failed", (long long)task);
            return i == 0 ? RA_ENUMERIC : RA_EINVAL;
        }
    t->out[task] = 3 * task + 1;
    return RA_OK;
}

static void toy_init(toy *t)
{
    memset(t, 0, sizeof *t);
    t->fail_ws = -1;
    t->fail[0] = t->fail[1] = t->fail[2] = -1;
    t->slow = -1;
}

static ra_pool toy_pool(toy *t, int64_t n, int threads, int64_t chunk)
{
    return (ra_pool){.ntasks = n,
                     .threads = threads,
                     .chunk = chunk,
                     .ctx = t,
                     .ws_new = toy_ws_new,
                     .ws_free = toy_ws_free,
                     .task = toy_task};
}

START_TEST(special_threads)
{
    const int tls = mpfr_buildopt_tls_p();
    ck_assert_int_eq(ra_pool_threads(3), tls ? 3 : 1);
    ck_assert_int_eq(ra_pool_threads(1), 1);
    const int def = omp_get_max_threads();
    ck_assert_int_eq(ra_pool_threads(0), tls && def > 0 ? def : 1);
    ck_assert_int_ge(ra_pool_threads(-4), 1);
    /* no task: no workspace, no call */
    toy t;
    toy_init(&t);
    ra_pool p = toy_pool(&t, 0, 4, 0);
    ck_assert_int_eq(ra_pool_run(&p), RA_OK);
    ck_assert_int_eq(atomic_load(&t.made), 0);
}
END_TEST

/* Every task runs exactly once; one workspace per worker, at most ntasks. */
START_TEST(random_all_tasks)
{
    const int threads[] = {1, 2, 3, 8};
    const int64_t chunks[] = {0, 1, 7};
    const int tls = mpfr_buildopt_tls_p();
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 3; j++) {
            toy t;
            toy_init(&t);
            t.check_range = 1;
            ra_pool p = toy_pool(&t, NT, threads[i], chunks[j]);
            p.widen_range = 1;
            const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
            ck_assert_int_eq(ra_pool_run(&p), RA_OK);
            ck_assert_int_eq(mpfr_get_emin(), emin); /* restored in the calling thread */
            ck_assert_int_eq(mpfr_get_emax(), emax);
            ck_assert_int_eq(atomic_load(&t.range_bad), 0);
            ck_assert_int_eq(atomic_load(&t.made), tls ? threads[i] : 1);
            ck_assert_int_eq(atomic_load(&t.freed), atomic_load(&t.made));
            ck_assert_int_eq(atomic_load(&t.served), NT);
            for (int64_t k = 0; k < NT; k++) {
                ck_assert_int_eq(atomic_load(&t.runs[k]), 1);
                ck_assert_int_eq(t.out[k], 3 * k + 1);
            }
        }
    /* more threads than tasks: three workspaces */
    toy t;
    toy_init(&t);
    ra_pool p = toy_pool(&t, 3, 16, 0);
    ck_assert_int_eq(ra_pool_run(&p), RA_OK);
    ck_assert_int_eq(atomic_load(&t.made), tls ? 3 : 1);
}
END_TEST

/* The lowest failing index is reported, once, whatever the thread count
   and chunk: task 1 fails behind the slow task 0, tasks 9 and 40 at once. */
START_TEST(regress_first_error)
{
    for (int nt = 1; nt <= 6; nt++)
        for (int64_t chunk = 0; chunk <= 4; chunk += 4) {
            toy t;
            toy_init(&t);
            t.fail[0] = 1;
            t.fail[1] = 9;
            t.fail[2] = 40;
            t.slow = 0;
            ra_pool p = toy_pool(&t, 60, nt, chunk);
            tu_reset();
            tu_expect_error(ra_pool_run(&p), RA_ENUMERIC, "task 1 failed");
            ck_assert_int_eq(atomic_load(&t.runs[0]), 1);
            ck_assert_int_eq(atomic_load(&t.runs[1]), 1);
            for (int64_t k = 2; k < 60 && nt == 1; k++) /* one worker: all skipped */
                ck_assert_int_eq(atomic_load(&t.runs[k]), 0);
            ck_assert_int_eq(atomic_load(&t.freed), atomic_load(&t.made));
        }
}
END_TEST

/* A workspace that cannot be made: reported once by its hook, no task
   runs, the workspaces made before it are freed. */
START_TEST(regress_workspace_failure)
{
    if (!mpfr_buildopt_tls_p())
        return; /* one worker only: worker 2 never exists */
    toy t;
    toy_init(&t);
    t.fail_ws = 2;
    ra_pool p = toy_pool(&t, NT, 4, 0);
    tu_reset();
    tu_expect_error(ra_pool_run(&p), RA_ENOMEM, "no workspace for worker 2");
    ck_assert_int_eq(atomic_load(&t.made), 2);
    ck_assert_int_eq(atomic_load(&t.freed), 2);
    for (int64_t k = 0; k < NT; k++)
        ck_assert_int_eq(atomic_load(&t.runs[k]), 0);
}
END_TEST

/* --- several precisions ------------------------------------------------------------------ */

#define MP_UNITS 7
static const mpfr_prec_t mp_precs[3] = {64, 256, 128};

typedef struct mp_rec {
    _Atomic int seen[3][MP_UNITS]; /* runs of (precision index, unit) */
    _Atomic int first;             /* precision index of the first task run, -1 before */
} mp_rec;

static ra_status mp_ws_new(void **ws, void *ctx, mpfr_prec_t prec)
{
    (void)ctx;
    mpfr_prec_t *p = malloc(sizeof *p);
    if (!p)
        RA_ERROR("out of memory", RA_ENOMEM);
    *p = prec;
    *ws = p;
    return RA_OK;
}

static void mp_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    free(ws);
}

static ra_status mp_unit(void *ws, void *ctx, int k, int64_t unit, char *msg, size_t msglen)
{
    mp_rec *r = ctx;
    int none = -1;
    atomic_compare_exchange_strong(&r->first, &none, k);
    if (*(mpfr_prec_t *)ws != mp_precs[k]) {
        snprintf(msg, msglen, "unit %lld at precision index %d got a %ld-bit workspace",
                 (long long)unit, k, (long)*(mpfr_prec_t *)ws);
        return RA_EINTERNAL;
    }
    atomic_fetch_add(&r->seen[k][unit], 1);
    return RA_OK;
}

/* Every (precision, unit) pair once, with that precision's workspace; with
   one thread the 256-bit tasks come first. */
START_TEST(data_multi_precision)
{
    for (int threads = 1; threads <= 2; threads++) {
        mp_rec r;
        memset(&r, 0, sizeof r);
        atomic_store(&r.first, -1);
        const ra_pool_multi m = {.nunits = MP_UNITS,
                                 .nprec = 3,
                                 .precs = mp_precs,
                                 .threads = threads,
                                 .ctx = &r,
                                 .ws_new = mp_ws_new,
                                 .ws_free = mp_ws_free,
                                 .unit = mp_unit};
        ck_assert_int_eq(ra_pool_run_multi(&m), RA_OK);
        for (int k = 0; k < 3; k++)
            for (int u = 0; u < MP_UNITS; u++)
                ck_assert_int_eq(atomic_load(&r.seen[k][u]), 1);
        if (threads == 1)
            ck_assert_int_eq(atomic_load(&r.first), 1);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pool");
    tu_tcase(s, "special", tu_capture, NULL, special_threads);
    tu_tcase(s, "random", tu_capture, NULL, random_all_tasks);
    tu_tcase(s, "data", tu_capture, NULL, data_multi_precision);
    tu_tcase(s, "regress", tu_capture, NULL, regress_first_error, regress_workspace_failure);
    return s;
}

int main(void) { return tu_run(suite()); }
