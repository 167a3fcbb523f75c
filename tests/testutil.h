/* Scaffolding shared by every Check suite under tests/ (tests/testutil.c). */
#ifndef RA_TESTS_TESTUTIL_H
#define RA_TESTS_TESTUTIL_H

/*
 * What every suite needs and no module owns:
 *  - running a suite (tu_run) and declaring its test cases as lists
 *    (tu_tcase);
 *  - an error handler that records every report (count, last code, last
 *    text) and assertions on the record and on message texts, so a test can
 *    prove a failure is reported once, with the right code, naming the
 *    file, tensor and field;
 *  - fixed seeds that RA_CHECK_RANDOMIZE=1 replaces by a printed one;
 *  - paths of files in the source and build trees, and a scratch directory
 *    per test;
 *  - tensors and cases made by hand: add with values, find-or-fail, the
 *    gdn case skeleton of docs/gdn.md (zeros of the right shapes),
 *    bit-for-bit comparison, the CPU variant names;
 *  - float bit casts and a qsort comparison of doubles.
 * The helpers assert with Check (ck_assert*), so they belong in test bodies
 * and fixtures, never in library code.  Module-specific helpers stay in
 * io-testutil.h, cpu-testutil.h and ref-testutil.h.
 */

#include <check.h>
#include <stdint.h>
#include <string.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/op.h"
#include "core/status.h"
#include "core/tensor.h"

/* --- suites --------------------------------------------------------------------------------- */

/* Runs every test of s (CK_NORMAL output), frees it; EXIT_SUCCESS when none
   failed, else EXIT_FAILURE: the whole of a suite's main(). */
int tu_run(Suite *s);

/* Adds the test case `name` to s with the checked fixture (setup,
   teardown; either or both may be NULL) and the tests listed, in order.
   Returns it, for tcase_set_timeout. */
TCase *tu_tcase_(Suite *s, const char *name, void (*setup)(void), void (*teardown)(void),
                 const TTest *const *tests);
#define tu_tcase(s, name, setup, teardown, ...)                                                    \
    tu_tcase_((s), (name), (setup), (teardown), (const TTest *const[]){__VA_ARGS__, NULL})

/* --- error reports -------------------------------------------------------------------------- */

#define TU_MSG_MAX 2048

/* The record kept by tu_handler: reports since the last reset, the last
   report's code and text. */
extern int tu_nerr;
extern ra_status tu_code;
extern char tu_msg[TU_MSG_MAX];

/* An ra_error_handler_t that records and prints nothing. */
void tu_handler(const char *reason, const char *file, int line, ra_status code);
/* Installs tu_handler and clears the record (usable as a fixture setup). */
void tu_capture(void);
/* Clears the record. */
void tu_reset(void);

/* Asserts st == code, exactly one report since the last reset, with that
   code, whose text holds every string given; then clears the record. */
void tu_expect_error_(ra_status st, ra_status code, ...);
#define tu_expect_error(st, code, ...)                                                             \
    tu_expect_error_((st), (code), __VA_ARGS__, (const char *)NULL)

/* Asserts that msg holds every string given; the list ends early at a NULL
   argument, so an optional last string may be passed as NULL. */
void tu_has_(const char *msg, ...);
#define tu_has(msg, ...) tu_has_((msg), __VA_ARGS__, (const char *)NULL)

/* --- GPU tests --------------------------------------------------------------------------- */

/* CUDA does not survive fork: probes the devices in a child process (which
   prints their description), so that the test program never initialises
   CUDA itself and every test Check forks starts with a fresh runtime.
   Returns 0 with a device, 77 without (print a skip line and return it
   from main), 99 when the probe itself failed (Automake's hard error). */
int tu_gpu_probe(const char *prog);

/* --- seeds ---------------------------------------------------------------------------------- */

/* `fixed`, or with RA_CHECK_RANDOMIZE=1 in the environment a seed from the
   clock, printed on stderr ("<program>: RA_CHECK_RANDOMIZE seed N") so a
   failure can be replayed. */
uint64_t tu_seed(uint64_t fixed);

/* --- paths ---------------------------------------------------------------------------------- */

/* Paths are built with printf formats into a ring of eight static buffers:
   each result stays valid for the next seven calls of these functions. */

/* $top_srcdir/<fmt...> (make check exports top_srcdir; outside it, the
   configure-time source directory). */
const char *tu_srcpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* $top_builddir/<fmt...>, or NULL when top_builddir is not exported (the
   caller skips what needs built files rather than guessing). */
const char *tu_buildpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The scratch directory: tu_scratch_setup makes a fresh one under $TMPDIR
   (else /tmp), tu_scratch_teardown removes it with everything below it;
   both fit tcase_add_checked_fixture. */
extern char tu_scratch_dir[];
void tu_scratch_setup(void);
void tu_scratch_teardown(void);
/* tu_scratch_dir/<fmt...>. */
const char *tu_scratch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Entries of a directory other than "." and "..", hidden ones included;
   -1 when it cannot be opened. */
int tu_count_entries(const char *dir);

/* --- tensors and cases ---------------------------------------------------------------------- */

/* A gdn case spec: the shape as given, regime default, dtype f32, the
   seed, RA_GDN_FLAG_* flags, gradients when bwd (not checked). */
ra_case_spec tu_gdn_spec(const char *shape, uint64_t seed, unsigned flags, int bwd);

/* A checked spec of a fwd+bwd case (op, shape, regime, dtype, seed), for
   tests that adjust it (flags, parameters) before generating. */
ra_case_spec tu_spec(const char *op, const char *shape, const char *regime, const char *dtype,
                     uint64_t seed);
/* A generated case of any operation with its cotangents (the spec checked
   first, as the command line would). */
void tu_generate(ra_case *c, const char *op, const char *shape, const char *regime,
                 const char *dtype, uint64_t seed);

/* A new tensor in ts holding vals rounded to dt (vals NULL: zeros). */
ra_tensor *tu_add(ra_tensors *ts, const char *name, ra_dtype dt, int ndim, const int64_t *shape,
                  const double *vals);
/* The tensor `name` of ts / of c; the test fails when it is missing. */
ra_tensor *tu_tensor(const ra_tensors *ts, const char *name);
ra_tensor *tu_t(const ra_case *c, const char *name);
/* Element i of tensor `name` of ts, as a double. */
double tu_at(const ra_tensors *ts, const char *name, int64_t i);

/* An empty case of operation op. */
void tu_case_init(ra_case *c, const char *op);

/* Which optional gdn tensors tu_gdn_case adds. */
enum { TU_H0 = 1, TU_DO = 2, TU_DHT = 4 };

/* A gdn case of shape s, every tensor of dtype dt and zero: q, k
   [B,T,Hk,K], v [B,T,Hv,V], g, beta [B,T,Hv], then as `with` asks h0
   [B,Hv,K,V], do [B,T,Hv,V], dht [B,Hv,K,V], in that order. */
void tu_gdn_case(ra_case *c, const ra_gdn_shape *s, ra_dtype dt, unsigned with);

/* The generated gdn case of shape s, dtype dt, regime (NULL: default),
   seed and flags (h0, l2norm), as `recaudit gen` makes it; asserts it
   was made. */
void tu_gdn_generate(ra_case *c, const ra_gdn_shape *s, ra_dtype dt, const char *regime,
                     uint64_t seed, int h0, int l2norm);

/* Bit-identical tensors: name, dtype, shape and bytes. */
void tu_assert_same_tensor(const ra_tensor *a, const ra_tensor *b);
/* The same tensors in the same order, each bit-identical. */
void tu_assert_same_tensors(const ra_tensors *a, const ra_tensors *b);

/* The built-in CPU variants, by the documented naming scheme, f64 and f32 first,
   then the chunked ones; NULL ended.  Written out from the statement, not
   read from the registry, so suites can hold the registry to it. */
extern const char *const tu_cpu_variants[];
/* The scan family's CPU variants (docs/scan.md), NULL ended. */
extern const char *const tu_cpu_scan_variants[];

/* --- numbers -------------------------------------------------------------------------------- */

static inline uint32_t tu_fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float tu_bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* qsort comparison of doubles, ascending (no NaN). */
int tu_cmp_double(const void *a, const void *b);

#endif
