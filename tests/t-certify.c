/* Tests of the precision certificate and the Ziv loop of ra_ref_compute. */
#include <config.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "ref-testutil.h"
#include "ref/mparr.h"
#include "ref/ref.h"

/*
 * Expected bit counts come from the definition floor(log2(|b| / |a - b|))
 * applied by hand to chosen values, and, for the case built to lose
 * precision, from a rounding-error count done by hand (see lossy_case).
 */

/* --- the agreement count -----------------------------------------------------------------------
 */

static long bits_of(const char *a, const char *b, long cap)
{
    mpfr_t x, y;
    mpfr_inits2(300, x, y, (mpfr_ptr)0);
    mpfr_set_str(x, a, 0, MPFR_RNDN);
    mpfr_set_str(y, b, 0, MPFR_RNDN);
    long r = ra_mp_agree_bits(x, y, cap);
    mpfr_clears(x, y, (mpfr_ptr)0);
    return r;
}

START_TEST(special_agree_bits)
{
    /* equal values (zeros of either sign included): the cap */
    ck_assert_int_eq(bits_of("1.25", "1.25", 128), 128);
    ck_assert_int_eq(bits_of("0", "-0", 128), 128);
    /* one zero: nothing agrees */
    ck_assert_int_eq(bits_of("0", "1e-300", 128), 0);
    ck_assert_int_eq(bits_of("1e-300", "0", 128), 0);
    /* opposite signs */
    ck_assert_int_eq(bits_of("-1", "1", 128), 0);
    /* b = 1 + 2^-20, a = 1: |b|/|a-b| = 2^20 + 1 -> 20 */
    ck_assert_int_eq(bits_of("1", "0x1.00001p0", 128), 20);
    /* a = 1 - 2^-32, b = 1: ratio 2^32 -> 32; a = 1 - 2^-30 -> 30 */
    ck_assert_int_eq(bits_of("0x0.ffffffffp0", "1", 128), 32);
    ck_assert_int_eq(bits_of("0x0.fffffffcp0", "1", 128), 30);
    /* b = 3, a = 3 + 2^-10: ratio 3 * 2^10, log2 = 11.58 -> 11 */
    ck_assert_int_eq(bits_of("0x3.004p0", "3", 128), 11);
    /* b = 1, a = 1.5: ratio 2 -> 1; a = 2: ratio 1 -> 0; a = 5: ratio 1/4 -> 0 */
    ck_assert_int_eq(bits_of("1.5", "1", 128), 1);
    ck_assert_int_eq(bits_of("2", "1", 128), 0);
    ck_assert_int_eq(bits_of("5", "1", 128), 0);
    /* ratio exactly a power of two: b = 1, a = 1 + 2^-40 -> 40 */
    ck_assert_int_eq(bits_of("0x1.0000000001p0", "1", 128), 40);
    /* clamped at the cap */
    ck_assert_int_eq(bits_of("1", "0x1.00000000000000000000000001p0", 64), 64);
    /* non-numbers never agree */
    mpfr_t x, y;
    mpfr_inits2(64, x, y, (mpfr_ptr)0);
    mpfr_set_nan(x);
    mpfr_set_ui(y, 1, MPFR_RNDN);
    ck_assert_int_eq(ra_mp_agree_bits(x, y, 64), 0);
    mpfr_set_inf(x, 1);
    mpfr_set_inf(y, 1);
    ck_assert_int_eq(ra_mp_agree_bits(x, y, 64), 0);
    mpfr_clears(x, y, (mpfr_ptr)0);
}
END_TEST

/* --- whole references --------------------------------------------------------------------------
 */

static long param_long(const ra_case *c, const char *key)
{
    const char *v = ra_case_param(c, key);
    ck_assert_msg(v != NULL, "no %s", key);
    return strtol(v, NULL, 10);
}

/* Least bits of round i (0-based) in ref_rounds "p/c:bits,...". */
static long round_bits(const ra_case *ref, int i, long *p, long *c)
{
    const char *s = ra_case_param(ref, "ref_rounds");
    ck_assert_msg(s != NULL, "no ref_rounds");
    for (int k = 0; k < i; k++) {
        s = strchr(s, ',');
        ck_assert_msg(s != NULL, "fewer than %d rounds", i + 1);
        s++;
    }
    long b = -1;
    ck_assert_int_eq(sscanf(s, "%ld/%ld:%ld", p, c, &b), 3);
    return b;
}

static int nrounds(const ra_case *ref)
{
    const char *s = ra_case_param(ref, "ref_rounds");
    int n = 1;
    for (; *s; s++)
        n += *s == ',';
    return n;
}

START_TEST(data_default_certified)
{
    const ra_gdn_shape s = {1, 24, 1, 2, 8, 6};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_H0 | TU_DO | TU_DHT, 101);
    ck_assert_int_eq(ra_kv_set(&c.params, "regime", "hand-made"), RA_OK);
    ra_ref_opts o = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "default case"), RA_OK);
    ck_assert_str_eq(ref.op, "gdn");
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "yes");
    ck_assert_int_eq(param_long(&ref, "ref_prec"), 128);
    ck_assert_int_eq(param_long(&ref, "ref_check_prec"), 256);
    ck_assert_int_eq(param_long(&ref, "ref_min_bits"), 60);
    ck_assert_int_eq(param_long(&ref, "ref_prec_cap"), 1024);
    ck_assert_str_eq(ra_case_param(&ref, "mpfr_version"), mpfr_get_version());
    ck_assert_str_eq(ra_case_param(&ref, "regime"), "hand-made"); /* case params kept */
    ck_assert_str_eq(ra_case_param(&ref, "cache"), "off");
    const char *key = ra_case_param(&ref, "cache_key");
    ck_assert_uint_eq(strlen(key), 32);
    for (int i = 0; i < 32; i++)
        ck_assert(isxdigit((unsigned char)key[i]));
    ck_assert_int_eq(nrounds(&ref), 1);
    long p, cp, least = round_bits(&ref, 0, &p, &cp);
    ck_assert_int_eq(p, 128);
    ck_assert_int_eq(cp, 256);
    static const char *const names[] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0"};
    ck_assert_uint_eq(ref.tensors.n, 8);
    long lo = 1000;
    for (int i = 0; i < 8; i++) {
        ck_assert_str_eq(ref.tensors.items[i]->name, names[i]);
        ck_assert_int_eq(ref.tensors.items[i]->dtype, RA_F64);
        char k[64];
        snprintf(k, sizeof k, "certified_bits.%s", names[i]);
        long b = param_long(&ref, k);
        ck_assert_msg(b >= 60 && b <= 128, "%s: %ld bits", names[i], b);
        lo = b < lo ? b : lo;
    }
    ck_assert_int_eq(least, lo);
    ra_case_clear(&ref);
    /* an explicit check precision */
    o.check_prec = 192;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "default case"), RA_OK);
    round_bits(&ref, 0, &p, &cp);
    ck_assert_int_eq(cp, 192);
    ra_case_clear(&ref);
    /* no certification: one run, no bits */
    o = tu_ref_opts();
    o.certify = 0;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "default case"), RA_OK);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "unchecked");
    ck_assert_ptr_null(ra_case_param(&ref, "ref_check_prec"));
    ck_assert_ptr_null(ra_case_param(&ref, "certified_bits.o"));
    ck_assert_int_eq(param_long(&ref, "ref_prec"), 128);
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

/*
 * A case that genuinely loses bits.  T = 1, K = V = 2, g = 0 (a = 1),
 * beta = 1, k = q = e_0, h0 row 0 = (2^80, 2^80), v = (0.3, -0.7).  The delta
 * rule erases the huge row: r = v - S^T k = (0.3 - 2^80, -0.7 - 2^80) and the
 * new row 0 is 2^80 + r = v.  At p bits r is rounded to a quantum of
 * 2^(81 - p), so row 0, o and the gradients built on it carry an absolute
 * error up to 2^(80 - p) on values of size 0.3 .. 0.7: about p - 80 +
 * log2(0.3) = p - 81.7 agreeing bits, i.e. 44 .. 48 at p = 128, far short of
 * 60; at p = 256 the subtraction is exact (80 + 2 + 53 bits fit), so the
 * second round certifies.
 */
static void lossy_case(ra_case *c)
{
    const ra_gdn_shape s = {1, 1, 1, 1, 2, 2};
    tu_ref_case(c, &s, TU_H0 | TU_DO | TU_DHT, 102); /* do, dht, and h0 row 1 stay random */
    ra_tensor_set(tu_t(c, "g"), 0, 0.0);
    ra_tensor_set(tu_t(c, "beta"), 0, 1.0);
    const double e0[2] = {1.0, 0.0};
    for (int i = 0; i < 2; i++) {
        ra_tensor_set(tu_t(c, "k"), i, e0[i]);
        ra_tensor_set(tu_t(c, "q"), i, e0[i]);
        ra_tensor_set(tu_t(c, "h0"), i, 0x1p80);
    }
    ra_tensor_set(tu_t(c, "v"), 0, 0.3);
    ra_tensor_set(tu_t(c, "v"), 1, -0.7);
}

START_TEST(data_lossy_raises_precision)
{
    ra_case c, ref;
    lossy_case(&c);
    ra_ref_opts o = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "lossy case"), RA_OK);
    ck_assert_int_eq(nrounds(&ref), 2);
    long p, cp, b0 = round_bits(&ref, 0, &p, &cp);
    ck_assert_int_eq(p, 128);
    ck_assert_msg(b0 >= 40 && b0 <= 48, "round 1: %ld bits, predicted 44 .. 48", b0);
    long b1 = round_bits(&ref, 1, &p, &cp);
    ck_assert_int_eq(p, 256);
    ck_assert_int_eq(cp, 512);
    ck_assert_msg(b1 >= 60, "round 2: %ld bits", b1);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "yes");
    ck_assert_int_eq(param_long(&ref, "ref_prec"), 256);
    ck_assert_int_eq(param_long(&ref, "ref_check_prec"), 512);
    /* the value itself: o_0 = scale * 0.3 with scale = 1/sqrt(2) */
    double o0 = ra_tensor_get(tu_t(&ref, "o"), 0);
    ck_assert_double_eq_tol(o0, 0.3 / 1.4142135623730951, 1e-16);
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

START_TEST(data_shortfall_reported)
{
    ra_case c, ref;
    lossy_case(&c);
    ra_ref_opts o = tu_ref_opts();
    o.prec_cap = 128; /* no room to raise */
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "lossy case"), RA_OK);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "no");
    ck_assert_int_eq(nrounds(&ref), 1);
    long bo = param_long(&ref, "certified_bits.o");
    ck_assert_msg(bo >= 40 && bo <= 48, "o: %ld bits, predicted 44 .. 48", bo);
    const char *worst = ra_case_param(&ref, "certified_worst.o");
    ck_assert_msg(worst && worst[0] == '[', "no worst element for o");
    /* the tensors are still delivered, from the 256-bit check run */
    ck_assert_uint_eq(ref.tensors.n, 8);
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

/* The cap bounds the next working precision, inclusively: at p = 128 the
   lossy case needs a second round at 256 bits, which a cap of exactly 256
   allows and a cap of 255 does not; a cap equal to the working precision
   is accepted, one bit below it refused. */
START_TEST(regress_prec_cap_boundary)
{
    ra_case c, ref;
    lossy_case(&c);
    ra_ref_opts o = tu_ref_opts();
    o.prec_cap = 256;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "cap 256"), RA_OK);
    ck_assert_int_eq(nrounds(&ref), 2);
    ck_assert_int_eq(param_long(&ref, "ref_prec"), 256);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "yes");
    ra_case_clear(&ref);
    o.prec_cap = 255;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "cap 255"), RA_OK);
    ck_assert_int_eq(nrounds(&ref), 1);
    ck_assert_int_eq(param_long(&ref, "ref_prec"), 128);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "no");
    ra_case_clear(&ref);
    o.prec_cap = 128; /* = prec */
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "cap 128"), RA_OK);
    ck_assert_int_eq(nrounds(&ref), 1);
    ra_case_clear(&ref);
    o.prec_cap = 127;
    tu_reset();
    tu_expect_error(ra_ref_compute(&ref, &c, &o, "x"), RA_EINVAL, "precision cap 127",
                    "below the working precision 128");
    ra_case_clear(&c);
}
END_TEST

/* Near-unit decay, raw positive keys and T = 64 at p = 64: some tensor
   keeps fewer than 60 of its 64 bits, so the loop raises to 128. */
START_TEST(data_raw_keys_low_precision)
{
    const ra_gdn_shape s = {1, 64, 1, 1, 8, 4};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_DO | TU_DHT, 103);
    uint64_t st = 7;
    tu_fill(tu_t(&c, "q"), &st, 0, 1);
    tu_fill(tu_t(&c, "k"), &st, 0, 1);
    tu_fill(tu_t(&c, "g"), &st, -2e-3, 0);
    ra_ref_opts o = tu_ref_opts();
    o.prec = 64;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "raw keys"), RA_OK);
    long p, cp;
    ck_assert_msg(nrounds(&ref) >= 2, "rounds %s", ra_case_param(&ref, "ref_rounds"));
    ck_assert_msg(round_bits(&ref, 0, &p, &cp) < 60, "rounds %s",
                  ra_case_param(&ref, "ref_rounds"));
    ck_assert_int_eq(p, 64);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "yes");
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

/* Exact zeros must agree exactly: with beta = 0 and no h0 the state never
   leaves 0, so o, ht, dq, dk, dv and dg are exactly 0 at every precision
   (the full 128 bits), while dbeta = du . v is not. */
START_TEST(special_exact_zeros)
{
    const ra_gdn_shape s = {1, 8, 1, 2, 4, 4};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_DO | TU_DHT, 104);
    ra_tensor *beta = tu_t(&c, "beta");
    for (int64_t i = 0; i < beta->numel; i++)
        ra_tensor_set(beta, i, 0.0);
    ra_ref_opts o = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "zeros"), RA_OK);
    static const char *const zero[] = {"o", "ht", "dq", "dk", "dv", "dg"};
    for (int i = 0; i < 6; i++) {
        char k[64];
        snprintf(k, sizeof k, "certified_bits.%s", zero[i]);
        ck_assert_int_eq(param_long(&ref, k), 128);
        const ra_tensor *t = tu_t(&ref, zero[i]);
        for (int64_t e = 0; e < t->numel; e++)
            ck_assert(ra_tensor_get(t, e) == 0.0);
    }
    ck_assert(ra_tensor_get(tu_t(&ref, "dbeta"), 0) != 0.0);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "yes");
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

/* The stored f64 is the value rounded to nearest, exactly (0 ulps), where
   the exact result is known in closed form.  T = 1, no h0, g = 0, beta = 1,
   q = k = e_0 (K = 2): S_1 = k v^T, so o_j = scale v_j.  With scale = 0.1
   (a decimal parameter) the exact o_j is v_j / 10, whose correct rounding
   is the IEEE quotient v_j / 10.0; with the default scale 2^-1/2 it is
   v_j / sqrt(2), rounded here from a 300-bit MPFR quotient (no tie is
   within 2^-240 of these values).  About half of the 64 values round
   differently toward zero (counted below), so a reference rounding any
   other way than to nearest misses by one ulp there. */
START_TEST(special_f64_round_to_nearest)
{
    const ra_gdn_shape s = {1, 1, 1, 1, 2, 64};
    ra_case c, ref;
    tu_ref_case(&c, &s, 0, 109);
    ra_tensor_set(tu_t(&c, "g"), 0, 0.0);
    ra_tensor_set(tu_t(&c, "beta"), 0, 1.0);
    const double e0[2] = {1.0, 0.0};
    for (int i = 0; i < 2; i++) {
        ra_tensor_set(tu_t(&c, "q"), i, e0[i]);
        ra_tensor_set(tu_t(&c, "k"), i, e0[i]);
    }
    ra_tensor *v = tu_t(&c, "v");
    for (int64_t j = 0; j < s.V; j++) /* spread over the binades 2^-8 .. 2^7 */
        ra_tensor_set(v, j, ldexp(ra_tensor_get(v, j), (int)(j % 16) - 8));
    mpfr_t q, r2;
    mpfr_inits2(300, q, r2, (mpfr_ptr)0);
    mpfr_sqrt_ui(r2, 2, MPFR_RNDN);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.1"), RA_OK);
        ra_ref_opts o = tu_ref_opts();
        ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "closed form"), RA_OK);
        const ra_tensor *out = tu_t(&ref, "o");
        ck_assert_int_eq(out->dtype, RA_F64);
        int differ = 0;
        for (int64_t j = 0; j < s.V; j++) {
            const double vj = ra_tensor_get(v, j);
            mpfr_set_d(q, vj, MPFR_RNDN);
            if (pass == 1)
                mpfr_div_ui(q, q, 10, MPFR_RNDN);
            else
                mpfr_div(q, q, r2, MPFR_RNDN);
            const double want = pass == 1 ? vj / 10.0 : mpfr_get_d(q, MPFR_RNDN);
            if (pass == 1)
                ck_assert(want == mpfr_get_d(q, MPFR_RNDN)); /* IEEE division: nearest */
            differ += mpfr_get_d(q, MPFR_RNDZ) != want;
            const double got = ra_tensor_get(out, j);
            ck_assert_msg(got == want, "scale %s, o[%lld]: %a, nearest %a",
                          pass ? "0.1" : "default", (long long)j, got, want);
        }
        ck_assert_msg(differ >= 16, "only %d of 64 values round differently toward zero", differ);
        ra_case_clear(&ref);
    }
    mpfr_clears(q, r2, (mpfr_ptr)0);
    ra_case_clear(&c);
}
END_TEST

START_TEST(data_bad_options)
{
    const ra_gdn_shape s = {1, 2, 1, 1, 2, 2};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_DO, 105);
    ra_ref_opts o = tu_ref_opts();
    o.prec = 52;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "x"), RA_EINVAL);
    o = tu_ref_opts();
    o.check_prec = 128;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "x"), RA_EINVAL);
    ck_assert_msg(strstr(tu_msg, "check precision"), "%s", tu_msg);
    o = tu_ref_opts();
    o.prec_cap = 100;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "x"), RA_EINVAL);
    o = tu_ref_opts();
    o.min_bits = 0;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "x"), RA_EINVAL);
    ra_case_clear(&c);
}
END_TEST

/* Gates g = 200 on every step: the state grows as e^(200 (t - 1)) (S_1 =
   beta k v^T, then each step multiplies by e^200 (I - beta k k^T) with beta
   < 1), so at T = 6 ht and the late outputs are near e^1000, beyond the
   f64 range (e^709.78).  The MPFR values agree on all their bits, yet the
   f64 tensors hold infinities: the reference must not be certified, must
   say why, and must not be usable even with --allow-uncertified. */
START_TEST(regress_nonfinite_not_certified)
{
    const ra_gdn_shape s = {1, 6, 1, 1, 4, 4};
    ra_case c, ref;
    tu_ref_case(&c, &s, TU_DO, 11);
    ra_tensor *g = tu_t(&c, "g");
    for (int64_t i = 0; i < g->numel; i++)
        ra_tensor_set(g, i, 200.0);
    ra_ref_opts o = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "g = 200"), RA_OK);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "not-representable");
    long n = param_long(&ref, "nonfinite.ht");
    ck_assert_msg(n >= 1 && n <= 16, "nonfinite.ht = %ld, want 1 .. 16", n);
    ck_assert_ptr_nonnull(ra_case_param(&ref, "nonfinite_at.ht"));
    ck_assert_ptr_nonnull(ra_case_param(&ref, "nonfinite.o"));
    ck_assert_ptr_null(ra_case_param(&ref, "nonfinite.v")); /* not a tensor of the reference */
    tu_reset();
    ck_assert_int_eq(ra_ref_require_certified(&ref, "g200"), RA_ENUMERIC);
    char why[512];
    ck_assert_int_eq(ra_ref_usable(&ref, 1, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "not representable") && strstr(why, "ht"), "%s", why);
    tu_reset();
    ck_assert_int_eq(ra_ref_require_representable(&ref, "g200"), RA_ENUMERIC);
    ck_assert_msg(strstr(tu_msg, "g200") && strstr(tu_msg, "not representable"), "%s", tu_msg);
    ra_case_clear(&ref);
    /* Certification off: not "unchecked" either. */
    o.certify = 0;
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "g = 200"), RA_OK);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "not-representable");
    ra_case_clear(&ref);
    /* The same case with g = 0 is representable and certified. */
    for (int64_t i = 0; i < g->numel; i++)
        ra_tensor_set(g, i, 0.0);
    o = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&ref, &c, &o, "g = 0"), RA_OK);
    ck_assert_str_eq(ra_case_param(&ref, "certified"), "yes");
    ck_assert_ptr_null(ra_case_param(&ref, "nonfinite.ht"));
    ck_assert_int_eq(ra_ref_usable(&ref, 0, why, sizeof why), 1);
    ra_case_clear(&ref);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("certify");
    tu_tcase(s, "special", tu_capture, NULL, special_agree_bits, special_exact_zeros,
             special_f64_round_to_nearest);
    tu_tcase(s, "data", tu_capture, NULL, data_default_certified, data_lossy_raises_precision,
             data_shortfall_reported, data_raw_keys_low_precision, data_bad_options);
    tu_tcase(s, "regress", tu_capture, NULL, regress_prec_cap_boundary,
             regress_nonfinite_not_certified);
    return s;
}

int main(void) { return tu_run(suite()); }
