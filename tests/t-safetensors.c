/* Check suite for .safetensors I/O (src/core/safetensors.c). */
#include <config.h>

#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/case.h"
#include "core/io.h"
#include "core/status.h"
#include "core/tensor.h"

#include "io-testutil.h"

/*
 * Independent sources of expected values:
 * - file images spelled out byte by byte below (JSON text written literally,
 *   lengths counted by hand and cross-counted with Python's len(), IEEE bit
 *   patterns of the values worked out by hand and written as hex);
 * - tests/data/io/py.safetensors, written by the reference implementation
 *   (the `safetensors` Python package 0.8.0 with NumPy 2.4) with
 *
 *     import numpy as np
 *     from safetensors.numpy import save_file
 *     r = lambda n, dt: np.arange(n, dtype=dt) * 0.25 - 3
 *     save_file({"a": r(6, np.float32).reshape(2, 3), "b": r(4, np.float64),
 *                "c": np.array([1.5, -0.5], dtype=np.float16)},
 *               "py.safetensors", metadata={"op": "gdn", "seed": "7"})
 *
 *   whose values are asserted from that formula (it also orders the data
 *   b, a, c: F64 first, then F32, then F16);
 * - round trips compare bits with memcmp against the tensors written.
 */

/* 8-byte little-endian length + header text + data, built without the
   library.  Caller frees. */
static uint8_t *image(size_t *len, const char *hdr, const void *data, size_t dlen)
{
    size_t h = strlen(hdr);
    *len = 8 + h + dlen;
    uint8_t *b = malloc(*len);
    ck_assert_ptr_nonnull(b);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)h >> (8 * i));
    memcpy(b + 8, hdr, h);
    if (dlen)
        memcpy(b + 8 + h, data, dlen);
    return b;
}

/* Parses hdr+data and expects failure with `code` and the substrings. */
#define BAD(code, hdr, data, dlen, ...)                                                            \
    do {                                                                                           \
        size_t len_;                                                                               \
        uint8_t *img_ = image(&len_, hdr, data, dlen);                                             \
        ra_tensors ts_;                                                                            \
        ra_kv kv_;                                                                                 \
        ra_tensors_init(&ts_);                                                                     \
        ra_kv_init(&kv_);                                                                          \
        ra_status st_ = ra_safetensors_parse(&ts_, &kv_, img_, len_, "bad.safetensors");           \
        ck_assert_uint_eq(ts_.n, 0);                                                               \
        ck_assert_uint_eq(kv_.n, 0);                                                               \
        tu_expect_error(st_, code, "bad.safetensors", __VA_ARGS__);                                \
        free(img_);                                                                                \
    } while (0)

static const uint8_t zeros[64];

/* --- data: a file spelled out byte by byte -------------------------------------------- */

START_TEST(data_literal_image)
{
    /* JSON order x, __metadata__, h, f, w; data order w, x, h, f.  258 bytes
       of header = 0x102. */
    static const char img[] = "\x02\x01\x00\x00\x00\x00\x00\x00"
                              "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                              "\"__metadata__\":{\"k\":\"v\",\"op\":\"gdn\"},"
                              "\"h\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[16,20]},"
                              "\"f\":{\"dtype\":\"F16\",\"shape\":[2,1],\"data_offsets\":[20,24]},"
                              "\"w\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}"
                              /* w = -1.5: 0xBFF8000000000000 */
                              "\x00\x00\x00\x00\x00\x00\xF8\xBF"
                              /* x = 1.0 (0x3F800000), -0.5 (0xBF000000) */
                              "\x00\x00\x80\x3F\x00\x00\x00\xBF"
                              /* h = bf16 3.0 (0x4040), -inf (0xFF80) */
                              "\x40\x40\x80\xFF"
                              /* f = f16 65504 (0x7BFF), 2^-24 (0x0001) */
                              "\xFF\x7B\x01\x00";
    size_t len = sizeof img - 1;
    ck_assert_uint_eq(len, 8 + 258 + 24);
    ra_tensors ts;
    ra_kv kv;
    ra_tensors_init(&ts);
    ra_kv_init(&kv);
    ck_assert_int_eq(ra_safetensors_parse(&ts, &kv, (const uint8_t *)img, len, "lit"), RA_OK);
    ck_assert_int_eq(tu_nerr, 0);
    ck_assert_uint_eq(kv.n, 2);
    ck_assert_str_eq(kv.keys[0], "k");
    ck_assert_str_eq(kv.vals[0], "v");
    ck_assert_str_eq(kv.keys[1], "op");
    ck_assert_str_eq(kv.vals[1], "gdn");
    ck_assert_uint_eq(ts.n, 4);
    const char *order[4] = {"w", "x", "h", "f"};
    for (int i = 0; i < 4; i++)
        ck_assert_str_eq(ts.items[i]->name, order[i]);
    ra_tensor *w = ts.items[0], *x = ts.items[1], *h = ts.items[2], *f = ts.items[3];
    ck_assert_int_eq(w->dtype, RA_F64);
    ck_assert_int_eq(w->ndim, 0);
    ck_assert_int_eq(w->numel, 1);
    ck_assert(ra_tensor_get(w, 0) == -1.5);
    ck_assert_int_eq(x->dtype, RA_F32);
    ck_assert_int_eq(x->ndim, 1);
    ck_assert_int_eq(x->shape[0], 2);
    ck_assert(ra_tensor_get(x, 0) == 1.0 && ra_tensor_get(x, 1) == -0.5);
    ck_assert_int_eq(h->dtype, RA_BF16);
    ck_assert_int_eq(h->ndim, 2);
    ck_assert(h->shape[0] == 1 && h->shape[1] == 2);
    ck_assert(ra_tensor_get(h, 0) == 3.0 && ra_tensor_get(h, 1) == -INFINITY);
    ck_assert_int_eq(f->dtype, RA_F16);
    ck_assert(f->shape[0] == 2 && f->shape[1] == 1);
    ck_assert(ra_tensor_get(f, 0) == 65504.0 && ra_tensor_get(f, 1) == ldexp(1.0, -24));
    ra_tensors_clear(&ts);
    ra_kv_clear(&kv);
}
END_TEST

START_TEST(data_serialize_literal)
{
    /* Header: 146 characters + 6 spaces = 152 = 0x98 (a multiple of 8). */
    static const char want[] =
        "\x98\x00\x00\x00\x00\x00\x00\x00"
        "{\"__metadata__\":{\"op\":\"gdn\",\"seed\":\"1\"},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[8,10]}}      "
        "\x00\x00\x80\x3F\x00\x00\x00\xC0" /* 1.0f, -2.0f */
        "\x00\x3C";                        /* f16 1.0 */
    size_t wlen = sizeof want - 1;
    ck_assert_uint_eq(wlen, 8 + 152 + 10);
    ra_tensors ts;
    ra_tensors_init(&ts);
    ra_tensor *a, *b;
    int64_t two = 2;
    ck_assert_int_eq(ra_tensors_new(&ts, &a, "a", RA_F32, 1, &two), RA_OK);
    ck_assert_int_eq(ra_tensors_new(&ts, &b, "b", RA_F16, 0, NULL), RA_OK);
    ra_tensor_set(a, 0, 1.0);
    ra_tensor_set(a, 1, -2.0);
    ra_tensor_set(b, 0, 1.0);
    ra_kv kv;
    ra_kv_init(&kv);
    ck_assert_int_eq(ra_kv_set(&kv, "op", "gdn"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&kv, "seed", "1"), RA_OK);
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(ra_safetensors_serialize(&buf, &len, &ts, &kv), RA_OK);
    ck_assert_uint_eq(len, wlen);
    ck_assert(memcmp(buf, want, wlen) == 0);
    free(buf);

    /* The file writer produces the same bytes. */
    const char *p = tu_scratch("lit.safetensors");
    ck_assert_int_eq(ra_safetensors_write(p, &ts, &kv), RA_OK);
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert_uint_eq(len, wlen);
    ck_assert(memcmp(buf, want, wlen) == 0);
    free(buf);
    ck_assert_int_eq(io_tmp_count(), 1); /* no temporary left behind */
    ra_tensors_clear(&ts);
    ra_kv_clear(&kv);
}
END_TEST

START_TEST(special_empty)
{
    /* No tensors, no metadata: "{}" + 6 spaces, nothing after. */
    static const char want[] = "\x08\x00\x00\x00\x00\x00\x00\x00{}      ";
    ra_tensors ts;
    ra_tensors_init(&ts);
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(ra_safetensors_serialize(&buf, &len, &ts, NULL), RA_OK);
    ck_assert_uint_eq(len, 16);
    ck_assert(memcmp(buf, want, 16) == 0);
    ra_kv kv;
    ra_kv_init(&kv);
    ck_assert_int_eq(ra_safetensors_parse(&ts, &kv, buf, len, "empty"), RA_OK);
    ck_assert_uint_eq(ts.n, 0);
    ck_assert_uint_eq(kv.n, 0);
    free(buf);
    /* An empty metadata map is not written at all. */
    ck_assert_int_eq(ra_safetensors_serialize(&buf, &len, &ts, &kv), RA_OK);
    ck_assert(len == 16 && memcmp(buf, want, 16) == 0);
    free(buf);
}
END_TEST

START_TEST(special_zero_size)
{
    /* Zero-element tensors have begin == end and may share an offset. */
    const char *hdr = "{\"z\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                      "\"y\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
                      "\"e\":{\"dtype\":\"F16\",\"shape\":[2,0],\"data_offsets\":[8,8]}}";
    uint8_t d[8] = {0, 0, 0, 0, 0, 0, 0xF0, 0x3F}; /* 1.0 */
    size_t len;
    uint8_t *img = image(&len, hdr, d, 8);
    ra_tensors ts;
    ra_tensors_init(&ts);
    ck_assert_int_eq(ra_safetensors_parse(&ts, NULL, img, len, "z"), RA_OK);
    ck_assert_uint_eq(ts.n, 3);
    ck_assert_str_eq(ts.items[0]->name, "z");
    ck_assert_int_eq(ts.items[0]->numel, 0);
    ck_assert_str_eq(ts.items[1]->name, "y");
    ck_assert(ra_tensor_get(ts.items[1], 0) == 1.0);
    ck_assert_str_eq(ts.items[2]->name, "e");
    ck_assert_int_eq(ts.items[2]->numel, 0);
    ra_tensors_clear(&ts);
    free(img);
}
END_TEST

START_TEST(data_reference_implementation)
{
    ra_tensors ts;
    ra_kv kv;
    ra_tensors_init(&ts);
    ra_kv_init(&kv);
    ck_assert_int_eq(ra_safetensors_read(&ts, &kv, io_fixture("py.safetensors")), RA_OK);
    ck_assert_str_eq(ra_kv_get(&kv, "op"), "gdn");
    ck_assert_str_eq(ra_kv_get(&kv, "seed"), "7");
    ck_assert_uint_eq(kv.n, 2);
    ck_assert_uint_eq(ts.n, 3);
    ra_tensor *b = ts.items[0], *a = ts.items[1], *c = ts.items[2];
    ck_assert_str_eq(b->name, "b");
    ck_assert_str_eq(a->name, "a");
    ck_assert_str_eq(c->name, "c");
    ck_assert_int_eq(a->dtype, RA_F32);
    ck_assert(a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3);
    for (int i = 0; i < 6; i++)
        ck_assert(ra_tensor_get(a, i) == i * 0.25 - 3);
    ck_assert_int_eq(b->dtype, RA_F64);
    ck_assert(b->ndim == 1 && b->shape[0] == 4);
    for (int i = 0; i < 4; i++)
        ck_assert(ra_tensor_get(b, i) == i * 0.25 - 3);
    ck_assert_int_eq(c->dtype, RA_F16);
    ck_assert(ra_tensor_get(c, 0) == 1.5 && ra_tensor_get(c, 1) == -0.5);
    ra_tensors_clear(&ts);
    ra_kv_clear(&kv);
}
END_TEST

/* --- random round trips ------------------------------------------------------------------ */

static void fill_random(ra_tensors *ts, int n)
{
    for (int k = 0; k < n; k++) {
        int64_t shape[RA_MAX_DIMS];
        int nd = (int)(io_rand() % 5);
        for (int i = 0; i < nd; i++)
            shape[i] = (int64_t)(io_rand() % 4); /* zeros included */
        char name[32];
        snprintf(name, sizeof name, "t%d.%s", k, k % 3 ? "w" : "\xc3\xa9"); /* UTF-8 é */
        ck_assert_int_eq(
            ra_tensors_add(ts,
                           io_random_tensor(name, (ra_dtype)(io_rand() % RA_NDTYPES), nd, shape)),
            RA_OK);
    }
}

START_TEST(random_roundtrip)
{
    for (int rep = 0; rep < 20; rep++) {
        ra_tensors ts, back;
        ra_kv kv, kback;
        ra_tensors_init(&ts);
        ra_tensors_init(&back);
        ra_kv_init(&kv);
        ra_kv_init(&kback);
        fill_random(&ts, 1 + rep % 7);
        ck_assert_int_eq(ra_kv_set(&kv, "quote\"back\\slash", "line\nbreak\ttab \xe2\x82\xac"),
                         RA_OK);
        ck_assert_int_eq(ra_kv_setf(&kv, "rep", "%d", rep), RA_OK);
        ck_assert_int_eq(ra_kv_set(&kv, "empty", ""), RA_OK);
        uint8_t *buf, *fbuf;
        size_t len, flen;
        ck_assert_int_eq(ra_safetensors_serialize(&buf, &len, &ts, &kv), RA_OK);
        /* header length is a multiple of 8 and the image is exactly
           8 + header + data */
        uint64_t h = 0;
        for (int i = 7; i >= 0; i--)
            h = h << 8 | buf[i];
        ck_assert_uint_eq(h % 8, 0);
        size_t data = 0;
        for (size_t i = 0; i < ts.n; i++)
            data += ts.items[i]->nbytes;
        ck_assert_uint_eq(len, 8 + h + data);
        ck_assert_int_eq(ra_safetensors_parse(&back, &kback, buf, len, "rt"), RA_OK);
        ck_assert_uint_eq(back.n, ts.n);
        /* Zero-size tensors share offsets with their successor, so the data
           order can differ from ts only among them: match by name. */
        for (size_t i = 0; i < ts.n; i++) {
            ra_tensor *t = ra_tensors_find(&back, ts.items[i]->name);
            ck_assert_ptr_nonnull(t);
            tu_assert_same_tensor(ts.items[i], t);
        }
        ck_assert_uint_eq(kback.n, kv.n);
        for (size_t i = 0; i < kv.n; i++) {
            ck_assert_str_eq(kback.keys[i], kv.keys[i]);
            ck_assert_str_eq(kback.vals[i], kv.vals[i]);
        }
        /* File path: same bytes as the image. */
        const char *p = tu_scratch("rt.safetensors");
        ck_assert_int_eq(ra_safetensors_write(p, &ts, &kv), RA_OK);
        ck_assert_int_eq(ra_file_read_all(&fbuf, &flen, p), RA_OK);
        ck_assert(flen == len && memcmp(fbuf, buf, len) == 0);
        ra_tensors_clear(&back);
        ck_assert_int_eq(ra_safetensors_read(&back, NULL, p), RA_OK);
        ck_assert_uint_eq(back.n, ts.n);
        free(buf);
        free(fbuf);
        ra_tensors_clear(&ts);
        ra_tensors_clear(&back);
        ra_kv_clear(&kv);
        ra_kv_clear(&kback);
    }
    ck_assert_int_eq(tu_nerr, 0);
}
END_TEST

/* Random corruptions of a valid image (byte changes, truncation): the
   parser either accepts the result or refuses it with one report of a
   format/size error; never a crash (run under --enable-sanitizers too). */
START_TEST(random_mutations)
{
    ra_tensors ts;
    ra_kv kv;
    ra_tensors_init(&ts);
    ra_kv_init(&kv);
    fill_random(&ts, 4);
    ck_assert_int_eq(ra_kv_set(&kv, "op", "gdn"), RA_OK);
    uint8_t *img;
    size_t len;
    ck_assert_int_eq(ra_safetensors_serialize(&img, &len, &ts, &kv), RA_OK);
    ra_tensors_clear(&ts);
    ra_kv_clear(&kv);
    uint8_t *m = malloc(len);
    ck_assert_ptr_nonnull(m);
    static const char pool[] = "{}[]\",:0123456789-eE.FIBU \\";
    int refused = 0;
    for (int rep = 0; rep < 3000; rep++) {
        /* mostly the length field and the header, sometimes anywhere */
        size_t mlen = io_mutate(m, img, len, len < 160 ? len : 160, pool);
        tu_reset();
        refused += io_refused_cleanly(ra_safetensors_parse(&ts, &kv, m, mlen, "mut"));
        ra_tensors_clear(&ts);
        ra_kv_clear(&kv);
    }
    ck_assert_int_gt(refused, 1000);
    free(m);
    free(img);
}
END_TEST

/* --- malformed input: each its own test --------------------------------------------------- */

START_TEST(bad_short_file)
{
    uint8_t b[5] = {1, 0, 0, 0, 0};
    ra_tensors ts;
    ra_tensors_init(&ts);
    tu_expect_error(ra_safetensors_parse(&ts, NULL, b, sizeof b, "short.st"), RA_EFORMAT,
                    "short.st", "truncated", "header length");
}
END_TEST

START_TEST(bad_header_beyond_file)
{
    uint8_t b[20] = {0xE8, 0x03}; /* 1000 */
    ra_tensors ts;
    ra_tensors_init(&ts);
    tu_expect_error(ra_safetensors_parse(&ts, NULL, b, sizeof b, "x.st"), RA_EFORMAT, "x.st",
                    "header length 1000", "12 bytes");
    /* A length near 2^64: refused before any allocation or arithmetic wrap. */
    uint8_t c[16] = {0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, '{', '}'};
    tu_expect_error(ra_safetensors_parse(&ts, NULL, c, sizeof c, "y.st"), RA_EFORMAT, "y.st",
                    "header length 18446744073709551600");
}
END_TEST

START_TEST(bad_header_absurd)
{
    /* A sparse 150 MB file whose header length claims 150e6 bytes: within
       the file, but beyond the 100 MB cap; refused before allocating. */
    const char *p = tu_scratch("huge.safetensors");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    uint64_t n = 150000000;
    uint8_t lb[8];
    for (int i = 0; i < 8; i++)
        lb[i] = (uint8_t)(n >> (8 * i));
    ck_assert_int_eq(write(fd, lb, 8), 8);
    ck_assert_int_eq(ftruncate(fd, (off_t)(8 + n + 16)), 0);
    ck_assert_int_eq(close(fd), 0);
    ra_tensors ts;
    ra_tensors_init(&ts);
    tu_expect_error(ra_safetensors_read(&ts, NULL, p), RA_EFORMAT, p, "150000000",
                    "100000000-byte limit");
}
END_TEST

START_TEST(bad_json_syntax) { BAD(RA_EFORMAT, "{\"x\":", NULL, 0, "not valid JSON"); }
END_TEST

START_TEST(bad_json_not_object) { BAD(RA_EFORMAT, "[1,2]", NULL, 0, "not a JSON object"); }
END_TEST

START_TEST(bad_json_duplicate)
{
    BAD(RA_EFORMAT,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
        "\"x\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
        zeros, 4, "duplicate", "x");
}
END_TEST

START_TEST(bad_missing_dtype)
{
    BAD(RA_EFORMAT, "{\"x\":{\"shape\":[1],\"data_offsets\":[0,4]}}", zeros, 4, "tensor 'x'",
        "missing field 'dtype'");
}
END_TEST

START_TEST(bad_missing_shape)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", zeros, 4, "tensor 'x'",
        "missing field 'shape'");
}
END_TEST

START_TEST(bad_missing_offsets)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1]}}", zeros, 4, "tensor 'x'",
        "missing field 'data_offsets'");
}
END_TEST

START_TEST(bad_entry_types)
{
    BAD(RA_EFORMAT, "{\"x\":[1]}", NULL, 0, "tensor 'x'", "not an object");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}}", zeros, 4,
        "tensor 'x'", "'dtype' is not a string");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,4]}}", zeros, 4,
        "tensor 'x'", "'shape' is not an array");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", zeros, 4,
        "tensor 'x'", "'shape'", "dimension 0 is not an integer");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", zeros, 4,
        "tensor 'x'", "'data_offsets'");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", zeros, 8,
        "tensor 'x'", "'data_offsets'");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", zeros, 4,
        "tensor 'x'", "'data_offsets'");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0,4\"}}", zeros, 4,
        "tensor 'x'", "'data_offsets'");
    BAD(RA_EFORMAT,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", zeros,
        4, "tensor 'x'", "9 dimensions");
}
END_TEST

START_TEST(bad_dtype)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", zeros, 4,
        "tensor 'x': dtype I32 not supported (F64, F32, BF16, F16)");
    /* The spelling is the format's: lower case is not a dtype. */
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", zeros, 4,
        "tensor 'x': dtype f32 not supported");
}
END_TEST

START_TEST(bad_negative_dim)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", NULL, 0,
        "tensor 'x'", "negative dimension -1");
}
END_TEST

START_TEST(bad_shape_overflow)
{
    /* 2^32 * 2^32 = 2^64 elements. */
    BAD(RA_EOVERFLOW,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}",
        NULL, 0, "tensor 'x'", "overflows");
    /* 2^62 elements fit int64, but 2^62 * 8 bytes do not fit 64 bits. */
    BAD(RA_EOVERFLOW,
        "{\"x\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", NULL,
        0, "tensor 'x'", "byte size overflows");
    /* Integers beyond int64 are refused by the JSON layer. */
    BAD(RA_EFORMAT,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,0]}}", NULL,
        0, "not valid JSON");
}
END_TEST

START_TEST(bad_begin_after_end)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", zeros, 8,
        "tensor 'x'", "[8, 0]", "begin > end");
}
END_TEST

START_TEST(bad_span)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", zeros, 4,
        "tensor 'x'", "span 4 bytes", "needs 8");
}
END_TEST

START_TEST(bad_out_of_range)
{
    /* Truncated data: 8 bytes promised, 6 present. */
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", zeros, 6,
        "tensor 'x'", "beyond the 6-byte data area");
}
END_TEST

START_TEST(bad_overlap)
{
    BAD(RA_EFORMAT,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
        zeros, 12, "'x' and 'y' overlap");
    /* y inside x: sorted by begin it is an overlap, not a hole before x */
    BAD(RA_EFORMAT,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
        "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        zeros, 12, "'x' and 'y' overlap", "'y' begins at 4, before 'x' ends at 12");
}
END_TEST

START_TEST(bad_hole)
{
    BAD(RA_EFORMAT,
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
        zeros, 20, "tensor 'y'", "[8, 12)");
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", zeros, 8,
        "tensor 'x'", "[0, 4)");
}
END_TEST

START_TEST(bad_trailing)
{
    BAD(RA_EFORMAT, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", zeros, 7,
        "3 trailing bytes");
}
END_TEST

START_TEST(bad_metadata)
{
    BAD(RA_EFORMAT, "{\"__metadata__\":{\"op\":\"gdn\",\"seed\":7}}", NULL, 0, "__metadata__",
        "'seed'", "not a string");
    BAD(RA_EFORMAT, "{\"__metadata__\":[\"op\"]}", NULL, 0, "__metadata__", "not an object");
    /* Validated even when the caller does not want the metadata. */
    size_t len;
    uint8_t *img = image(&len, "{\"__metadata__\":{\"k\":null}}", NULL, 0);
    ra_tensors ts;
    ra_tensors_init(&ts);
    tu_expect_error(ra_safetensors_parse(&ts, NULL, img, len, "m.st"), RA_EFORMAT, "m.st", "'k'");
    free(img);
}
END_TEST

START_TEST(bad_leaves_caller_state)
{
    /* A failed read leaves existing tensors and metadata as they were. */
    ra_tensors ts;
    ra_kv kv;
    ra_tensors_init(&ts);
    ra_kv_init(&kv);
    ck_assert_int_eq(ra_tensors_new(&ts, NULL, "keep", RA_F32, 0, NULL), RA_OK);
    ck_assert_int_eq(ra_kv_set(&kv, "keep", "1"), RA_OK);
    size_t len;
    uint8_t *img = image(&len,
                         "{\"__metadata__\":{\"a\":\"b\"},"
                         "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                         "\"y\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                         zeros, 9);
    tu_expect_error(ra_safetensors_parse(&ts, &kv, img, len, "k.st"), RA_EFORMAT, "trailing");
    ck_assert_uint_eq(ts.n, 1);
    ck_assert_str_eq(ts.items[0]->name, "keep");
    ck_assert_uint_eq(kv.n, 1);
    /* and a good read appends (file order) */
    ck_assert_int_eq(ra_safetensors_parse(&ts, &kv, img, len - 1, "k.st"), RA_OK);
    ck_assert_uint_eq(ts.n, 3);
    ck_assert_str_eq(ts.items[1]->name, "x");
    ck_assert_str_eq(ts.items[2]->name, "y");
    ck_assert_str_eq(ra_kv_get(&kv, "a"), "b");
    free(img);
    ra_tensors_clear(&ts);
    ra_kv_clear(&kv);
}
END_TEST

/* --- writer refusals ------------------------------------------------------------------------ */

START_TEST(bad_write_inputs)
{
    const char *p = tu_scratch("w.safetensors");
    io_put("w.safetensors", "old", 3);
    ra_tensors ts;
    ra_tensors_init(&ts);
    ra_tensor *t;
    ck_assert_int_eq(ra_tensors_new(&ts, &t, "__metadata__", RA_F32, 0, NULL), RA_OK);
    tu_expect_error(ra_safetensors_write(p, &ts, NULL), RA_EINVAL, "__metadata__", "reserved");
    free(t->name);
    t->name = strdup("x");
    t->nbytes = 8; /* inconsistent with a 0-d f32 */
    tu_expect_error(ra_safetensors_write(p, &ts, NULL), RA_EINVAL, "tensor 'x'", "nbytes");
    t->nbytes = 4;
    /* Two tensors of one name (ra_tensors_add would replace: append by
       hand; cap is >= 8 after the first add). */
    ra_tensor *u;
    ck_assert_int_eq(ra_tensor_clone(&u, t, NULL), RA_OK);
    ck_assert_uint_ge(ts.cap, 2);
    ts.items[ts.n++] = u;
    tu_expect_error(ra_safetensors_write(p, &ts, NULL), RA_EINVAL, "duplicate tensor 'x'");
    ts.n--;
    ra_tensor_free(u);
    /* Invalid UTF-8 in a name. */
    free(t->name);
    t->name = strdup("bad\xff");
    tu_expect_error(ra_safetensors_write(p, &ts, NULL), RA_EINVAL, "UTF-8");
    free(t->name);
    t->name = strdup("x");
    ra_kv kv;
    ra_kv_init(&kv);
    ck_assert_int_eq(ra_kv_set(&kv, "k", "\xc3"), RA_OK);
    tu_expect_error(ra_safetensors_write(p, &ts, &kv), RA_EINVAL, "metadata key 'k'", "UTF-8");
    ra_kv_clear(&kv);
    /* Every refusal left the old file alone and no temporary behind. */
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert(len == 3 && memcmp(buf, "old", 3) == 0);
    free(buf);
    ck_assert_int_eq(io_tmp_count(), 1);
    ra_tensors_clear(&ts);
}
END_TEST

/* --- regressions ------------------------------------------------------------------- */

/* A safetensors image with n metadata keys (tensors == 0) or n one-element
   tensors (tensors == 1), built here as text; *hlen gets the header length. */
static uint8_t *many_entries(size_t *len, size_t *hlen, int n, int tensors)
{
    size_t cap = 64 + (size_t)n * 96; /* an entry takes < 80 bytes */
    uint8_t *b = malloc(8 + cap + (size_t)n * 4 + 4);
    ck_assert_ptr_nonnull(b);
    char *h = (char *)b + 8;
    size_t k = (size_t)snprintf(h, cap, "{\"__metadata__\":{\"op\":\"x\"");
    for (int i = 0; i < n && !tensors; i++)
        k += (size_t)snprintf(h + k, cap - k, ",\"key%07d\":\"v%d\"", i, i);
    k += (size_t)snprintf(h + k, cap - k, "}");
    int nt = tensors ? n : 1;
    for (int i = 0; i < nt; i++)
        k += (size_t)snprintf(
            h + k, cap - k, ",\"t%07d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
            i, 4 * i, 4 * i + 4);
    k += (size_t)snprintf(h + k, cap - k, "}");
    ck_assert_uint_lt(k, cap);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)k >> (8 * i));
    memset(b + 8 + k, 0, (size_t)nt * 4);
    *hlen = k;
    *len = 8 + k + (size_t)nt * 4;
    return b;
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds to parse the image (checking what it got). */
static double parse_once(const uint8_t *b, size_t len, int n, int tensors)
{
    ra_tensors ts;
    ra_kv kv;
    ra_tensors_init(&ts);
    ra_kv_init(&kv);
    double t = cpu_now();
    ck_assert_int_eq(ra_safetensors_parse(&ts, &kv, b, len, "many"), RA_OK);
    t = cpu_now() - t;
    ck_assert_uint_eq(ts.n, tensors ? (size_t)n : 1);
    ck_assert_uint_eq(kv.n, tensors ? 1 : (size_t)n + 1);
    ra_tensors_clear(&ts);
    ra_kv_clear(&kv);
    return t;
}

/* Best of three: CPU seconds for the reader to parse an image of n keys or
   tensors, and (*json) for jansson alone to parse its header, the floor
   any reader of the format pays, with the same memory footprint. */
static double parse_seconds(int n, int tensors, double *json)
{
    size_t len, hlen;
    uint8_t *b = many_entries(&len, &hlen, n, tensors);
    double best = 1e9;
    *json = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double t = cpu_now();
        json_error_t jerr;
        json_t *root = json_loadb((const char *)b + 8, hlen, JSON_REJECT_DUPLICATES, &jerr);
        t = cpu_now() - t;
        ck_assert_ptr_nonnull(root);
        json_decref(root);
        *json = t < *json ? t : *json;
        t = parse_once(b, len, n, tensors);
        best = t < best ? t : best;
    }
    free(b);
    return best;
}

/* regress_header_linear: reading a header took time quadratic in its
   metadata keys and tensors (a lookup per key: 100,000 keys took 29 s, a
   hundred times what parsing the JSON costs).  Now the reader costs a
   small multiple of jansson's own parse of the same header, at 20,000 and
   at 100,000 entries (quadratic work grows 25-fold between them, the JSON
   parse about 5-fold): measuring against jansson on the same text cancels
   the machine's speed and the cache effects that make plain timings grow
   faster than n.  Plus an absolute bound, generous for slow and sanitized
   builds: 100,000 entries in 10 s. */
START_TEST(regress_header_linear)
{
    for (int tensors = 0; tensors <= 1; tensors++) {
        const char *what = tensors ? "tensors" : "metadata keys";
        for (int n = 20000; n <= 100000; n *= 5) {
            double json, t = parse_seconds(n, tensors, &json);
            fprintf(stderr, "regress_header_linear: %d %s: %.3f s, jansson %.3f s\n", n, what, t,
                    json);
            ck_assert_msg(t < 8 * json + 0.02, "%d %s: %.3f s, jansson alone %.3f s", n, what, t,
                          json);
            if (n == 100000)
                ck_assert_msg(t < 10.0, "%d %s: %.3f s", n, what, t);
        }
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("safetensors");
    io_tcase(s, "data", data_literal_image, data_serialize_literal, data_reference_implementation);
    io_tcase(s, "special", special_empty, special_zero_size);
    io_tcase(s, "random", random_roundtrip, random_mutations);
    io_tcase(s, "bad", bad_short_file, bad_header_beyond_file, bad_header_absurd, bad_json_syntax,
             bad_json_not_object, bad_json_duplicate, bad_missing_dtype, bad_missing_shape,
             bad_missing_offsets, bad_entry_types, bad_dtype, bad_negative_dim, bad_shape_overflow,
             bad_begin_after_end, bad_span, bad_out_of_range, bad_overlap, bad_hole, bad_trailing,
             bad_metadata, bad_leaves_caller_state, bad_write_inputs);
    tcase_set_timeout(io_tcase(s, "regress", regress_header_linear), 300);
    return s;
}

int main(void) { return tu_run(suite()); }
