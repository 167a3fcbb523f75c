/* Check suite for case files and parameters (src/core/case.c). */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/case.h"
#include "core/io.h"
#include "core/status.h"
#include "core/tensor.h"

#include "io-testutil.h"

/*
 * Expected values: parameter texts whose values are written as C literals
 * (the compiler's correctly rounded conversion, independent of strtod's use
 * in case.c) or are exact in binary; file metadata read back through the
 * safetensors layer and compared with the keys the case format documents
 * (op, recaudit_format, then the parameters in insertion order);
 * tests/data/io/py.safetensors, written by the Python `safetensors` package
 * (see t-safetensors.c for the script), as a case file from another tool.
 */

static void assert_same_case(const ra_case *a, const ra_case *b)
{
    ck_assert_str_eq(a->op, b->op);
    ck_assert_uint_eq(a->params.n, b->params.n);
    for (size_t i = 0; i < a->params.n; i++) {
        ck_assert_str_eq(a->params.keys[i], b->params.keys[i]);
        ck_assert_str_eq(a->params.vals[i], b->params.vals[i]);
    }
    ck_assert_uint_eq(a->tensors.n, b->tensors.n);
    for (size_t i = 0; i < a->tensors.n; i++)
        tu_assert_same_tensor(a->tensors.items[i], b->tensors.items[i]);
}

/* --- string maps -------------------------------------------------------------------------- */

START_TEST(special_kv)
{
    ra_kv kv, cp;
    ra_kv_init(&kv);
    ra_kv_init(&cp);
    ck_assert_ptr_null(ra_kv_get(&kv, "a"));
    for (int i = 0; i < 20; i++) /* past the first growth */
        ck_assert_int_eq(ra_kv_setf(&kv, i % 2 ? "odd" : "even", "%d", i), RA_OK);
    ck_assert_uint_eq(kv.n, 2);
    ck_assert_str_eq(kv.keys[0], "even");
    ck_assert_str_eq(ra_kv_get(&kv, "even"), "18");
    ck_assert_str_eq(ra_kv_get(&kv, "odd"), "19");
    char key[16];
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "k%02d", i);
        ck_assert_int_eq(ra_kv_set(&kv, key, key + 1), RA_OK);
    }
    ck_assert_uint_eq(kv.n, 22);
    ck_assert_str_eq(kv.keys[21], "k19");
    ck_assert_str_eq(ra_kv_get(&kv, "k07"), "07");
    /* replacing keeps the position */
    ck_assert_int_eq(ra_kv_set(&kv, "k00", "zero"), RA_OK);
    ck_assert_str_eq(kv.keys[2], "k00");
    ck_assert_str_eq(kv.vals[2], "zero");
    ck_assert_int_eq(ra_kv_remove(&kv, "odd"), 1);
    ck_assert_int_eq(ra_kv_remove(&kv, "odd"), 0);
    ck_assert_uint_eq(kv.n, 21);
    ck_assert_str_eq(kv.keys[1], "k00");
    ck_assert_int_eq(ra_kv_copy(&cp, &kv), RA_OK);
    ck_assert_uint_eq(cp.n, kv.n);
    for (size_t i = 0; i < kv.n; i++) {
        ck_assert_str_eq(cp.keys[i], kv.keys[i]);
        ck_assert_str_eq(cp.vals[i], kv.vals[i]);
    }
    /* a formatted value longer than the formatting buffer is refused */
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tu_expect_error(ra_kv_setf(&kv, "long", "%s", big), RA_EINVAL, "'long'", "too long");
    ck_assert_ptr_null(ra_kv_get(&kv, "long"));
    ra_kv_clear(&kv);
    ra_kv_clear(&cp);
    ck_assert_uint_eq(kv.n, 0);
}
END_TEST

/* --- parameters ----------------------------------------------------------------------------- */

START_TEST(data_params)
{
    ra_case c;
    tu_case_init(&c, "gdn");
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.125"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2eps", "1e-6"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "neg", "-2.5e-3"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "T", "4096"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "m", "-7"), RA_OK);
    double d;
    long l;
    int b;
    ck_assert_int_eq(ra_case_param_double(&d, &c, "scale", 1.0), RA_OK);
    ck_assert(d == 0.125);
    ck_assert_int_eq(ra_case_param_double(&d, &c, "l2eps", 1.0), RA_OK);
    ck_assert(d == 1e-6);
    ck_assert_int_eq(ra_case_param_double(&d, &c, "neg", 1.0), RA_OK);
    ck_assert(d == -2.5e-3);
    ck_assert_int_eq(ra_case_param_double(&d, &c, "absent", 0.75), RA_OK);
    ck_assert(d == 0.75);
    ck_assert_int_eq(ra_case_param_int(&l, &c, "T", 0), RA_OK);
    ck_assert_int_eq(l, 4096);
    ck_assert_int_eq(ra_case_param_int(&l, &c, "m", 0), RA_OK);
    ck_assert_int_eq(l, -7);
    ck_assert_int_eq(ra_case_param_int(&l, &c, "absent", 64), RA_OK);
    ck_assert_int_eq(l, 64);
    static const char *yes[] = {"1", "true", "TRUE", "yes", "On"};
    static const char *no[] = {"0", "false", "False", "no", "OFF"};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", yes[i]), RA_OK);
        ck_assert_int_eq(ra_case_param_bool(&b, &c, "l2norm", 0), RA_OK);
        ck_assert_int_eq(b, 1);
        ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", no[i]), RA_OK);
        ck_assert_int_eq(ra_case_param_bool(&b, &c, "l2norm", 1), RA_OK);
        ck_assert_int_eq(b, 0);
    }
    ck_assert_int_eq(ra_case_param_bool(&b, &c, "absent", 1), RA_OK);
    ck_assert_int_eq(b, 1);
    ck_assert_str_eq(ra_case_param(&c, "T"), "4096");
    ck_assert_ptr_null(ra_case_param(&c, "absent"));
    ck_assert_int_eq(tu_nerr, 0);
    ra_case_clear(&c);
}
END_TEST

START_TEST(bad_params)
{
    ra_case c;
    ra_case_init(&c);
    double d;
    long l;
    int b;
    static const char *bad_d[] = {"abc", "1.5x", "", "inf", "nan", "1e999", " "};
    for (size_t i = 0; i < sizeof bad_d / sizeof bad_d[0]; i++) {
        ck_assert_int_eq(ra_kv_set(&c.params, "scale", bad_d[i]), RA_OK);
        char quoted[32];
        snprintf(quoted, sizeof quoted, "'%s'", bad_d[i]);
        tu_expect_error(ra_case_param_double(&d, &c, "scale", 1.0), RA_EINVAL, "'scale'", quoted);
    }
    static const char *bad_l[] = {"1.0", "0x10", "12a", "", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_l / sizeof bad_l[0]; i++) {
        ck_assert_int_eq(ra_kv_set(&c.params, "T", bad_l[i]), RA_OK);
        tu_expect_error(ra_case_param_int(&l, &c, "T", 1), RA_EINVAL, "'T'", "not an integer");
    }
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "maybe"), RA_OK);
    tu_expect_error(ra_case_param_bool(&b, &c, "l2norm", 0), RA_EINVAL, "'l2norm'", "'maybe'");
    ra_case_clear(&c);
}
END_TEST

/* --- files --------------------------------------------------------------------------------- */

static void make_case(ra_case *c)
{
    tu_case_init(c, "gdn");
    ck_assert_int_eq(ra_kv_set(&c->params, "scale", "0.25"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c->params, "l2norm", "true"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c->params, "regime", "default"), RA_OK);
    const int64_t q[4] = {1, 3, 1, 4}, g[3] = {1, 3, 2}, h[4] = {1, 2, 4, 4};
    ck_assert_int_eq(ra_tensors_add(&c->tensors, io_random_tensor("q", RA_F32, 4, q)), RA_OK);
    ck_assert_int_eq(ra_tensors_add(&c->tensors, io_random_tensor("g", RA_BF16, 3, g)), RA_OK);
    ck_assert_int_eq(ra_tensors_add(&c->tensors, io_random_tensor("h0", RA_F64, 4, h)), RA_OK);
    ck_assert_int_eq(ra_tensors_add(&c->tensors, io_random_tensor("do", RA_F16, 3, g)), RA_OK);
}

START_TEST(data_save_load)
{
    ra_case c, back;
    make_case(&c);
    ra_case_init(&back);
    const char *p = tu_scratch("case.safetensors");
    ck_assert_int_eq(ra_case_save(&c, p), RA_OK);
    ck_assert_int_eq(ra_case_load(&back, p), RA_OK);
    assert_same_case(&c, &back);
    /* The metadata as the format documents it. */
    ra_tensors ts;
    ra_kv meta;
    ra_tensors_init(&ts);
    ra_kv_init(&meta);
    ck_assert_int_eq(ra_safetensors_read(&ts, &meta, p), RA_OK);
    static const char *keys[] = {"op", "recaudit_format", "scale", "l2norm", "regime"};
    static const char *vals[] = {"gdn", "1", "0.25", "true", "default"};
    ck_assert_uint_eq(meta.n, 5);
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(meta.keys[i], keys[i]);
        ck_assert_str_eq(meta.vals[i], vals[i]);
    }
    ck_assert_uint_eq(ts.n, 4);
    ra_tensors_clear(&ts);
    ra_kv_clear(&meta);
    /* Loading into a used case replaces its content. */
    ck_assert_int_eq(ra_case_load(&back, p), RA_OK);
    assert_same_case(&c, &back);
    ck_assert_int_eq(io_tmp_count(), 1);
    ck_assert_int_eq(tu_nerr, 0);
    ra_case_clear(&c);
    ra_case_clear(&back);
}
END_TEST

START_TEST(data_foreign_file)
{
    /* A file from the reference implementation with op in its metadata. */
    ra_case c;
    ra_case_init(&c);
    ck_assert_int_eq(ra_case_load(&c, io_fixture("py.safetensors")), RA_OK);
    ck_assert_str_eq(c.op, "gdn");
    ck_assert_uint_eq(c.params.n, 1);
    ck_assert_str_eq(ra_case_param(&c, "seed"), "7");
    long seed;
    ck_assert_int_eq(ra_case_param_int(&seed, &c, "seed", 0), RA_OK);
    ck_assert_int_eq(seed, 7);
    ck_assert_uint_eq(c.tensors.n, 3);
    ra_tensor *a;
    ck_assert_int_eq(ra_tensors_require(&a, &c.tensors, "a", "py"), RA_OK);
    ck_assert(ra_tensor_get(a, 5) == 5 * 0.25 - 3);
    ra_case_clear(&c);
}
END_TEST

START_TEST(bad_files)
{
    ra_case c;
    make_case(&c);
    ra_tensors ts;
    ra_tensors_init(&ts);
    ck_assert_int_eq(ra_tensors_new(&ts, NULL, "x", RA_F32, 0, NULL), RA_OK);
    /* no op */
    const char *p = tu_scratch("noop.safetensors");
    ck_assert_int_eq(ra_safetensors_write(p, &ts, NULL), RA_OK);
    tu_expect_error(ra_case_load(&c, p), RA_EFORMAT, p, "no 'op'");
    ck_assert_ptr_null(c.op);
    ck_assert_uint_eq(c.tensors.n, 0);
    ck_assert_uint_eq(c.params.n, 0);
    /* a future format version */
    ra_kv meta;
    ra_kv_init(&meta);
    ck_assert_int_eq(ra_kv_set(&meta, "op", "gdn"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&meta, "recaudit_format", "2"), RA_OK);
    p = tu_scratch("v2.safetensors");
    ck_assert_int_eq(ra_safetensors_write(p, &ts, &meta), RA_OK);
    tu_expect_error(ra_case_load(&c, p), RA_EFORMAT, p, "recaudit_format '2'");
    /* missing file, malformed file: the safetensors layer's message */
    p = tu_scratch("missing.safetensors");
    tu_expect_error(ra_case_load(&c, p), RA_EIO, p);
    p = io_put("junk.safetensors", "\x01\0\0\0\0\0\0\0{", 9);
    tu_expect_error(ra_case_load(&c, p), RA_EFORMAT, p, "not valid JSON");
    /* saving needs an op */
    ra_case_clear(&c);
    tu_expect_error(ra_case_save(&c, tu_scratch("x.safetensors")), RA_EINVAL, "no operation");
    ra_kv_clear(&meta);
    ra_tensors_clear(&ts);
}
END_TEST

START_TEST(regress_reserved_param)
{
    /* A parameter named like a format key used to overwrite it silently
       (saving a case with params {"op": "glr"} produced an "glr" case);
       it is now refused. */
    ra_case c;
    make_case(&c);
    const char *p = tu_scratch("r.safetensors");
    ck_assert_int_eq(ra_kv_set(&c.params, "op", "glr"), RA_OK);
    tu_expect_error(ra_case_save(&c, p), RA_EINVAL, "'op'", "reserved");
    ra_kv_remove(&c.params, "op");
    ck_assert_int_eq(ra_kv_set(&c.params, "recaudit_format", "9"), RA_OK);
    tu_expect_error(ra_case_save(&c, p), RA_EINVAL, "'recaudit_format'", "reserved");
    ck_assert_int_eq(io_tmp_count(), 0);
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("case");
    io_tcase(s, "special", special_kv);
    io_tcase(s, "data", data_params, data_save_load, data_foreign_file);
    io_tcase(s, "bad", bad_params, bad_files);
    io_tcase(s, "regress", regress_reserved_param);
    return s;
}

int main(void) { return tu_run(suite()); }
