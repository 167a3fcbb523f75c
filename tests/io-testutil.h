/* Helpers shared by the file-format suites (t-safetensors, t-npy, t-case). */
#ifndef RA_TESTS_IO_TESTUTIL_H
#define RA_TESTS_IO_TESTUTIL_H

/*
 * - An error handler that records every report (count, last code, last
 *   text), so a test can assert that a failure is reported exactly once,
 *   with the right code, and that the message names the file, tensor and
 *   field.
 * - A scratch directory per test process (created by io_tmp_setup, emptied
 *   and removed by io_tmp_teardown) and a way to list what is left in it
 *   (to prove atomic writes leave no temporary behind).
 * - The path of a fixture under tests/data/io ($top_srcdir from make check,
 *   else the configure-time source directory).
 * - A small deterministic generator (xorshift64*) for the random round trips.
 */

#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io.h"
#include "core/status.h"
#include "core/tensor.h"

static int io_nerr;
static ra_status io_code;
static char io_msg[1024];

static inline void io_handler(const char *reason, const char *file, int line, ra_status code)
{
    (void)file, (void)line;
    io_nerr++;
    io_code = code;
    snprintf(io_msg, sizeof io_msg, "%s", reason);
}

static inline void io_reset(void)
{
    io_nerr = 0;
    io_code = RA_OK;
    io_msg[0] = '\0';
}

/* Asserts st == code, one report with that code, and that the message holds
   every NULL-terminated substring. */
static inline void io_expect_error(ra_status st, ra_status code, ...)
{
    ck_assert_msg(st == code, "status %d (%s), expected %d; message: %s", (int)st, ra_strstatus(st),
                  (int)code, io_msg);
    ck_assert_msg(io_nerr == 1, "%d reports, expected exactly one (last: %s)", io_nerr, io_msg);
    ck_assert_int_eq(io_code, code);
    va_list ap;
    va_start(ap, code);
    for (const char *s; (s = va_arg(ap, const char *));)
        ck_assert_msg(strstr(io_msg, s), "message '%s' lacks '%s'", io_msg, s);
    va_end(ap);
    io_reset();
}

static char io_dir[256];

static inline void io_tmp_setup(void)
{
    ra_set_error_handler(io_handler);
    io_reset();
    const char *base = getenv("TMPDIR");
    snprintf(io_dir, sizeof io_dir, "%s/ra-io-XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(io_dir));
}

static inline void io_tmp_teardown(void)
{
    DIR *d = opendir(io_dir);
    if (d) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", io_dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    rmdir(io_dir);
}

/* A path in the scratch directory (static buffer, one of four in turn). */
static inline const char *io_tmp(const char *name)
{
    static char bufs[4][600];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", io_dir, name);
    return b;
}

/* Number of entries in the scratch directory. */
static inline int io_tmp_count(void)
{
    int n = 0;
    DIR *d = opendir(io_dir);
    ck_assert_ptr_nonnull(d);
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static inline const char *io_fixture(const char *name)
{
    static char p[4][1024];
    static int k;
    char *b = p[k++ % 4];
    const char *top = getenv("top_srcdir");
    snprintf(b, sizeof p[0], "%s/tests/data/io/%s", top && *top ? top : RA_TOP_SRCDIR, name);
    return b;
}

/* Writes raw bytes to a scratch file (no library code involved). */
static inline const char *io_put(const char *name, const void *buf, size_t len)
{
    const char *p = io_tmp(name);
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

/* Bit-identical tensors: name, dtype, shape, bytes. */
static inline void io_assert_same_tensor(const ra_tensor *a, const ra_tensor *b)
{
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->dtype, b->dtype);
    ck_assert_int_eq(a->ndim, b->ndim);
    for (int i = 0; i < a->ndim; i++)
        ck_assert_int_eq(a->shape[i], b->shape[i]);
    ck_assert_int_eq(a->numel, b->numel);
    ck_assert_uint_eq(a->nbytes, b->nbytes);
    ck_assert(a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
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

#endif
