/* Helpers shared by the file-format suites (t-file, t-safetensors, t-npy, t-case). */
#ifndef RA_TESTS_IO_TESTUTIL_H
#define RA_TESTS_IO_TESTUTIL_H

/*
 * On top of testutil.h (error record, scratch directory, bit-identical
 * tensors):
 * - the fixture every file-format test runs under: errors recorded, a fresh
 *   scratch directory, removed afterwards;
 * - the path of a fixture under tests/data/io;
 * - raw bytes written to a scratch file without the library;
 * - a small deterministic generator (xorshift64*) for the random round
 *   trips and corruptions, and tensors filled with random bit patterns.
 */

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/io.h"
#include "core/status.h"
#include "core/tensor.h"
#include "testutil.h"

static inline void io_setup(void)
{
    tu_capture();
    tu_scratch_setup();
}

/* Adds the test case `name` with the io fixture and the tests listed. */
#define io_tcase(s, name, ...) tu_tcase((s), (name), io_setup, tu_scratch_teardown, __VA_ARGS__)

static inline const char *io_fixture(const char *name)
{
    return tu_srcpath("tests/data/io/%s", name);
}

/* Number of entries in the scratch directory (temporaries included). */
static inline int io_tmp_count(void) { return tu_count_entries(tu_scratch_dir); }

/* Writes raw bytes to a scratch file (no library code involved). */
static inline const char *io_put(const char *name, const void *buf, size_t len)
{
    const char *p = tu_scratch("%s", name);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return p;
}

static uint64_t io_rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t io_rand(void)
{
    io_rng_state ^= io_rng_state >> 12;
    io_rng_state ^= io_rng_state << 25;
    io_rng_state ^= io_rng_state >> 27;
    return io_rng_state * 0x2545F4914F6CDD1Dull;
}

/* A tensor of the given dtype/shape filled with random bit patterns (NaN
   payloads and subnormals included: the formats must carry bits, not
   values). */
static inline ra_tensor *io_random_tensor(const char *name, ra_dtype dt, int ndim,
                                          const int64_t *shape)
{
    ra_tensor *t;
    ck_assert_int_eq(ra_tensor_new(&t, name, dt, ndim, shape), RA_OK);
    uint8_t *p = t->data;
    for (size_t i = 0; i < t->nbytes; i++)
        p[i] = (uint8_t)(io_rand() >> 56);
    return t;
}

/* One corruption of img (len bytes) into m, as the mutation tests make
   them: 1-3 bytes replaced, at a position below `head` three times in four
   (the length field and the header), by a character of pool or a random
   byte; one time in eight the result is also cut short.  Returns its
   length. */
static inline size_t io_mutate(uint8_t *m, const uint8_t *img, size_t len, size_t head,
                               const char *pool)
{
    memcpy(m, img, len);
    size_t mlen = len, npool = strlen(pool);
    int edits = 1 + (int)(io_rand() % 3);
    for (int k = 0; k < edits; k++) {
        size_t at = io_rand() % 4 ? io_rand() % head : io_rand() % mlen;
        m[at] = io_rand() % 2 ? (uint8_t)pool[io_rand() % npool] : (uint8_t)(io_rand() >> 56);
    }
    if (io_rand() % 8 == 0)
        mlen = io_rand() % mlen;
    return mlen;
}

/* After a parse of a corrupted image (record cleared just before it): a
   refusal is one report of a format or size error whose text starts with
   the image's name "mut"; an acceptance reports nothing.  Returns 1 for a
   refusal. */
static inline int io_refused_cleanly(ra_status st)
{
    int refused = st != RA_OK;
    if (refused) {
        ck_assert_msg(st == RA_EFORMAT || st == RA_EOVERFLOW, "status %d: %s", (int)st, tu_msg);
        ck_assert_int_eq(tu_nerr, 1);
        ck_assert(strncmp(tu_msg, "mut: ", 5) == 0);
    } else {
        ck_assert_int_eq(tu_nerr, 0);
    }
    return refused;
}

#endif
