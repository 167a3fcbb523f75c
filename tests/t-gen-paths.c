/* Check suite for the generator's less common paths: scale, no dht, raw keys' bounded truth. */
#include <config.h>

#include <check.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit.h"
#include "core/gen_gdn.h"
#include "core/op.h"
#include "ref/ref.h"
#include "testutil.h"

/*
 * Cases come from the generator (ra_case_spec_generate, the path `gen`
 * and suites take), references from the MPFR reference; expected values
 * come from hand algebra:
 *  - T = 1 without h0 (docs/gdn.md; the closed form of t-ref-gdn's
 *    special_t1): S1 = beta k v^T, so o = scale (q . k) beta v.  Without
 *    dht the backward's only seed is Lam = scale q do^T, so every gradient
 *    is linear in scale: at K = 4 (default scale 1/2) scale 0.3 gives 0.6
 *    times each default-scale gradient.
 *  - no dht means dht = 0 (SPEC.md section 1): the reference of a case
 *    without dht equals that of the same case with an explicit zero dht.
 *  - raw-keys: the transitions alpha (I - beta k k^T) have spectral norm
 *    <= 1 when 0 <= beta |k|^2 <= 2 and alpha <= 1, so every state and
 *    every adjoint state is bounded by a sum over tokens (the bound is
 *    computed from the case below), far below the f32 maximum.
 */

static ra_case_spec spec_of(const char *shape, const char *regime, const char *dtype,
                            unsigned flags, const char *param, uint64_t seed)
{
    ra_case_spec s = tu_spec("gdn", shape, regime, dtype, seed);
    s.flags = flags;
    const ra_op *op = ra_op_find("gdn");
    if (param)
        ck_assert_msg(ra_case_spec_set_param(&s, op, param) == RA_OK, "%s", ra_last_error());
    ck_assert_msg(ra_case_spec_check(&s, "test") == RA_OK, "%s", ra_last_error());
    return s;
}

static void gen_ref(ra_case *c, ra_case *ref, const ra_case_spec *s)
{
    ra_case_init(c);
    ra_case_init(ref);
    ck_assert_msg(ra_case_spec_generate(c, s) == RA_OK, "%s", ra_last_error());
    ra_ref_opts o;
    ra_ref_opts_init(&o);
    o.use_cache = 0;
    o.progress = 0;
    ck_assert_msg(ra_ref_compute(ref, c, &o, "gen-paths") == RA_OK, "%s", ra_last_error());
    ck_assert_str_eq(ra_case_param(ref, "certified"), "yes");
}

/* |got - want| <= ulps 2^-53 |want| (0 when want is 0). */
static void near(double got, double want, double ulps, const char *what, int64_t i)
{
    ck_assert_msg(fabs(got - want) <= ulps * 0x1p-53 * fabs(want), "%s[%lld]: %.17g, want %.17g",
                  what, (long long)i, got, want);
}

/* --- special: scale --------------------------------------------------------------- */

START_TEST(special_scale_t1)
{
    const char *shape = "B=1,T=1,Hk=1,Hv=1,K=4,V=3";
    ra_case_spec sd = spec_of(shape, "default", "f64", RA_GDN_FLAG_NO_DHT, NULL, 31);
    ra_case_spec s3 = spec_of(shape, "default", "f64", RA_GDN_FLAG_NO_DHT, "scale=0.3", 31);
    ra_case cd, rd, c3, r3;
    gen_ref(&cd, &rd, &sd);
    gen_ref(&c3, &r3, &s3);
    ck_assert_ptr_null(ra_case_param(&cd, "scale"));
    ck_assert_str_eq(ra_case_param(&c3, "scale"), "0.3");
    /* o = 0.3 (q . k) beta v, in MPFR at 200 bits (0.3 read as decimal) */
    mpfr_t x, y;
    mpfr_inits2(200, x, y, (mpfr_ptr)0);
    mpfr_set_zero(x, 1);
    for (int i = 0; i < 4; i++) {
        mpfr_set_d(y, tu_at(&c3.tensors, "q", i), MPFR_RNDN);
        mpfr_mul_d(y, y, tu_at(&c3.tensors, "k", i), MPFR_RNDN);
        mpfr_add(x, x, y, MPFR_RNDN);
    }
    mpfr_mul_d(x, x, tu_at(&c3.tensors, "beta", 0), MPFR_RNDN);
    mpfr_set_str(y, "0.3", 10, MPFR_RNDN);
    mpfr_mul(x, x, y, MPFR_RNDN);
    for (int j = 0; j < 3; j++) {
        mpfr_mul_d(y, x, tu_at(&c3.tensors, "v", j), MPFR_RNDN);
        near(tu_at(&r3.tensors, "o", j), mpfr_get_d(y, MPFR_RNDN), 1, "o", j);
    }
    mpfr_clears(x, y, (mpfr_ptr)0);
    /* every output but ht and every gradient: 0.6 times the default's
       (each reference is a rounding of its real value: 2 roundings apart) */
    static const char *const lin[] = {"o", "dq", "dk", "dv", "dg", "dbeta"};
    for (size_t n = 0; n < sizeof lin / sizeof lin[0]; n++) {
        const ra_tensor *a = tu_t(&rd, lin[n]), *b = tu_t(&r3, lin[n]);
        ck_assert_int_eq(a->numel, b->numel);
        for (int64_t i = 0; i < a->numel; i++)
            near(ra_tensor_get(b, i), 0.6 * ra_tensor_get(a, i), 3, lin[n], i);
    }
    /* ht = S1 does not depend on scale */
    const ra_tensor *ha = tu_t(&rd, "ht"), *hb = tu_t(&r3, "ht");
    for (int64_t i = 0; i < ha->numel; i++)
        ck_assert(ra_tensor_get(ha, i) == ra_tensor_get(hb, i));
    ra_case_clear(&cd), ra_case_clear(&rd), ra_case_clear(&c3), ra_case_clear(&r3);
}
END_TEST

/* --- data: no dht ------------------------------------------------------------------ */

START_TEST(data_no_dht_is_zero_dht)
{
    const char *shape = "B=1,T=9,Hk=1,Hv=2,K=4,V=3";
    ra_case_spec s = spec_of(shape, "default", "f32", RA_GDN_FLAG_NO_DHT | RA_GDN_FLAG_H0, NULL, 5);
    ra_case c, ref, cz, rz;
    gen_ref(&c, &ref, &s);
    ck_assert_ptr_null(ra_tensors_find(&c.tensors, "dht"));
    ck_assert_ptr_nonnull(ra_tensors_find(&c.tensors, "do"));
    /* the case says what it is: identify reports the flag */
    ra_case_spec id;
    ra_case_spec_from_case(&id, &c, 1);
    ck_assert_uint_eq(id.flags, RA_GDN_FLAG_NO_DHT | RA_GDN_FLAG_H0);
    /* the same case with dht = 0 written out */
    ra_case_init(&cz);
    ra_case_init(&rz);
    ck_assert_int_eq(ra_case_spec_generate(&cz, &s), RA_OK);
    ra_tensor *z;
    ck_assert_int_eq(
        ra_tensors_new(&cz.tensors, &z, "dht", RA_F32, 4, (const int64_t[]){1, 2, 4, 3}), RA_OK);
    ra_ref_opts o;
    ra_ref_opts_init(&o);
    o.use_cache = 0;
    o.progress = 0;
    ck_assert_msg(ra_ref_compute(&rz, &cz, &o, "zero dht") == RA_OK, "%s", ra_last_error());
    static const char *const all[] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"};
    for (size_t n = 0; n < sizeof all / sizeof all[0]; n++) {
        const ra_tensor *a = tu_t(&ref, all[n]), *b = tu_t(&rz, all[n]);
        ck_assert_int_eq(a->numel, b->numel);
        for (int64_t i = 0; i < a->numel; i++) /* + 0 is exact in MPFR */
            ck_assert_msg(ra_tensor_get(a, i) == ra_tensor_get(b, i), "%s[%lld]: %.17g vs %.17g",
                          all[n], (long long)i, ra_tensor_get(a, i), ra_tensor_get(b, i));
    }
    /* and dht does matter when it is not zero: dh0 moves */
    ra_tensor_set(z, 0, 1.0);
    ra_case_clear(&rz);
    ck_assert_int_eq(ra_ref_compute(&rz, &cz, &o, "unit dht"), RA_OK);
    ck_assert(ra_tensor_get(tu_t(&rz, "dh0"), 0) != ra_tensor_get(tu_t(&ref, "dh0"), 0));
    ra_case_clear(&c), ra_case_clear(&ref), ra_case_clear(&cz), ra_case_clear(&rz);
}
END_TEST

/* --- regress: raw keys' truth is representable --------------------------------------- */

/* Largest 2-norm of the rows of length n of tensor name (a row per (t, head)). */
static double max_row_norm(const ra_case *c, const char *name, double *sum_out, const char *with,
                           double with_scale)
{
    const ra_tensor *t = tu_t(c, name);
    const int64_t n = t->shape[t->ndim - 1], rows = t->numel / n;
    const ra_tensor *w = with ? tu_t(c, with) : NULL;
    const int64_t wn = w ? w->shape[w->ndim - 1] : 0;
    double worst = 0, sum = 0;
    for (int64_t r = 0; r < rows; r++) {
        double s = 0, sw = 0;
        for (int64_t i = 0; i < n; i++)
            s += ra_tensor_get(t, r * n + i) * ra_tensor_get(t, r * n + i);
        for (int64_t i = 0; i < wn; i++)
            sw += ra_tensor_get(w, r * wn + i) * ra_tensor_get(w, r * wn + i);
        worst = fmax(worst, sqrt(s));
        sum += with_scale * sqrt(s) * sqrt(sw);
    }
    if (sum_out)
        *sum_out = sum;
    return worst;
}

/*
 * raw-keys at K = 64, T = 512 (Hk = Hv = 1, V = 4): unscaled Uniform(0,1)
 * keys gave beta |k|^2 near 10 and a reference near 1e203 (every kernel
 * then "failed").  Now beta |k|^2 < 2 for every token, and with
 * S = sum_t |k_t| |v_t| (a bound on every state's spectral norm: norm-1
 * transitions plus rank-1 inputs beta k v^T) and L = sum_t scale |q_t|
 * |do_t| (the same for the adjoint states, no dht), every output and
 * gradient is at most
 *     M = min(K,V) (1 + kmax^2) (1 + S) (1 + L) (1 + qmax + kmax + vmax + domax)^2
 * (o <= scale qmax S; dq <= scale S domax; u <= vmax + S kmax, du <= L kmax;
 * dk <= L u + S du; dbeta <= du u; dg = <dS~, S~> <= min(K,V) (L + kmax^2 L) S).
 * The test asserts max |ref| <= M and M < 1e12: 26 orders of magnitude
 * below the f32 maximum 3.4e38.
 */
START_TEST(regress_raw_keys_representable)
{
    ra_case_spec s = spec_of("B=1,T=512,Hk=1,Hv=1,K=64,V=4", "raw-keys", "f32", 0, NULL, 7);
    ra_case c, ref;
    gen_ref(&c, &ref, &s);
    const ra_tensor *k = tu_t(&c, "k"), *beta = tu_t(&c, "beta");
    for (int64_t t = 0; t < 512; t++) {
        double n2 = 0;
        for (int i = 0; i < 64; i++)
            n2 += ra_tensor_get(k, t * 64 + i) * ra_tensor_get(k, t * 64 + i);
        ck_assert_msg(ra_tensor_get(beta, t) * n2 < 2, "token %lld: beta |k|^2 = %g", (long long)t,
                      ra_tensor_get(beta, t) * n2);
    }
    double S, L;
    const double kmax = max_row_norm(&c, "k", &S, "v", 1.0);
    const double qmax = max_row_norm(&c, "q", &L, "do", 1.0 / 8); /* scale 64^-1/2 */
    const double vmax = max_row_norm(&c, "v", NULL, NULL, 0);
    const double domax = max_row_norm(&c, "do", NULL, NULL, 0);
    const double m = 1 + qmax + kmax + vmax + domax;
    const double M = 4 * (1 + kmax * kmax) * (1 + S) * (1 + L) * m * m;
    ck_assert_msg(M < 1e12, "bound %g", M);
    for (size_t n = 0; n < ref.tensors.n; n++) {
        const ra_tensor *t = ref.tensors.items[n];
        for (int64_t i = 0; i < t->numel; i++)
            ck_assert_msg(fabs(ra_tensor_get(t, i)) <= M, "%s[%lld] = %g > %g", t->name,
                          (long long)i, ra_tensor_get(t, i), M);
    }
    ra_case_clear(&c), ra_case_clear(&ref);
}
END_TEST

/* A finite reference beyond the result dtype's range is a no-verdict FAIL
   row saying so, not a comparison of a rounding with 1e203. */
START_TEST(regress_ref_out_of_range)
{
    ra_case res, ref;
    ra_case_init(&res);
    ra_case_init(&ref);
    ck_assert_int_eq(ra_case_set_op(&ref, "gdn"), RA_OK);
    ra_tensor *a, *b;
    const int64_t shape[1] = {3};
    ck_assert_int_eq(ra_tensors_new(&ref.tensors, &a, "o", RA_F64, 1, shape), RA_OK);
    ck_assert_int_eq(ra_tensors_new(&res.tensors, &b, "o", RA_F32, 1, shape), RA_OK);
    ra_tensor_set(a, 0, 1.0), ra_tensor_set(a, 1, -1e203), ra_tensor_set(a, 2, 2.0);
    ra_tensor_set(b, 0, 1.0), ra_tensor_set(b, 1, NAN), ra_tensor_set(b, 2, 2.0);
    ra_rows rows;
    ra_rows_init(&rows);
    ra_case_spec id;
    ra_case_spec_init(&id);
    ra_check_opts o;
    memset(&o, 0, sizeof o);
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 1);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_FAIL);
    tu_has(rows.v[0].note, "reference outside the f32 range", "|o[1]| = 1e+203");
    /* the same reference judged in f64 is in range: metrics, no note */
    ra_rows_clear(&rows);
    ra_tensor_free(ra_tensors_take(&res.tensors, "o"));
    ck_assert_int_eq(ra_tensors_new(&res.tensors, &b, "o", RA_F64, 1, shape), RA_OK);
    ra_tensor_set(b, 0, 1.0), ra_tensor_set(b, 1, -1e203), ra_tensor_set(b, 2, 2.0);
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 1);
    ck_assert(rows.v[0].has_metrics);
    ck_assert(rows.v[0].m.max_ulp == 0);
    ra_rows_clear(&rows);
    ra_case_clear(&res), ra_case_clear(&ref);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gen-paths");
    tu_tcase(s, "special", tu_capture, NULL, special_scale_t1);
    tu_tcase(s, "data", tu_capture, NULL, data_no_dht_is_zero_dht);
    tu_tcase(s, "regress", tu_capture, NULL, regress_raw_keys_representable,
             regress_ref_out_of_range);
    return s;
}

int main(void) { return tu_run(suite()); }
