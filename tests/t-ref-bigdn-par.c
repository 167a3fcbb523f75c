/* Tests of the bigdn reference's parallel structure: heads on teams of threads, bit-identical. */
#include <config.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigdn_case.h"
#include "ref-testutil.h"
#include "ref/bigdn.h"
#include "ref/pool.h"

/*
 * A head of the bigdn reference runs on a team of threads (its frames'
 * products, stream steps and adjoint scans split by rows, its readout and
 * token gradients by tokens); a run puts heads on teams when there are
 * fewer head tasks than threads or the heads are large, else one head per
 * thread.  The claim is exact: every number is the same MPFR value (sign
 * of zero included) for any thread count and either mode.  The expected
 * values are therefore the run on one thread (a plain serial loop: no
 * team, no pool); that the serial values are right is what t-ref-bigdn
 * proves independently (a hand case, a double transcription of SPEC.md,
 * finite differences of every gradient).  Shapes are odd on purpose (S,
 * D, F not multiples of the team sizes, F = 1 without a reverse stream,
 * more threads than rows) so that uneven shares and empty shares occur.
 */

/* a and b are the same MPFR number: value, sign of zero, NaN. */
static int same(mpfr_srcptr a, mpfr_srcptr b)
{
    if (mpfr_nan_p(a) || mpfr_nan_p(b))
        return mpfr_nan_p(a) && mpfr_nan_p(b);
    return mpfr_equal_p(a, b) && mpfr_signbit(a) == mpfr_signbit(b);
}

static void assert_same_arr(const ra_mparr *a, const ra_mparr *b, const char *what, int threads)
{
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        ck_assert_msg(same(a->x + i, b->x + i), "%s[%zu] differs on %d threads", what, i, threads);
}

typedef struct data {
    ra_case c;
    ra_bigdn_data d;
} data;

static void load(data *t, const char *op, const char *regime, const char *shape, uint64_t seed)
{
    tu_generate(&t->c, op, shape, regime, "bf16", seed);
    ra_bigdn_problem p;
    ck_assert_msg(ra_bigdn_problem_init(&p, &t->c, 0, "case") == RA_OK, "%s", ra_last_error());
    ck_assert_int_eq(ra_bigdn_data_init(&t->d, &p), RA_OK);
}

static void unload(data *t)
{
    ra_bigdn_data_clear(&t->d);
    ra_case_clear(&t->c);
}

/* Runs (precs, grads) on 1 thread and on each of threads[], every tensor the same; team[i]:
   whether threads[i] must put the heads on teams (so both modes are proved, not assumed). */
static void check_runs(const char *op, const char *regime, const char *shape, int nprec,
                       const int *threads, const int *team, int n)
{
    static const mpfr_prec_t precs[2] = {128, 256};
    data t;
    load(&t, op, regime, shape, 11);
    ra_bigdn_out want[2], got[2];
    ck_assert_msg(ra_bigdn_run_multi(want, precs, nprec, &t.d.in, 1, 1, NULL) == RA_OK, "%s",
                  ra_last_error());
    for (int i = 0; i < n; i++) {
        if (mpfr_buildopt_tls_p())
            ck_assert_msg((ra_bigdn_team(&t.d.in, nprec, threads[i]) > 1) == team[i],
                          "%s %s on %d threads: team mode %d expected", op, shape, threads[i],
                          team[i]);
        ck_assert_msg(ra_bigdn_run_multi(got, precs, nprec, &t.d.in, 1, threads[i], NULL) == RA_OK,
                      "%s", ra_last_error());
        for (int k = 0; k < nprec; k++) {
            assert_same_arr(&want[k].out, &got[k].out, "out", threads[i]);
            for (int j = 0; j < ra_bigdn_ndiff(t.d.in.kind); j++)
                assert_same_arr(&want[k].g[j], &got[k].g[j], ra_bigdn_arr_name(t.d.in.kind, j),
                                threads[i]);
            ra_bigdn_out_clear(&got[k]);
        }
    }
    for (int k = 0; k < nprec; k++)
        ra_bigdn_out_clear(&want[k]);
    unload(&t);
}

START_TEST(random_threads)
{
    const int one[] = {2, 3, 4, 5}, one_team[] = {1, 1, 1, 1};
    check_runs("bigdn", "sana", "B=1,F=4,S=5,H=1,D=6", 1, one, one_team, 4);
    check_runs("bigdn.core", "default", "B=1,F=3,S=7,H=1,D=10", 1, one, one_team, 4);
    check_runs("bigdn", "default", "B=1,F=1,S=5,H=1,D=4", 1, one, one_team, 4); /* F = 1 */
    check_runs("bigdn", "long-frame", "B=1,F=7,S=2,H=1,D=2", 1, one, one_team, 4);
    /* two precisions: 2 tasks on 2 threads are a pool, on 3 a team */
    const int two[] = {2, 3}, two_team[] = {0, 1};
    check_runs("bigdn", "sana", "B=1,F=3,S=5,H=1,D=6", 2, two, two_team, 2);
    /* several heads: 6 tasks on 2 or 3 threads a pool, on 7 a team */
    const int many[] = {2, 3, 7}, many_team[] = {0, 0, 1};
    check_runs("bigdn", "default", "B=2,F=3,S=3,H=3,D=4", 1, many, many_team, 3);
    check_runs("bigdn.core", "sana", "B=2,F=2,S=5,H=3,D=6", 1, many, many_team, 3);
}
END_TEST

/* The loss path (the element-wise finite differences' unit: one head, no outputs) with every
   perturbation array offset in turn and with a directional perturbation of inputs and
   internal quantities, on a team of 3 against a team of 1. */
static void check_loss(const char *op, const char *shape)
{
    data t;
    load(&t, op, "sana", shape, 5);
    ra_bigdn_ws *w1, *w3;
    ck_assert_int_eq(ra_bigdn_ws_new(&w1, &t.d.in, 128, 0, 1), RA_OK);
    ck_assert_int_eq(ra_bigdn_ws_new(&w3, &t.d.in, 128, 0, 3), RA_OK);
    mpfr_t base, l1, l3, delta, step;
    mpfr_inits2(128, base, l1, l3, delta, step, (mpfr_ptr)0);
    mpfr_set_d(delta, 0x1p-4, MPFR_RNDN);
    mpfr_set_d(step, 0x1p-6, MPFR_RNDN);
    char msg[RA_POOL_MSG];
    ra_bigdn_in in = t.d.in;
    ck_assert_int_eq(ra_bigdn_head(w1, &in, 0, 0, NULL, base, 0, msg, sizeof msg), RA_OK);
    ck_assert_int_eq(ra_bigdn_head(w3, &in, 0, 0, NULL, l3, 0, msg, sizeof msg), RA_OK);
    ck_assert(same(base, l3));
    for (int a = RA_BIGDN_P_QN; a < RA_BIGDN_DOUT; a++) {
        if (!ra_bigdn_arr_exists(in.kind, a))
            continue;
        in.one_arr = a;
        in.one_idx = ra_bigdn_arr_numel(&in.s, in.kind, a) / 2 + 1;
        in.one_delta = delta;
        ck_assert_int_eq(ra_bigdn_head(w1, &in, 0, 0, NULL, l1, 0, msg, sizeof msg), RA_OK);
        ck_assert_int_eq(ra_bigdn_head(w3, &in, 0, 0, NULL, l3, 0, msg, sizeof msg), RA_OK);
        ck_assert_msg(same(l1, l3), "loss with %s offset differs", ra_bigdn_arr_name(in.kind, a));
        /* the offset reached the loss (Qn, Kn may sit below the ReLU's kink either way) */
        if (a != RA_BIGDN_P_QN && a != RA_BIGDN_P_KN)
            ck_assert_msg(!mpfr_equal_p(l1, base), "%s offset ignored",
                          ra_bigdn_arr_name(in.kind, a));
    }
    in.one_arr = -1;
    /* a direction on every array at once: each element of dir is 1 - 2 (i mod 3) / 3 */
    double *dir[RA_BIGDN_NARR] = {0};
    for (int a = 0; a < RA_BIGDN_DOUT; a++) {
        if (!ra_bigdn_arr_exists(in.kind, a))
            continue;
        const int64_t n = ra_bigdn_arr_numel(&in.s, in.kind, a);
        dir[a] = malloc((size_t)n * sizeof(double));
        for (int64_t i = 0; i < n; i++)
            dir[a][i] = 1 - 2 * (double)(i % 3) / 3;
        in.dir[a] = dir[a];
    }
    in.step = step;
    ck_assert_int_eq(ra_bigdn_head(w1, &in, 0, 0, NULL, l1, 0, msg, sizeof msg), RA_OK);
    ck_assert_int_eq(ra_bigdn_head(w3, &in, 0, 0, NULL, l3, 0, msg, sizeof msg), RA_OK);
    ck_assert(same(l1, l3) && !mpfr_equal_p(l1, base));
    for (int a = 0; a < RA_BIGDN_NARR; a++)
        free(dir[a]);
    mpfr_clears(base, l1, l3, delta, step, (mpfr_ptr)0);
    ra_bigdn_ws_free(w1);
    ra_bigdn_ws_free(w3);
    unload(&t);
}

START_TEST(random_loss)
{
    check_loss("bigdn", "B=1,F=3,S=5,H=1,D=6");
    check_loss("bigdn.core", "B=1,F=4,S=3,H=1,D=4");
}
END_TEST

/* When heads run on teams and one fails, the failure reported is the same as one thread's:
   the lowest failing task, naming its head (bigdn.core with eps = 0 and head 1's beta = 0:
   den + eps = 0 there; head 0 has positive Q, K and beta, so its den is positive). */
START_TEST(regress_team_failure)
{
    data t;
    load(&t, "bigdn.core", "default", "B=1,F=2,S=3,H=2,D=4", 3);
    const ra_bigdn_shape *s = &t.d.in.s;
    for (int a = RA_BIGDN_Q; a <= RA_BIGDN_K; a++)
        for (int64_t i = 0; i < ra_bigdn_arr_numel(s, t.d.in.kind, a); i++)
            t.d.buf[a][i] = fabs(t.d.buf[a][i]) + 0.25;
    for (int64_t f = 0; f < s->F; f++)
        for (int64_t j = 0; j < s->S; j++) {
            t.d.buf[RA_BIGDN_CBETA][ra_bigdn_beta(s, 0, 0, f, j)] = 0.5;
            t.d.buf[RA_BIGDN_CBETA][ra_bigdn_beta(s, 0, 1, f, j)] = 0;
        }
    t.d.in.eps = 0;
    for (int threads = 1; threads <= 3; threads += 2) {
        if (threads > 1 && mpfr_buildopt_tls_p())
            ck_assert_int_eq(ra_bigdn_team(&t.d.in, 1, threads), threads);
        ra_bigdn_out o;
        tu_reset();
        tu_expect_error(ra_bigdn_run(&o, &t.d.in, 128, 1, threads, NULL), RA_ENUMERIC, "h=1)",
                        "den + eps", "b=0");
    }
    unload(&t);
}
END_TEST

/* The mode a run picks (docs/bigdn.md): a team when there are fewer head tasks than threads,
   or the heads are large (1e7 MPFR calls or more) and there are fewer than 4 tasks per thread;
   else one head per thread. */
START_TEST(special_team_choice)
{
    if (!mpfr_buildopt_tls_p())
        return; /* one thread always */
    ra_bigdn_in in = {.kind = RA_BIGDN_FULL, .s = {1, 3, 5, 1, 4}};
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 1), 1);
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 3), 3); /* 2 tasks < 3 threads */
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 2), 1); /* small heads, 2 tasks on 2 threads */
    in.s = (ra_bigdn_shape){4, 3, 5, 20, 4};
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 16), 1); /* 160 small tasks */
    in.s = (ra_bigdn_shape){1, 11, 920, 20, 112};   /* production: 40 tasks of ~2e9 calls */
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 16), 16);
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 8), 1); /* 5 tasks per thread */
    in.s = (ra_bigdn_shape){1, 3, 92, 1, 112};     /* bench-ref's unit: ~8e7 calls */
    ck_assert_int_eq(ra_bigdn_team(&in, 2, 2), 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref-bigdn-par");
    tu_tcase(s, "special", tu_capture, NULL, special_team_choice);
    tu_tcase(s, "random", tu_capture, NULL, random_threads, random_loss);
    tu_tcase(s, "regress", tu_capture, NULL, regress_team_failure);
    return s;
}

int main(void) { return tu_run(suite()); }
