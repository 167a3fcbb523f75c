/* Check suite for NumPy .npy I/O (src/core/npy.c). */
#include <config.h>

#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "core/status.h"
#include "core/tensor.h"

#include "io-testutil.h"

/*
 * Independent sources of expected values:
 * - npy images spelled out byte by byte (magic, version, little-endian
 *   header length, the dict text, IEEE bit patterns worked out by hand);
 * - the header numpy.save writes, derived by hand from NumPy's
 *   format.py rules (keys sorted, "'shape': (2, 3), }", 21 - len(str(shape[0]))
 *   spare spaces, then spaces and '\n' up to a multiple of 64; counts
 *   worked in the comments);
 * - fixture files under tests/data/io written by NumPy 2.4 with
 *
 *     import numpy as np
 *     r = lambda n, dt: np.arange(n, dtype=dt) * 0.25 - 3
 *     np.save("f4-1d.npy", r(6, np.float32))
 *     np.save("f8-2d.npy", r(12, np.float64).reshape(3, 4))
 *     np.save("f4-3d.npy", r(24, np.float32).reshape(2, 3, 4))
 *     np.save("f8-4d.npy", r(120, np.float64).reshape(2, 3, 4, 5))
 *     np.save("f8-0d.npy", np.array(2.5))
 *     np.save("f4-empty.npy", np.zeros((0, 3), dtype="<f4"))
 *     np.save("f2-special.npy", np.array([0.0, -0.0, 1.0, 65504.0, 2.0**-24, -2.0],
 *                                        dtype="<f2"))
 *     np.save("f8-fortran.npy", np.asfortranarray(np.arange(6.0).reshape(2, 3)))
 *     np.save("i4.npy", np.arange(5, dtype="<i4"))
 *     np.save("f4-bigendian.npy", np.arange(3, dtype=">f4"))
 *     for v in (2, 3):
 *         with open(f"f4-v{v}.npy", "wb") as f:
 *             np.lib.format.write_array(f, r(4, np.float32).reshape(2, 2), version=(v, 0))
 *
 *   whose values are asserted from those formulas, and whose bytes our
 *   writer must reproduce exactly (numpy.save is the reference writer);
 * - round trips compare bits with memcmp.
 */

/* "\x93NUMPY", version, header length (2 or 4 bytes LE), header, data;
   built without the library.  Caller frees. */
static uint8_t *npy_img(size_t *len, int major, const char *hdr, const void *data, size_t dlen)
{
    size_t h = strlen(hdr), pre = major == 1 ? 10 : 12;
    *len = pre + h + dlen;
    uint8_t *b = malloc(*len);
    ck_assert_ptr_nonnull(b);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        b[8 + i] = (uint8_t)(h >> (8 * i));
    memcpy(b + pre, hdr, h);
    if (dlen)
        memcpy(b + pre + h, data, dlen);
    return b;
}

static const uint8_t zeros[64];

/* Parses a version-1.0 image with header hdr and dlen zero bytes. */
static ra_status parse_hdr(ra_tensor **t, const char *hdr, size_t dlen)
{
    size_t len;
    uint8_t *img = npy_img(&len, 1, hdr, zeros, dlen);
    ra_status st = ra_npy_parse(t, img, len, "t", "bad.npy");
    free(img);
    return st;
}

/* A header (followed by dlen zero bytes) the parser must refuse with
   `code`, in a message naming the file and holding up to three more
   strings. */
typedef struct bad_hdr {
    ra_status code;
    const char *hdr;
    size_t dlen;
    const char *want1, *want2, *want3; /* NULL when fewer */
} bad_hdr;

static void refuse_each(const bad_hdr *bad, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ra_tensor *t = (ra_tensor *)1;
        ra_status st = parse_hdr(&t, bad[i].hdr, bad[i].dlen);
        ck_assert_ptr_null(t);
        tu_expect_error(st, bad[i].code, "bad.npy", bad[i].want1, bad[i].want2, bad[i].want3);
    }
}

/* Expects hdr to parse to dtype dt, the ndim dims given, and dlen bytes. */
static void good(const char *hdr, size_t dlen, ra_dtype dt, int ndim, ...)
{
    ra_tensor *t;
    ra_status st = parse_hdr(&t, hdr, dlen);
    ck_assert_msg(st == RA_OK, "header %s refused: %s", hdr, tu_msg);
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->ndim, ndim);
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(t->shape[i], va_arg(ap, int));
    va_end(ap);
    ck_assert_uint_eq(t->nbytes, dlen);
    ck_assert_str_eq(t->name, "t");
    ra_tensor_free(t);
}

/* --- data: literal images ---------------------------------------------------------------- */

START_TEST(data_literal_v1)
{
    /* Header: the 59-character dict + 10 spaces + '\n' = 70 = 0x46 bytes,
       so the data starts at 80, a multiple of 16 (pre-2014 NumPy). */
    static const char img[] =
        "\x93NUMPY\x01\x00\x46\x00"
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n"
        "\x00\x00\x00\x3F"  /* 0.5   = 0x3F000000 */
        "\x00\x00\x80\xBF"  /* -1    = 0xBF800000 */
        "\x00\x00\x00\x40"  /* 2     = 0x40000000 */
        "\x00\x00\x00\x3E"  /* 0.125 = 0x3E000000 */
        "\x01\x00\x00\x00"  /* 2^-149, the least subnormal */
        "\x00\x00\x00\x80"; /* -0    = 0x80000000 */
    ck_assert_uint_eq(sizeof img - 1, 80 + 24);
    ra_tensor *t;
    ck_assert_int_eq(ra_npy_parse(&t, (const uint8_t *)img, sizeof img - 1, "x", "lit.npy"), RA_OK);
    ck_assert_str_eq(t->name, "x");
    ck_assert_int_eq(t->dtype, RA_F32);
    ck_assert(t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6);
    const double want[6] = {0.5, -1, 2, 0.125, 0x1p-149, -0.0};
    for (int i = 0; i < 6; i++)
        ck_assert(ra_tensor_get(t, i) == want[i]);
    ck_assert(signbit(ra_tensor_get(t, 5)));
    ra_tensor_free(t);
}
END_TEST

START_TEST(data_literal_v2)
{
    /* Version 2.0: 4-byte length.  Keys out of order, mixed quotes, no
       space, trailing comma: 52 characters + '\n' = 53 = 0x35. */
    static const char img[] = "\x93NUMPY\x02\x00\x35\x00\x00\x00"
                              "{'shape': (), \"fortran_order\": False,'descr':'<f8',}\n"
                              "\x18\x2D\x44\x54\xFB\x21\x09\x40"; /* pi = 0x400921FB54442D18 */
    ck_assert_uint_eq(sizeof img - 1, 12 + 53 + 8);
    ra_tensor *t;
    ck_assert_int_eq(ra_npy_parse(&t, (const uint8_t *)img, sizeof img - 1, "p", "lit2.npy"),
                     RA_OK);
    ck_assert_int_eq(t->dtype, RA_F64);
    ck_assert_int_eq(t->ndim, 0);
    ck_assert_int_eq(t->numel, 1);
    ck_assert(ra_tensor_get(t, 0) == M_PI);
    ra_tensor_free(t);
}
END_TEST

START_TEST(data_header_spellings)
{
    good("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24, RA_F32, 2, 2, 3);
    good("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}", 24, RA_F32, 2, 2, 3);
    good("{'shape':(2,3),'descr':'=f4','fortran_order':False}\n", 24, RA_F32, 2, 2, 3);
    good("  {\t'fortran_order' : False ,\n 'shape' : ( 2 , 3 , ) , 'descr' : '|f4' }  \n", 24,
         RA_F32, 2, 2, 3);
    good("{'descr': 'f4', 'fortran_order': False, 'shape': (2L, 3L), }", 24, RA_F32, 2, 2, 3);
    good("{'descr': '<f2', 'fortran_order': False, 'shape': (), }", 2, RA_F16, 0);
    good("{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 40, RA_F64, 1, 5);
    good("{'descr': '<f8', 'fortran_order': False, 'shape': ((5),), }", 40, RA_F64, 1, 5);
    good("{'descr': '<f2', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 2, 3), }", 12,
         RA_F16, 8, 1, 1, 1, 1, 1, 1, 2, 3);
    good("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 7), }", 0, RA_F32, 2, 0, 7);
    ck_assert_int_eq(tu_nerr, 0);
}
END_TEST

/* --- data: NumPy-written fixtures -------------------------------------------------------- */

/* Reads a fixture and checks dtype, shape, and element i == i * 0.25 - 3. */
static ra_tensor *fixture_arange(const char *file, ra_dtype dt, int ndim, const int64_t *shape)
{
    ra_tensor *t;
    ck_assert_int_eq(ra_npy_read(&t, io_fixture(file), "a"), RA_OK);
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        ck_assert_int_eq(t->shape[i], shape[i]);
    for (int64_t i = 0; i < t->numel; i++)
        ck_assert(ra_tensor_get(t, i) == (double)i * 0.25 - 3);
    return t;
}

/* Our writer must reproduce numpy.save's bytes for the same array. */
static void same_as_numpy(const ra_tensor *t, const char *file)
{
    uint8_t *ours, *theirs;
    size_t n1, n2;
    ck_assert_int_eq(ra_npy_serialize(&ours, &n1, t), RA_OK);
    ck_assert_int_eq(ra_file_read_all(&theirs, &n2, io_fixture(file)), RA_OK);
    ck_assert_uint_eq(n1, n2);
    ck_assert_msg(memcmp(ours, theirs, n1) == 0, "%s: bytes differ from numpy.save", file);
    free(ours);
    free(theirs);
}

START_TEST(data_numpy_fixtures)
{
    static const struct {
        const char *file;
        ra_dtype dt;
        int ndim;
        int64_t shape[4];
        int numel;
    } fx[] = {
        {"f4-1d.npy", RA_F32, 1, {6}, 6},        {"f8-2d.npy", RA_F64, 2, {3, 4}, 12},
        {"f4-3d.npy", RA_F32, 3, {2, 3, 4}, 24}, {"f8-4d.npy", RA_F64, 4, {2, 3, 4, 5}, 120},
        {"f4-empty.npy", RA_F32, 2, {0, 3}, 0},
    };
    for (size_t k = 0; k < sizeof fx / sizeof fx[0]; k++) {
        ra_tensor *t = fixture_arange(fx[k].file, fx[k].dt, fx[k].ndim, fx[k].shape);
        ck_assert_int_eq(t->numel, fx[k].numel);
        same_as_numpy(t, fx[k].file);
        ra_tensor_free(t);
    }
    /* versions 2.0 and 3.0 (written by NumPy on request) */
    const int64_t s22[2] = {2, 2};
    ra_tensor *t = fixture_arange("f4-v2.npy", RA_F32, 2, s22);
    ra_tensor_free(t);
    t = fixture_arange("f4-v3.npy", RA_F32, 2, s22);
    ra_tensor_free(t);
    /* 0-d */
    ck_assert_int_eq(ra_npy_read(&t, io_fixture("f8-0d.npy"), "s"), RA_OK);
    ck_assert(t->dtype == RA_F64 && t->ndim == 0 && t->numel == 1);
    ck_assert(ra_tensor_get(t, 0) == 2.5);
    same_as_numpy(t, "f8-0d.npy");
    ra_tensor_free(t);
    /* f16 bit patterns, by hand: 0, -0, 1, 65504 (max), 2^-24 (least
       subnormal), -2 */
    static const uint16_t bits[6] = {0x0000, 0x8000, 0x3C00, 0x7BFF, 0x0001, 0xC000};
    ck_assert_int_eq(ra_npy_read(&t, io_fixture("f2-special.npy"), "h"), RA_OK);
    ck_assert(t->dtype == RA_F16 && t->ndim == 1 && t->shape[0] == 6);
    ck_assert(memcmp(t->data, bits, sizeof bits) == 0);
    same_as_numpy(t, "f2-special.npy");
    ra_tensor_free(t);
    ck_assert_int_eq(tu_nerr, 0);
}
END_TEST

START_TEST(bad_numpy_fixtures)
{
    ra_tensor *t;
    const char *p = io_fixture("f8-fortran.npy");
    tu_expect_error(ra_npy_read(&t, p, "t"), RA_EFORMAT, p, "fortran_order True not supported");
    ck_assert_ptr_null(t);
    p = io_fixture("i4.npy");
    tu_expect_error(ra_npy_read(&t, p, "t"), RA_EFORMAT, p, "'descr'", "'<i4' not supported");
    p = io_fixture("f4-bigendian.npy");
    tu_expect_error(ra_npy_read(&t, p, "t"), RA_EFORMAT, p, "'>f4'", "big-endian");
}
END_TEST

/* --- writing --------------------------------------------------------------------------- */

/* Expected numpy.save image head: preamble, dict, `growth` + `pad` spaces,
   '\n'.  Returns its length. */
static size_t expected_head(char *buf, const char *dict, int growth, int pad)
{
    size_t h = strlen(dict) + (size_t)growth + (size_t)pad + 1;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(h & 0xFF);
    buf[9] = (char)(h >> 8);
    size_t n = 10;
    memcpy(buf + n, dict, strlen(dict));
    n += strlen(dict);
    memset(buf + n, ' ', (size_t)(growth + pad));
    n += (size_t)(growth + pad);
    buf[n++] = '\n';
    return n;
}

static void expect_serialized(const ra_tensor *t, const char *dict, int growth, int pad)
{
    char want[320];
    size_t n = expected_head(want, dict, growth, pad);
    ck_assert_uint_eq(n % 64, 0);
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(ra_npy_serialize(&buf, &len, t), RA_OK);
    ck_assert_uint_eq(len, n + t->nbytes);
    ck_assert(memcmp(buf, want, n) == 0);
    ck_assert(memcmp(buf + n, t->data, t->nbytes) == 0);
    free(buf);
}

START_TEST(data_serialize_literal)
{
    ra_tensor *t;
    /* [2, 3] f4: 59-char dict + 20 spare ("2" is 1 of 21 digits) + 38 pad
       + '\n' = 118 header bytes; 10 + 118 = 128. */
    int64_t s23[2] = {2, 3};
    ck_assert_int_eq(ra_tensor_new(&t, "a", RA_F32, 2, s23), RA_OK);
    expect_serialized(t, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, 38);
    ra_tensor_free(t);
    /* 0-d f8: 55-char dict, no spare (no axis), 62 pad: 10 + 55 + 62 + 1 = 128. */
    ck_assert_int_eq(ra_tensor_new(&t, "s", RA_F64, 0, NULL), RA_OK);
    ra_tensor_set(t, 0, -0.75);
    expect_serialized(t, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 0, 62);
    ra_tensor_free(t);
    /* (5,) f2: 57 + 20 + 40 + 1 = 118 -> 128. */
    int64_t s5 = 5;
    ck_assert_int_eq(ra_tensor_new(&t, "h", RA_F16, 1, &s5), RA_OK);
    expect_serialized(t, "{'descr': '<f2', 'fortran_order': False, 'shape': (5,), }", 20, 40);
    ra_tensor_free(t);
    /* (1000, 1000) f8: 65-char dict + 17 spare ("1000": 4 digits) = 82;
       10 + 82 + 1 = 93, so 35 pad -> 128. */
    int64_t sk[2] = {1000, 1000};
    ck_assert_int_eq(ra_tensor_new(&t, "k", RA_F64, 2, sk), RA_OK);
    expect_serialized(t, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000, 1000), }", 17,
                      35);
    ra_tensor_free(t);
    ck_assert_int_eq(tu_nerr, 0);
}
END_TEST

START_TEST(special_pad_full_block)
{
    /* When 10 + dict + spare + 1 is already a multiple of 64, NumPy still
       pads a full 64 spaces (padlen = 64 - 0).  Shape (0, 10^17, 10^18)
       (no elements): the dict is "{'descr': '<f4', 'fortran_order': False,
       'shape': (" (51) + "0, " (3) + 18 digits + ", " (2) + 19 digits +
       "), }" (4) = 97; spare 21 - 1 = 20; 10 + 97 + 20 + 1 = 128, so 64 pad
       spaces and 192 bytes in all (NumPy 2.4's write_array_header_1_0
       agrees: 192 bytes, header length 0xB6). */
    int64_t s[3] = {0, 100000000000000000LL, 1000000000000000000LL};
    ra_tensor *t;
    ck_assert_int_eq(ra_tensor_new(&t, "z", RA_F32, 3, s), RA_OK);
    expect_serialized(t,
                      "{'descr': '<f4', 'fortran_order': False, "
                      "'shape': (0, 100000000000000000, 1000000000000000000), }",
                      20, 64);
    ra_tensor_free(t);
}
END_TEST

START_TEST(special_pad_sweep)
{
    /* Every rank and first-axis width: the data starts at a multiple of 64,
       the header ends in '\n', the spaces after "}" are NumPy's spare
       (21 - digits of shape[0]) plus 1..64 pad, and the image reads back. */
    for (int nd = 0; nd <= RA_MAX_DIMS; nd++)
        for (int digits = 1; digits <= 19; digits++) {
            int64_t shape[RA_MAX_DIMS] = {0};
            int64_t d = 1;
            for (int i = 1; i < digits; i++)
                d *= 10;
            for (int i = 0; i < nd; i++)
                shape[i] = i == 0 ? d : 0; /* no elements, no data */
            if (nd == 1)
                shape[0] = 0;
            ra_tensor *t, *back;
            ck_assert_int_eq(ra_tensor_new(&t, "z", RA_F32, nd, shape), RA_OK);
            uint8_t *buf;
            size_t len;
            ck_assert_int_eq(ra_npy_serialize(&buf, &len, t), RA_OK);
            size_t h = buf[8] | (size_t)buf[9] << 8;
            ck_assert_uint_eq(len, 10 + h + t->nbytes); /* 0-d: one element */
            ck_assert_uint_eq((10 + h) % 64, 0);
            ck_assert_int_eq(buf[10 + h - 1], '\n');
            const char *close = memchr(buf + 10, '}', h);
            ck_assert_ptr_nonnull(close);
            size_t spaces = (size_t)((const char *)buf + 10 + h - 1 - (close + 1));
            size_t spare = nd ? (size_t)(21 - snprintf(NULL, 0, "%lld", (long long)shape[0])) : 0;
            ck_assert_uint_ge(spaces, spare + 1);
            ck_assert_uint_le(spaces, spare + 64);
            for (size_t i = 0; i < spaces; i++)
                ck_assert_int_eq(close[1 + i], ' ');
            ck_assert_int_eq(ra_npy_parse(&back, buf, len, "z", "sweep"), RA_OK);
            tu_assert_same_tensor(t, back);
            ra_tensor_free(back);
            ra_tensor_free(t);
            free(buf);
        }
}
END_TEST

START_TEST(bad_write_bf16)
{
    ra_tensor *t;
    int64_t s = 3;
    ck_assert_int_eq(ra_tensor_new(&t, "wb", RA_BF16, 1, &s), RA_OK);
    uint8_t *buf = (uint8_t *)1;
    size_t len;
    tu_expect_error(ra_npy_serialize(&buf, &len, t), RA_EUNSUPPORTED, "tensor 'wb'", "bf16",
                    "NumPy");
    ck_assert_ptr_null(buf);
    const char *p = tu_scratch("wb.npy");
    tu_expect_error(ra_npy_write(p, t), RA_EUNSUPPORTED, "bf16");
    ck_assert_int_eq(access(p, F_OK), -1); /* nothing created */
    ck_assert_int_eq(io_tmp_count(), 0);
    ra_tensor_free(t);
}
END_TEST

/* --- random round trips --------------------------------------------------------------- */

START_TEST(random_roundtrip)
{
    static const ra_dtype dts[3] = {RA_F64, RA_F32, RA_F16};
    for (int rep = 0; rep < 60; rep++) {
        int64_t shape[RA_MAX_DIMS];
        int nd = rep % (RA_MAX_DIMS + 1);
        for (int i = 0; i < nd; i++)
            shape[i] = 1 + (int64_t)(io_rand() % (nd > 4 ? 2 : 5));
        if (rep % 17 == 5)
            shape[0] = 0;
        ra_tensor *t = io_random_tensor("r", dts[rep % 3], nd, shape), *back;
        uint8_t *buf, *fbuf;
        size_t len, flen;
        ck_assert_int_eq(ra_npy_serialize(&buf, &len, t), RA_OK);
        ck_assert_int_eq(ra_npy_parse(&back, buf, len, "r", "rt"), RA_OK);
        tu_assert_same_tensor(t, back);
        ra_tensor_free(back);
        const char *p = tu_scratch("rt.npy");
        ck_assert_int_eq(ra_npy_write(p, t), RA_OK);
        ck_assert_int_eq(ra_file_read_all(&fbuf, &flen, p), RA_OK);
        ck_assert(flen == len && memcmp(fbuf, buf, len) == 0);
        ck_assert_int_eq(ra_npy_read(&back, p, "r"), RA_OK);
        tu_assert_same_tensor(t, back);
        ck_assert_int_eq(io_tmp_count(), 1);
        ra_tensor_free(back);
        ra_tensor_free(t);
        free(buf);
        free(fbuf);
    }
    ck_assert_int_eq(tu_nerr, 0);
}
END_TEST

/* Random corruptions of valid images (byte changes, truncation): the
   parser either accepts the result or refuses it with one report of a
   format/size error; never a crash (run under --enable-sanitizers too). */
START_TEST(random_mutations)
{
    int64_t shape[3] = {2, 3, 2};
    ra_tensor *t = io_random_tensor("m", RA_F32, 3, shape), *back;
    uint8_t *img;
    size_t len;
    ck_assert_int_eq(ra_npy_serialize(&img, &len, t), RA_OK);
    ra_tensor_free(t);
    uint8_t *m = malloc(len);
    ck_assert_ptr_nonnull(m);
    static const char pool[] = "{}()[]',:0123456789-LTrueFalsNn<>=|fi \n\\\"";
    int refused = 0;
    for (int rep = 0; rep < 3000; rep++) {
        size_t mlen = io_mutate(m, img, len, 80, pool);
        tu_reset();
        if (io_refused_cleanly(ra_npy_parse(&back, m, mlen, "m", "mut"))) {
            refused++;
            ck_assert_ptr_null(back);
        } else {
            ck_assert_uint_eq(back->nbytes + 128, mlen);
            ra_tensor_free(back);
        }
    }
    ck_assert_int_gt(refused, 1000);
    free(m);
    free(img);
}
END_TEST

/* --- refusals ---------------------------------------------------------------------------- */

START_TEST(bad_fortran)
{
    static const bad_hdr bad[] = {
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24,
         .want1 = "fortran_order True not supported"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 3), }", 24,
         .want1 = "'fortran_order' is not True or False"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3), }", 24,
         .want1 = "unsupported value"},
    };
    refuse_each(bad, sizeof bad / sizeof bad[0]);
}
END_TEST

START_TEST(bad_descr)
{
    static const bad_hdr bad[] = {
        {RA_EFORMAT, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8,
         .want1 = "'descr'", .want2 = "'<i4' not supported"},
        {RA_EFORMAT, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
         .want1 = "'>f4'", .want2 = "big-endian"},
        {RA_EFORMAT, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }", 8,
         .want1 = "'>f8'", .want2 = "big-endian"},
        {RA_EFORMAT, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", 4,
         .want1 = "'<V2' not supported"},
        {RA_EFORMAT, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8,
         .want1 = "'<c8' not supported"},
        {RA_EFORMAT, "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", 16,
         .want1 = "'<f16' not supported"},
        {RA_EFORMAT, "{'descr': '', 'fortran_order': False, 'shape': (1,), }", 4,
         .want1 = "'' not supported"},
        {RA_EFORMAT, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
         .want1 = "'descr'", .want2 = "structured"},
        {RA_EFORMAT, "{'descr': None, 'fortran_order': False, 'shape': (1,), }", 4,
         .want1 = "'descr'"},
    };
    refuse_each(bad, sizeof bad / sizeof bad[0]);
}
END_TEST

START_TEST(bad_shape)
{
    static const bad_hdr bad[] = {
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (5), }", 20,
         .want1 = "'shape' is not a tuple"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24,
         .want1 = "'shape' is not a tuple"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a'), }", 8,
         .want1 = "'shape' is not a tuple of integers"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }", 0,
         .want1 = "'shape'", .want2 = "negative dimension -1"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
         .want1 = "'shape' has 9 dimensions"},
        {RA_EOVERFLOW,
         "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0,
         .want1 = "'shape'", .want2 = "overflows"},
        {RA_EOVERFLOW,
         "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0,
         .want1 = "'shape'", .want2 = "byte size overflows"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
         0, .want1 = "integer out of range"},
    };
    refuse_each(bad, sizeof bad / sizeof bad[0]);
}
END_TEST

START_TEST(bad_keys)
{
    static const bad_hdr bad[] = {
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, }", 4, .want1 = "no 'shape'"},
        {RA_EFORMAT, "{'shape': (1,), 'fortran_order': False, }", 4, .want1 = "no 'descr'"},
        {RA_EFORMAT, "{'descr': '<f4', 'shape': (1,), }", 4, .want1 = "no 'fortran_order'"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", 4,
         .want1 = "unknown key 'extra'"},
        {RA_EFORMAT, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
         .want1 = "'descr' twice"},
    };
    refuse_each(bad, sizeof bad / sizeof bad[0]);
}
END_TEST

START_TEST(bad_syntax)
{
    static const bad_hdr bad[] = {
        {RA_EFORMAT, "'descr': '<f4'", 4, .want1 = "not a dict"},
        {RA_EFORMAT, "", 4, .want1 = "not a dict"},
        {RA_EFORMAT, "{'descr' '<f4'}", 4, .want1 = "expected ':'"},
        {RA_EFORMAT, "{'descr': '<f4'", 4, .want1 = "not a valid dict literal"},
        {RA_EFORMAT, "{'descr': '<f4 , 'fortran_order': False, 'shape': (1,)}", 4,
         .want1 = "not a valid dict literal"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4,
         .want1 = "text after the closing"},
        {RA_EFORMAT, "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", 4,
         .want1 = "expected ',' or '}'"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (1 1)}", 4,
         .want1 = "expected ',' or ')'"},
        {RA_EFORMAT, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,,)}", 4,
         .want1 = "unsupported value"},
        {RA_EFORMAT, "{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
         .want1 = "expected a quoted key"},
        {RA_EFORMAT,
         "{'descr': '<f4', 'fortran_order': False, 'shape': "
         "((((((((((((((((((1,),),),),),),),),),),),),),),),),),),)}",
         4, .want1 = "nesting too deep"},
    };
    refuse_each(bad, sizeof bad / sizeof bad[0]);
    /* a NUL inside the header is not whitespace */
    static const char nul[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\0";
    uint8_t b[10 + sizeof nul - 1 + 4];
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)(sizeof nul - 1);
    b[9] = 0;
    memcpy(b + 10, nul, sizeof nul - 1);
    memset(b + 10 + sizeof nul - 1, 0, 4);
    ra_tensor *t;
    tu_expect_error(ra_npy_parse(&t, b, sizeof b, "t", "nul.npy"), RA_EFORMAT, "nul.npy",
                    "text after the closing");
}
END_TEST

START_TEST(bad_preamble)
{
    ra_tensor *t;
    static const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
    size_t len;
    uint8_t *img = npy_img(&len, 1, dict, zeros, 4);
    /* bad magic */
    img[1] = 'n';
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "m.npy"), RA_EFORMAT, "m.npy",
                    "not a .npy file");
    img[1] = 'N';
    /* versions */
    img[6] = 4;
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "v.npy"), RA_EFORMAT, "v.npy",
                    "version 4.0 not supported");
    img[6] = 1;
    img[7] = 1;
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "v.npy"), RA_EFORMAT, "version 1.1");
    img[7] = 0;
    /* too short for the preamble */
    tu_expect_error(ra_npy_parse(&t, img, 7, "t", "s.npy"), RA_EFORMAT, "s.npy", "not a .npy file");
    tu_expect_error(ra_npy_parse(&t, img, 9, "t", "s.npy"), RA_EFORMAT, "s.npy", "truncated",
                    "header length");
    /* header length beyond the file */
    img[8] = 0xFF;
    img[9] = 0xFF;
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "h.npy"), RA_EFORMAT, "h.npy",
                    "header length 65535 exceeds");
    free(img);
    /* truncated data, trailing data */
    img = npy_img(&len, 1, dict, zeros, 3);
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "d.npy"), RA_EFORMAT, "d.npy", "truncated",
                    "needs 4 data bytes, 3 present");
    free(img);
    img = npy_img(&len, 1, dict, zeros, 6);
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "d.npy"), RA_EFORMAT, "d.npy",
                    "2 bytes after the data");
    free(img);
    /* 2.0 header length near 2^32 */
    img = npy_img(&len, 2, dict, zeros, 4);
    img[8] = img[9] = img[10] = img[11] = 0xFF;
    tu_expect_error(ra_npy_parse(&t, img, len, "t", "h2.npy"), RA_EFORMAT,
                    "header length 4294967295 exceeds");
    free(img);
}
END_TEST

START_TEST(bad_header_absurd)
{
    /* A sparse 3 MB version-2.0 file whose header length (2.5e6) fits in
       it: refused by the 1 MiB cap before allocating or parsing. */
    const char *p = tu_scratch("huge.npy");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    uint32_t n = 2500000;
    uint8_t pre[12] = {0x93,
                       'N',
                       'U',
                       'M',
                       'P',
                       'Y',
                       2,
                       0,
                       (uint8_t)n,
                       (uint8_t)(n >> 8),
                       (uint8_t)(n >> 16),
                       (uint8_t)(n >> 24)};
    ck_assert_int_eq(write(fd, pre, 12), 12);
    ck_assert_int_eq(ftruncate(fd, 3000000), 0);
    ck_assert_int_eq(close(fd), 0);
    ra_tensor *t;
    tu_expect_error(ra_npy_read(&t, p, "t"), RA_EFORMAT, p, "header length 2500000",
                    "1048576-byte limit");
    const char *missing = tu_scratch("missing.npy");
    tu_expect_error(ra_npy_read(&t, missing, "t"), RA_EIO, missing);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("npy");
    io_tcase(s, "data", data_literal_v1, data_literal_v2, data_header_spellings,
             data_numpy_fixtures, data_serialize_literal);
    io_tcase(s, "special", special_pad_full_block, special_pad_sweep);
    io_tcase(s, "random", random_roundtrip, random_mutations);
    io_tcase(s, "bad", bad_numpy_fixtures, bad_write_bf16, bad_fortran, bad_descr, bad_shape,
             bad_keys, bad_syntax, bad_preamble, bad_header_absurd);
    return s;
}

int main(void) { return tu_run(suite()); }
