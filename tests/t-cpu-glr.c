/* Tests of the CPU glr variants against the MPFR reference: both decays, chunk tails, threads. */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/gen_glr.h"
#include "core/glr_case.h"
#include "cpu/glr_variants.h"
#include "ref-testutil.h"
#include "ref/glr.h"

/*
 * Expected values: the MPFR reference (src/ref/glr.c, itself proven by
 * closed forms, a naive transcription and finite differences in
 * t-ref-glr), a different algorithm at 128 bits.  Tolerances are normwise
 * (max |err| / max |ref|) from fp32 arithmetic: u = 2^-24 per operation
 * over a few hundred dependent operations gives ~1e-6; the chunked dg and
 * dA_log recover alpha from a cumulative log decay whose fp32 rounding is
 * about |L| u with |L| up to 64 * 6 (hymo), so they get 2e-4.  A wrong
 * formula gives errors of order 1.
 */

static void gen(ra_case *c, const char *shape, const char *regime, int linear, uint64_t seed)
{
    ra_case_spec sp;
    ra_case_spec_init(&sp);
    strcpy(sp.op, "glr");
    snprintf(sp.shape, sizeof sp.shape, "%s", shape);
    snprintf(sp.regime, sizeof sp.regime, "%s", regime);
    strcpy(sp.dtype, "f32");
    sp.seed = seed;
    sp.flags = linear ? RA_GLR_FLAG_LINEAR : 0;
    ra_case_init(c);
    ck_assert_msg(ra_glr_generate(c, &sp) == RA_OK, "%s", ra_last_error());
}

/* max |x - ref| / max |ref| of tensor t against the MPFR array a. */
static double normwise(const ra_tensor *t, const ra_mparr *a)
{
    ck_assert_int_eq(t->numel, (int64_t)a->n);
    double err = 0, scale = 0;
    for (int64_t i = 0; i < t->numel; i++) {
        const double r = mpfr_get_d(a->x + i, MPFR_RNDN);
        err = fmax(err, fabs(ra_tensor_get(t, i) - r));
        scale = fmax(scale, fabs(r));
    }
    return scale > 0 ? err / scale : err;
}

static void check_case(const ra_case *c, int threads)
{
    ra_glr_problem p;
    ck_assert_int_eq(ra_glr_problem_init(&p, c, 0, "case"), RA_OK);
    ra_glr_data d;
    ck_assert_int_eq(ra_glr_data_init(&d, &p), RA_OK);
    ra_glr_out ref;
    ck_assert_int_eq(ra_glr_run(&ref, &d.in, 128, 1, 1, NULL), RA_OK);
    const char *names[] = {"o", "dv", "db", "dc", "dg", "dA_log"};
    const ra_mparr *want[] = {&ref.o, &ref.dv, &ref.db, &ref.dc, &ref.dg, &ref.dA_log};
    for (size_t vi = 0; vi < ra_cpu_glr_nvariants; vi++) {
        const ra_variant *v = &ra_cpu_glr_variants[vi];
        const int chunk = strstr(v->name, "chunk") != NULL;
        ra_tensors out;
        ra_tensors_init(&out);
        ra_run run = {.threads = threads, .elapsed_ms = -1};
        ck_assert_int_eq(v->forward(v, c, &out, &run), RA_OK);
        ck_assert_int_eq(v->backward(v, c, &out, &run), RA_OK);
        for (int k = 0; k < 6; k++) {
            const double tol = chunk && k >= 4 ? 2e-4 : 2e-5;
            const double e = normwise(tu_tensor(&out, names[k]), want[k]);
            ck_assert_msg(e <= tol, "%s %s: normwise error %.3g > %.0e", v->name, names[k], e, tol);
        }
        ra_tensors_clear(&out);
    }
    ra_glr_out_clear(&ref);
    ra_glr_data_clear(&d);
}

/* Both decays, every regime; T = 1, a partial last chunk, several chunks. */
START_TEST(data_against_reference)
{
    static const char *shapes[] = {"B=1,T=1,H=1,S=3,D=2", "B=2,T=70,H=2,S=4,D=3",
                                   "B=1,T=130,H=1,S=5,D=4"};
    static const char *regimes[] = {"hymo", "long-memory", "zero-gate"};
    for (int si = 0; si < 3; si++)
        for (int ri = 0; ri < 3; ri++)
            for (int lin = 0; lin < 2; lin++) {
                ra_case c;
                gen(&c, shapes[si], regimes[ri], lin, 7 + (uint64_t)si);
                check_case(&c, 1);
                ra_case_clear(&c);
            }
}
END_TEST

/* glr.cpu.f32.store once formed dv from lambda after it was multiplied by
   alpha_t (dL/dh_{t-1}'s share) instead of lambda = dL/dh_t: dv off by a
   factor alpha, an error of order 1 under hymo's strong decay. */
START_TEST(regress_store_dv_before_decay)
{
    ra_case c;
    gen(&c, "B=1,T=20,H=1,S=4,D=4", "hymo", 0, 3);
    check_case(&c, 2);
    ra_case_clear(&c);
}
END_TEST

/* The same bytes for any thread count. */
START_TEST(regress_threads)
{
    ra_case c;
    gen(&c, "B=3,T=70,H=2,S=4,D=3", "hymo", 1, 5);
    for (size_t vi = 0; vi < ra_cpu_glr_nvariants; vi++) {
        const ra_variant *v = &ra_cpu_glr_variants[vi];
        ra_tensors a, b;
        ra_tensors_init(&a);
        ra_tensors_init(&b);
        ra_run r1 = {.threads = 1, .elapsed_ms = -1}, r3 = {.threads = 3, .elapsed_ms = -1};
        ck_assert_int_eq(v->backward(v, &c, &a, &r1), RA_OK);
        ck_assert_int_eq(v->backward(v, &c, &b, &r3), RA_OK);
        tu_assert_same_tensors(&a, &b);
        ra_tensors_clear(&a);
        ra_tensors_clear(&b);
    }
    ra_case_clear(&c);
}
END_TEST

/* A case without do: the backward refuses it by name; a NaN input is
   refused naming tensor and index. */
START_TEST(data_refusals)
{
    ra_case c;
    gen(&c, "B=1,T=4,H=1,S=2,D=2", "hymo", 0, 1);
    const ra_variant *v = &ra_cpu_glr_variants[0];
    ra_tensors out;
    ra_tensors_init(&out);
    ra_run run = {.threads = 1, .elapsed_ms = -1};
    ra_tensor_set(tu_t(&c, "b"), 5, NAN); /* [0, 2, 0, 1] of [1, 4, 1, 2] */
    tu_expect_error(v->forward(v, &c, &out, &run), RA_EINVAL, "tensor 'b' element [0, 2, 0, 1]");
    ra_tensor_set(tu_t(&c, "b"), 5, 0.5);
    tu_t(&c, "do")->name[0] = 'x'; /* renamed "xo": the case has no do */
    tu_expect_error(v->backward(v, &c, &out, &run), RA_ENOTFOUND, "'do'");
    ra_tensors_clear(&out);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu-glr");
    tu_tcase(s, "data", tu_capture, NULL, data_against_reference, data_refusals);
    tu_tcase(s, "regress", tu_capture, NULL, regress_store_dv_before_decay, regress_threads);
    return s;
}

int main(void) { return tu_run(suite()); }
