/* Check suite for the audit pipeline (src/audit/audit.c, validate.c, report.c). */
#include <config.h>

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/report.h"
#include "core/case.h"
#include "core/status.h"
#include "core/gen_gdn.h"
#include "recaudit/gdn.h"
#include "testutil.h"

/*
 * Expected values: metrics of small hand-made tensors worked by hand
 * (written beside each assertion), verdicts from the gate rule, exact
 * texts of TAP lines and reproduction commands written out literally,
 * JSON read back with jansson.  The pipeline tests run real references
 * on tiny cases with test variants defined here whose behaviour is known
 * by construction (refuse, fail, return zeros) next to gdn.cpu.f64.
 */

/* A 1-D f64 or f32 tensor with the given values, added to c. */
static void put(ra_case *c, const char *name, ra_dtype dt, int n, const double *x)
{
    tu_add(&c->tensors, name, dt, 1, (const int64_t[]){n}, x);
}

static ra_gates test_gates(const char *text)
{
    ra_gates g;
    ra_gates_init(&g);
    ck_assert_int_eq(ra_gates_parse(&g, text, "test-gates"), RA_OK);
    return g;
}

#define HDR "op\tclass\trefine\tdtype\ttensor\tmetric\tthreshold\twhy\n"

/* A case id: op gdn, regime default, dtype f32, a seed, gradients. */
static ra_case_spec make_id(const char *shape, uint64_t seed, int h0)
{
    return tu_gdn_spec(shape, seed, h0 ? RA_GDN_FLAG_H0 : 0, 1);
}

static ra_case_spec test_id(void) { return make_id("B=1,T=4,Hk=1,Hv=1,K=1,V=1", 5, 0); }

START_TEST(special_compare)
{
    ra_case ref, res;
    tu_case_init(&ref, "gdn");
    tu_case_init(&res, "gdn");
    put(&ref, "o", RA_F64, 4, (double[]){1, 2, 3, 4});
    put(&ref, "ht", RA_F64, 2, (double[]){0.5, -0.5});
    put(&ref, "dq", RA_F64, 2, (double[]){1, 1});
    put(&res, "o", RA_F32, 4, (double[]){1, 2, 3, 4.5});
    put(&res, "ht", RA_F32, 2, (double[]){0.5, -0.5});
    ra_gates g = test_gates(HDR "gdn\tf32\t*\t*\to\trel_rms\t0.1\tr\n"
                                "gdn\tf32\t*\t*\to\tmax_rel\t0.1\tm\n"
                                "gdn\tf32\t*\t*\tht\trel_rms\t0\tz\n");
    ra_case_spec id = test_id();
    const char *expected[] = {"o", "ht", "dq", NULL};
    ra_check_opts o = {&g, "gdn.t.x", 1, expected, "REPRO", "f32"};
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 4);
    /* o: err = (0,0,0,0.5).  max_rel = 0.5/4 = 0.125 > 0.1: FAIL;
       rel_rms = sqrt(0.25/4)/sqrt((1+4+9+16)/4) = 0.5/sqrt(30) = 0.0913 <= 0.1. */
    ck_assert_str_eq(rows.v[0].tensor, "o");
    ck_assert_str_eq(rows.v[0].metric, "max_rel");
    ck_assert_double_eq_tol(rows.v[0].value, 0.125, 1e-15);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_FAIL);
    ck_assert_str_eq(rows.v[1].metric, "rel_rms");
    ck_assert_double_eq_tol(rows.v[1].value, 0.5 / sqrt(30.0), 1e-15);
    ck_assert_int_eq(rows.v[1].verdict, RA_VERDICT_PASS);
    ck_assert_str_eq(rows.v[1].worst_at, "[3]");
    ck_assert(rows.v[1].m.worst_value == 4.5 && rows.v[1].m.worst_ref == 4.0);
    ck_assert_int_eq(rows.v[1].m.ulp_dtype, RA_F32); /* the result's storage dtype */
    ck_assert_str_eq(rows.v[1].note, "test-gates:2: r");
    ck_assert_str_eq(rows.v[1].repro, "REPRO");
    /* ht exact: rel_rms 0 <= 0 passes. */
    ck_assert_str_eq(rows.v[2].tensor, "ht");
    ck_assert_int_eq(rows.v[2].verdict, RA_VERDICT_PASS);
    /* dq: absent from the result. */
    ck_assert_str_eq(rows.v[3].tensor, "dq");
    ck_assert_int_eq(rows.v[3].verdict, RA_VERDICT_FAIL);
    ck_assert_str_eq(rows.v[3].note, "missing gradient dq");
    ck_assert_uint_eq(rows.passed, 2);
    ck_assert_uint_eq(rows.failed, 2);
    ck_assert_uint_eq(rows.skipped, 0);
    ra_rows_clear(&rows);

    /* A present tensor that no gate covers fails when gates are required,
       and is reported (INFO) when not. */
    put(&res, "dq", RA_F32, 2, (double[]){1, 1});
    const char *only_dq[] = {"dq", NULL};
    o.expected = only_dq;
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 1);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_FAIL);
    ck_assert(strstr(rows.v[0].note, "no gate in test-gates covers"));
    ck_assert(strstr(rows.v[0].note, "tensor dq"));
    ra_rows_clear(&rows);
    o.require_gates = 0;
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_INFO);
    ck_assert(rows.v[0].has_metrics && rows.v[0].m.max_abs == 0);
    ck_assert_uint_eq(rows.passed + rows.failed + rows.skipped, 0);
    ra_rows_clear(&rows);

    /* Without gates: one INFO row per tensor the result and the reference
       share (check mode: expected NULL); extra result tensors ignored. */
    put(&res, "extra", RA_F32, 1, (double[]){7});
    ra_check_opts plain = {NULL, NULL, 0, NULL, "R", NULL};
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &plain), RA_OK);
    ck_assert_uint_eq(rows.n, 3);
    ck_assert_str_eq(rows.v[0].variant, "-");
    ra_rows_clear(&rows);
    ra_gates_clear(&g);
    ra_case_clear(&res);
    ra_case_clear(&ref);
}
END_TEST

START_TEST(special_compare_bad)
{
    ra_case ref, res;
    tu_case_init(&ref, "gdn");
    tu_case_init(&res, "gdn");
    put(&ref, "o", RA_F64, 4, (double[]){1, 2, 3, 4});
    ra_tensor *t;
    ck_assert_int_eq(ra_tensors_new(&res.tensors, &t, "o", RA_F32, 2, (int64_t[]){2, 2}), RA_OK);
    ra_gates g = test_gates(HDR "gdn\tf64\t*\t*\t*\trel_rms\t1\tany\n");
    ra_case_spec id = test_id();
    const char *expected[] = {"o", NULL};
    ra_check_opts o = {&g, "v", 1, expected, "R", "f64"};
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_FAIL);
    ck_assert_str_eq(rows.v[0].note, "result shape [2, 2] differs from the reference's [4]");
    ra_rows_clear(&rows);

    /* NaN in the result: the metric is NaN, which no gate passes. */
    put(&res, "o", RA_F32, 4, (double[]){1, NAN, 3, 4});
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_FAIL);
    ck_assert_int_eq(rows.v[0].m.nan_count, 1);
    ra_rows_clear(&rows);

    /* Check mode with nothing in common: an error, not a verdict. */
    ra_case other;
    tu_case_init(&other, "gdn");
    put(&other, "out", RA_F32, 1, (double[]){1});
    o.expected = NULL;
    ck_assert_int_eq(ra_check_compare(&rows, &other, &ref, &id, &o), RA_EINVAL);
    ck_assert(strstr(ra_last_error(), "none of the reference's tensors"));
    ra_rows_clear(&rows);
    ra_case_clear(&other);
    ra_gates_clear(&g);
    ra_case_clear(&res);
    ra_case_clear(&ref);
}
END_TEST

/* --- test variants --------------------------------------------------------------------- */

static ra_status fwd_unsupported(const ra_variant *self, const ra_case *c, ra_tensors *out,
                                 ra_run *run)
{
    (void)self;
    (void)c, (void)out, (void)run;
    RA_ERROR("gdn.t.unsup: needs K <= 2", RA_EUNSUPPORTED);
}

static ra_status fwd_error(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self;
    (void)c, (void)out, (void)run;
    RA_ERROR("boom", RA_EINVAL);
}

/* Zeros of the right shapes: o [B,T,Hv,V], ht [B,Hv,K,V]. */
static ra_status fwd_zero(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self;
    (void)run;
    const ra_tensor *q = ra_tensors_find(&c->tensors, "q"), *v = ra_tensors_find(&c->tensors, "v");
    const int64_t os[4] = {v->shape[0], v->shape[1], v->shape[2], v->shape[3]};
    const int64_t hs[4] = {q->shape[0], v->shape[2], q->shape[3], v->shape[3]};
    RA_TRY(ra_tensors_new(out, NULL, "o", RA_F32, 4, os));
    return ra_tensors_new(out, NULL, "ht", RA_F32, 4, hs);
}

/* A backward that names a gradient like an output. */
static ra_status bwd_clash(const ra_variant *self, const ra_case *c, ra_tensors *g, ra_run *run)
{
    (void)self;
    (void)c, (void)run;
    return ra_tensors_new(g, NULL, "o", RA_F32, 1, (int64_t[]){1});
}

static ra_case tiny_case(int h0, int hv, int T, int l2norm)
{
    ra_case c;
    tu_case_init(&c, "gdn");
    tu_add(&c.tensors, "q", RA_F32, 4, (const int64_t[]){1, T, 1, 2}, NULL);
    tu_add(&c.tensors, "v", RA_F32, 4, (const int64_t[]){1, T, hv, 2}, NULL);
    if (h0)
        tu_add(&c.tensors, "h0", RA_F32, 4, (const int64_t[]){1, hv, 2, 2}, NULL);
    if (l2norm)
        ra_kv_set(&c.params, "l2norm", "true");
    return c;
}

START_TEST(special_supports)
{
    ra_variant all = {
        "gdn.t.all", "gdn",    "d",       RA_CPU, "f64", RA_FWD | RA_BWD | RA_GDN_CAPS_ALL,
        NULL,        fwd_zero, bwd_clash, NULL};
    ra_variant bare = {"gdn.t.bare", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd_zero, NULL, NULL};
    ra_variant other = {"glr.t", "glr", "d", RA_CPU, "f64", RA_FWD, NULL, fwd_zero, NULL, NULL};
    char why[256];
    ra_case c = tiny_case(1, 2, 100, 1);
    ck_assert(ra_variant_supports(&all, &c, 1, why, sizeof why));
    ck_assert(!ra_variant_supports(&bare, &c, 1, why, sizeof why));
    ck_assert_str_eq(why, "no backward (capability bwd)");
    ck_assert(!ra_variant_supports(&bare, &c, 0, why, sizeof why));
    ck_assert_str_eq(why, "no initial state (capability h0)");
    ck_assert(!ra_variant_supports(&other, &c, 0, why, sizeof why));
    ck_assert_str_eq(why, "variant is for op glr, the case is gdn");
    ra_case_clear(&c);
    /* What the bare variant lacks for each tiny case. */
    static const struct {
        int hv, T, l2norm;
        const char *why;
    } lacks[] = {{2, 64, 0, "no grouped value heads (capability gqa)"},
                 {1, 100, 0, "T=100 is not a multiple of 64 (capability tail)"},
                 {1, 128, 1, "no in-kernel L2 normalisation (capability l2norm)"}};
    for (size_t i = 0; i < sizeof lacks / sizeof lacks[0]; i++) {
        c = tiny_case(0, lacks[i].hv, lacks[i].T, lacks[i].l2norm);
        ck_assert(!ra_variant_supports(&bare, &c, 0, why, sizeof why));
        ck_assert_str_eq(why, lacks[i].why);
        ra_case_clear(&c);
    }
    c = tiny_case(0, 1, 128, 0);
    ck_assert(ra_variant_supports(&bare, &c, 0, why, sizeof why));

    /* unit-keys: keys [1,128,1,2]; a row (0.6, 0.8) has |k|^2 = 1.0 (to
       rounding), (0.8, 0.8) has 1.28.  In-kernel l2norm lifts the
       requirement. */
    ra_variant nki = bare;
    nki.caps |= RA_GDN_NEEDS_UNIT_KEYS;
    ra_tensor *k;
    ck_assert_int_eq(ra_tensors_new(&c.tensors, &k, "k", RA_F32, 4, (int64_t[]){1, 128, 1, 2}),
                     RA_OK);
    for (int t = 0; t < 128; t++) {
        ra_tensor_set(k, 2 * t, 0.6);
        ra_tensor_set(k, 2 * t + 1, 0.8);
    }
    ck_assert(ra_variant_supports(&nki, &c, 0, why, sizeof why));
    ra_tensor_set(k, 2 * 77, 0.8);
    ck_assert(!ra_variant_supports(&nki, &c, 0, why, sizeof why));
    ck_assert_str_eq(why, "needs unit-norm keys (requirement unit-keys): max |k|^2 = 1.28");
    ck_assert(ra_variant_supports(&bare, &c, 0, why, sizeof why));
    ra_tensor_set(k, 5, NAN); /* a NaN key is not a unit key */
    ck_assert(!ra_variant_supports(&nki, &c, 0, why, sizeof why));
    ra_tensor_set(k, 5, 0.8);
    nki.caps |= RA_GDN_CAP_L2NORM;
    ra_kv_set(&c.params, "l2norm", "true");
    ck_assert(ra_variant_supports(&nki, &c, 0, why, sizeof why));
    ra_kv_remove(&c.params, "l2norm");

    /* stable-steps: gain 1 / (exp(g) min(1, |1 - beta |k|^2|)) <= 4/3 on
       every token.  g = 0, beta = 0.2: rows (0.6, 0.8) give 1/0.8 = 1.25;
       row 77, (0.8, 0.8), gives 1/(1 - 0.256) = 1.344 > 4/3; under l2norm
       every |k|^2 is 1 and the gain 1.25.  g = log(0.5) at one token of a
       unit row: 1/(0.5 * 0.8) = 2.5. */
    ra_variant rev = bare;
    rev.caps |= RA_GDN_NEEDS_STABLE_STEPS | RA_GDN_CAP_L2NORM;
    ra_tensor *gt, *bt;
    ck_assert_int_eq(ra_tensors_new(&c.tensors, &gt, "g", RA_F32, 3, (int64_t[]){1, 128, 1}),
                     RA_OK);
    ck_assert_int_eq(ra_tensors_new(&c.tensors, &bt, "beta", RA_F32, 3, (int64_t[]){1, 128, 1}),
                     RA_OK);
    for (int t = 0; t < 128; t++)
        ra_tensor_set(bt, t, 0.2);
    ck_assert(!ra_variant_supports(&rev, &c, 0, why, sizeof why));
    ck_assert_str_eq(why, "needs stable steps (requirement stable-steps): a step's inverse "
                          "amplifies by up to 1.34 > 4/3");
    ck_assert(ra_variant_supports(&bare, &c, 0, why, sizeof why));
    ra_kv_set(&c.params, "l2norm", "true");
    ck_assert(ra_variant_supports(&rev, &c, 0, why, sizeof why));
    ra_tensor_set(gt, 9, log(0.5));
    ck_assert(!ra_variant_supports(&rev, &c, 0, why, sizeof why));
    ck_assert_str_eq(why, "needs stable steps (requirement stable-steps): a step's inverse "
                          "amplifies by up to 2.5 > 4/3");
    ra_kv_remove(&c.params, "l2norm");
    ra_tensor_free(ra_tensors_take(&c.tensors, "g"));
    ra_tensor_free(ra_tensors_take(&c.tensors, "beta"));

    /* Execution: outputs, metadata; a backward clashing with an output is
       refused; no cotangent, no backward. */
    ra_kv_set(&c.params, "seed", "3");
    ra_case res;
    ra_case_init(&res);
    ra_run run = {0, 0, -1, NULL};
    ck_assert_int_eq(ra_variant_execute(&res, &all, &c, 1, &run), RA_OK);
    ck_assert_uint_eq(res.tensors.n, 2); /* no 'do' in c: backward not run */
    ck_assert_str_eq(ra_case_param(&res, "variant"), "gdn.t.all");
    ck_assert_str_eq(ra_case_param(&res, "seed"), "3");
    ra_case_clear(&res);
    ck_assert_int_eq(ra_tensors_new(&c.tensors, NULL, "do", RA_F32, 4, (int64_t[]){1, 128, 1, 2}),
                     RA_OK);
    ra_case_init(&res);
    ck_assert_int_eq(ra_variant_execute(&res, &all, &c, 1, &run), RA_EINTERNAL);
    ck_assert(strstr(ra_last_error(), "backward tensor 'o' has an output's name"));
    ra_case_clear(&res);
    ra_case_clear(&c);
}
END_TEST

/* --- printers -------------------------------------------------------------------------- */

static char *capture_tap(const ra_rows *rows)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ra_report_tap(f, rows);
    fclose(f);
    return buf;
}

START_TEST(regress_tap_json)
{
    ra_case ref, res;
    tu_case_init(&ref, "gdn");
    tu_case_init(&res, "gdn");
    ra_tensor *a, *b;
    ck_assert_int_eq(ra_tensors_new(&ref.tensors, &a, "o", RA_F64, 2, (int64_t[]){2, 3}), RA_OK);
    ck_assert_int_eq(ra_tensors_new(&res.tensors, &b, "o", RA_F32, 2, (int64_t[]){2, 3}), RA_OK);
    for (int i = 0; i < 6; i++) {
        ra_tensor_set(a, i, i + 1);
        ra_tensor_set(b, i, i + 1);
    }
    ra_tensor_set(b, 4, 5.5); /* worst element [1, 1]: 5.5 against 5 */
    ra_gates g = test_gates(HDR "gdn\tf64\t*\t*\t*\tmax_abs\t1\tm\n"
                                "gdn\tf64\t*\t*\t*\tcos\t0.9999\tc\n");
    ra_case_spec id = test_id();
    ra_check_opts o = {&g, "gdn.t.v", 1, NULL, "recaudit audit --variant gdn.t.v", "f64"};
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_int_eq(ra_check_compare(&rows, &res, &ref, &id, &o), RA_OK);
    ck_assert_int_eq(ra_rows_note(&rows, "gdn.t.s", &id, "-", "R2", RA_VERDICT_SKIP,
                                  "no initial state (capability %s)", "h0"),
                     RA_OK);
    /* max_abs 0.5 <= 1 passes.  cos: <y,z> = 91 - 25 + 27.5 = 93.5,
       |y|^2 = 91 - 25 + 30.25 = 96.25, |z|^2 = 91:
       cos = 93.5 / sqrt(96.25 * 91) = 0.99903... < 0.9999: FAIL. */
    ck_assert_uint_eq(rows.n, 3);
    ck_assert_double_eq_tol(rows.v[1].value, 93.5 / sqrt(96.25 * 91.0), 1e-15);
    char *tap = capture_tap(&rows);
    const char *want =
        "TAP version 13\n"
        "1..3\n"
        "ok 1 - gdn.t.v B=1,T=4,Hk=1,Hv=1,K=1,V=1 default f32 o max_abs 0.5 <= 1\n"
        "not ok 2 - gdn.t.v B=1,T=4,Hk=1,Hv=1,K=1,V=1 default f32 o cos 0.999 >= 0.9999\n"
        "  ---\n"
        "  message: \"test-gates:3: c\"\n"
        "  severity: fail\n"
        "  data:\n"
        "    got: \"0.999\"\n"
        "    expect: \">= 0.9999\"\n"
        "    worst: \"[1, 1]\"\n"
        "    worst_value: 5.5\n"
        "    worst_ref: 5\n"
        "  reproduce: \"recaudit audit --variant gdn.t.v\"\n"
        "  ...\n"
        "ok 3 - gdn.t.s B=1,T=4,Hk=1,Hv=1,K=1,V=1 default f32 - # SKIP no initial state "
        "(capability h0)\n";
    ck_assert_str_eq(tap, want);
    free(tap);

    tu_scratch_setup();
    const char *path = tu_scratch("rows.json");
    ck_assert_int_eq(ra_report_json(path, &rows, "validate"), RA_OK);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    tu_scratch_teardown();
    ck_assert_msg(doc != NULL, "JSON: %s", err.text);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "passed")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "failed")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "skipped")), 1);
    json_t *rj = json_object_get(doc, "rows");
    ck_assert_uint_eq(json_array_size(rj), 3);
    json_t *r1 = json_array_get(rj, 1);
    ck_assert_str_eq(json_string_value(json_object_get(r1, "verdict")), "fail");
    ck_assert_str_eq(json_string_value(json_object_get(r1, "metric")), "cos");
    ck_assert_str_eq(json_string_value(json_object_get(r1, "gate")), ">=");
    ck_assert(json_real_value(json_object_get(r1, "threshold")) == 0.9999);
    ck_assert_int_eq(json_integer_value(json_object_get(r1, "seed")), 5);
    json_t *w = json_object_get(r1, "worst");
    json_t *idx = json_object_get(w, "index");
    ck_assert_uint_eq(json_array_size(idx), 2);
    ck_assert_int_eq(json_integer_value(json_array_get(idx, 0)), 1);
    ck_assert_int_eq(json_integer_value(json_array_get(idx, 1)), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(w, "flat_index")), 4);
    ck_assert(json_real_value(json_object_get(w, "value")) == 5.5);
    ck_assert(json_real_value(json_object_get(w, "ref")) == 5.0);
    ck_assert(json_real_value(json_object_get(json_object_get(r1, "metrics"), "max_abs")) == 0.5);
    json_t *r2 = json_array_get(rj, 2);
    ck_assert_str_eq(json_string_value(json_object_get(r2, "verdict")), "skip");
    ck_assert(json_is_null(json_object_get(r2, "metric")));
    ck_assert_ptr_null(json_object_get(r2, "metrics"));
    ck_assert_str_eq(json_string_value(json_object_get(r2, "reproduce")), "R2");
    json_decref(doc);
    ra_rows_clear(&rows);
    ra_gates_clear(&g);
    ra_case_clear(&res);
    ra_case_clear(&ref);
}
END_TEST

/* --- the pipeline on real references -------------------------------------------------- */

static ra_registry *test_registry(void)
{
    static const ra_variant vs[] = {
        {"gdn.t.unsup", "gdn", "refuses", RA_CPU, "f64",
         RA_FWD | RA_BWD | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL, NULL, fwd_unsupported, bwd_clash,
         NULL},
        {"gdn.t.err", "gdn", "fails", RA_CPU, "f64", RA_FWD | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL,
         NULL, fwd_error, NULL, NULL},
        {"gdn.t.zero", "gdn", "zeros", RA_CPU, "f64", RA_FWD | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL,
         NULL, fwd_zero, NULL, NULL},
        {"gdn.t.noh0", "gdn", "no h0", RA_CPU, "f64", RA_FWD | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL,
         NULL, fwd_zero, NULL, NULL},
    };
    ra_registry *r;
    ck_assert_int_eq(ra_registry_new(&r), RA_OK); /* gdn.cpu.* */
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++)
        ck_assert_int_eq(ra_registry_add(r, &vs[i]), RA_OK);
    return r;
}

static ra_case_spec tiny_id(int h0) { return make_id("B=1,T=8,Hk=1,Hv=2,K=4,V=4", 3, h0); }

/* Rows of one variant, counted by verdict. */
static void count_variant(const ra_rows *rows, const char *v, size_t *pass, size_t *fail,
                          size_t *skip)
{
    *pass = *fail = *skip = 0;
    for (size_t i = 0; i < rows->n; i++) {
        if (strcmp(rows->v[i].variant, v) != 0)
            continue;
        *pass += rows->v[i].verdict == RA_VERDICT_PASS;
        *fail += rows->v[i].verdict == RA_VERDICT_FAIL;
        *skip += rows->v[i].verdict == RA_VERDICT_SKIP;
    }
}

static const ra_row *first_row(const ra_rows *rows, const char *v)
{
    for (size_t i = 0; i < rows->n; i++)
        if (strcmp(rows->v[i].variant, v) == 0)
            return &rows->v[i];
    return NULL;
}

START_TEST(data_audit_case)
{
    ra_registry *r = test_registry();
    ra_gates g = test_gates(HDR "gdn\tf64\t*\t*\t*\trel_rms\t1e-10\tr\n"
                                "gdn\tf64\t*\t*\t*\tmax_rel\t1e-10\tm\n"
                                "gdn\tf32\t*\t*\t*\trel_rms\t1e-10\tr\n"
                                "gdn\tf32\t*\t*\t*\tmax_rel\t1e-10\tm\n");
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &g;
    ra_rows rows;
    ra_rows_init(&rows);
    ra_case_spec id = tiny_id(0);
    ck_assert_int_eq(ra_audit_case(&rows, r, "gdn.[ct]*.[fuez]*", &id, &o), RA_OK);
    size_t p, f, s;
    /* gdn.cpu.f64: 7 tensors (o ht dq dk dv dg dbeta) x 2 gates, all pass
       at 1e-10 (a double recurrence of 8 steps is ~1e-15 off). */
    count_variant(&rows, "gdn.cpu.f64", &p, &f, &s);
    ck_assert_uint_eq(p, 14);
    ck_assert_uint_eq(f + s, 0);
    /* gdn.cpu.f32 is ~1e-7 off: every row fails at 1e-10. */
    count_variant(&rows, "gdn.cpu.f32", &p, &f, &s);
    ck_assert_uint_eq(f, 14);
    /* The refusing variant: one skip row carrying its reason. */
    count_variant(&rows, "gdn.t.unsup", &p, &f, &s);
    ck_assert_uint_eq(s, 1);
    ck_assert_uint_eq(p + f, 0);
    ck_assert_str_eq(first_row(&rows, "gdn.t.unsup")->note, "gdn.t.unsup: needs K <= 2");
    /* The failing variant: one FAIL row with its message. */
    count_variant(&rows, "gdn.t.err", &p, &f, &s);
    ck_assert_uint_eq(f, 1);
    ck_assert_str_eq(first_row(&rows, "gdn.t.err")->note, "forward failed (bad input): boom");
    /* Zeros: o and ht have rel_rms = max_rel = 1 (all 4 rows fail); no
       backward, so a skip row for the gradients. */
    count_variant(&rows, "gdn.t.zero", &p, &f, &s);
    ck_assert_uint_eq(f, 4);
    ck_assert_uint_eq(s, 1);
    ck_assert_uint_eq(p, 0);
    const ra_row *z = first_row(&rows, "gdn.t.zero");
    ck_assert_str_eq(z->repro, "recaudit audit --variant gdn.t.zero --op gdn --shape "
                               "B=1,T=8,Hk=1,Hv=2,K=4,V=4 --regime default --dtype f32 --seed 3");
    ck_assert(z->value == 1.0);
    /* Variants outside the glob are not run at all. */
    ck_assert_ptr_null(first_row(&rows, "gdn.cpu.chunk64.ieee"));
    ck_assert_ptr_null(first_row(&rows, "gdn.t.noh0"));
    ra_rows_clear(&rows);

    /* With h0: dh0 joins the gradients; the h0-less variant is skipped. */
    id = tiny_id(1);
    ck_assert_int_eq(ra_audit_case(&rows, r, "gdn.[ct]*.[fn][6o]*", &id, &o), RA_OK);
    count_variant(&rows, "gdn.cpu.f64", &p, &f, &s);
    ck_assert_uint_eq(p, 16);
    count_variant(&rows, "gdn.t.noh0", &p, &f, &s);
    ck_assert_uint_eq(s, 1);
    ck_assert_str_eq(first_row(&rows, "gdn.t.noh0")->note, "no initial state (capability h0)");
    ck_assert(strstr(first_row(&rows, "gdn.t.noh0")->repro, " --h0"));
    ra_rows_clear(&rows);

    /* Forward only: outputs alone are expected. */
    id = tiny_id(0);
    id.bwd = 0;
    ck_assert_int_eq(ra_audit_case(&rows, r, "gdn.cpu.f64", &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 4);
    ck_assert_uint_eq(rows.passed, 4);
    ck_assert(strstr(rows.v[0].repro, " --fwd-only"));
    ra_rows_clear(&rows);

    /* A reference that cannot reach its bits (cap below the threshold)
       makes every variant's row fail, unless uncertified is allowed. */
    o.ref.prec = 64;
    o.ref.prec_cap = 64;
    o.ref.min_bits = 100;
    ck_assert_int_eq(ra_audit_case(&rows, r, "gdn.cpu.f64", &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 1);
    ck_assert_int_eq(rows.v[0].verdict, RA_VERDICT_FAIL);
    ck_assert(strstr(rows.v[0].note, "reference not certified"));
    ra_rows_clear(&rows);
    o.allow_uncertified = 1;
    ck_assert_int_eq(ra_audit_case(&rows, r, "gdn.cpu.f64", &id, &o), RA_OK);
    ck_assert_uint_eq(rows.n, 4);
    ck_assert(strstr(rows.v[0].repro, " --allow-uncertified"));
    ra_rows_clear(&rows);

    ra_gates_clear(&g);
    ra_registry_free(r);
}
END_TEST

START_TEST(data_validate)
{
    ra_registry *r = test_registry();
    ra_gates g = test_gates(HDR "gdn\tf64\t*\t*\t*\trel_rms\t1e-10\tr\n");
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_int_eq(ra_suite_parse(&s,
                                    "op\tshape\tregime\tdtype\tdirection\tseed\tflags\n"
                                    "gdn\tB=1,T=6,Hk=1,Hv=1,K=2,V=2\tzero-gate\tbf16\tfwd\t1\t-\n"
                                    "gdn\tB=1,T=5,Hk=1,Hv=2,K=2,V=3\ttail\tf32\tfwd+bwd\t2\th0\n",
                                    "two.tsv"),
                     RA_OK);
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &g;
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_int_eq(ra_validate(&rows, r, "gdn.cpu.f64", &s, &o), RA_OK);
    /* Row 1: o, ht; row 2: o, ht and six gradients (with dh0). */
    ck_assert_uint_eq(rows.n, 2 + 8);
    ck_assert_uint_eq(rows.passed, 10);
    ck_assert_str_eq(rows.v[0].id.regime, "zero-gate");
    ck_assert_str_eq(rows.v[0].id.dtype, "bf16");
    ck_assert_str_eq(rows.v[9].id.shape, "B=1,T=5,Hk=1,Hv=2,K=2,V=3");
    ra_rows_clear(&rows);
    ck_assert_int_eq(ra_validate(&rows, r, "gdn.none.*", &s, &o), RA_ENOTFOUND);
    ck_assert(strstr(ra_last_error(), "no variant matches 'gdn.none.*'"));
    ra_rows_clear(&rows);
    ra_suite_clear(&s);
    ra_gates_clear(&g);
    ra_registry_free(r);
}
END_TEST

static Suite *validate_suite(void)
{
    Suite *s = suite_create("validate");
    tu_tcase(s, "special", tu_capture, NULL, special_compare, special_compare_bad,
             special_supports);
    tcase_set_timeout(tu_tcase(s, "data", tu_capture, NULL, data_audit_case, data_validate), 300);
    tu_tcase(s, "regress", tu_capture, NULL, regress_tap_json);
    return s;
}

int main(void) { return tu_run(validate_suite()); }
