/* Check suite for running variants in a child process (src/audit/isolate.c). */
#include <config.h>

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/isolate.h"
#include "testutil.h"

/* In a sanitizer build, AddressSanitizer catches SIGSEGV, SIGBUS and
   SIGFPE itself and exits 1; the children of these tests must die by the
   signal, as in a normal build.  (Read by the ASan runtime at start-up;
   ASAN_OPTIONS in the environment still takes precedence.) */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0"; }

/*
 * Variants written here misbehave on purpose; each is run through
 * ra_variant_run_guarded on a one-tensor case whose bytes are kept aside
 * first, so every test can check that the parent's inputs came back
 * unchanged, and the reason in `died` is compared with the words the
 * harness promises (README, "variant crashed: SIGSEGV", ...).  The honest
 * variant's output is q * 2, checked element by element; its backward's
 * gradient dq is do * 2, and the fused variant gives both in one call with
 * a known defect planted, which the harness must report exactly.
 */

/* out's tensor `to` = 2 x c's tensor `from`, in f64; the call timed at ms. */
static ra_status twice(ra_tensors *out, const char *to, const ra_case *c, const char *from,
                       ra_run *run, double ms)
{
    run->elapsed_ms = ms;
    const ra_tensor *x = ra_tensors_find(&c->tensors, from);
    ra_tensor *y;
    RA_TRY(ra_tensors_new(out, &y, to, RA_F64, x->ndim, x->shape));
    for (int64_t i = 0; i < x->numel; i++)
        ra_tensor_set(y, i, 2 * ra_tensor_get(x, i));
    return RA_OK;
}

static ra_status honest(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self;
    return twice(out, "o", c, "q", run, 1.5);
}

static ra_status writer(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    ra_status st = honest(self, c, out, run);
    ra_tensor_set(ra_tensors_find(&c->tensors, "q"), 3, 99.0);
    return st;
}

static ra_status exiter(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    exit(3);
}

static ra_status killer(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    raise(SIGFPE);
    return RA_EINTERNAL;
}

static ra_status sleeper(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    for (;;)
        pause();
    return RA_EINTERNAL;
}

static ra_status refuser(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    RA_ERROR("shape outside the envelope", RA_EUNSUPPORTED);
}

/* dq = 2 do, honest's backward. */
static ra_status grad(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self;
    return twice(out, "dq", c, "do", run, 2.5);
}

/* What the fused test variant's one call does wrong (its data). */
typedef enum { FUSED_SAME, FUSED_FLIP, FUSED_FAIL } fused_defect;

/* honest and grad in one call, with the defect planted. */
static ra_status both(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    const fused_defect d = *(const fused_defect *)self->data;
    if (d == FUSED_FAIL)
        RA_ERROR("planted failure", RA_EIO);
    RA_TRY(honest(self, c, out, run));
    RA_TRY(grad(self, c, out, run));
    if (d == FUSED_FLIP)
        ra_tensor_set(ra_tensors_find(out, "dq"), 3, 7.0);
    run->elapsed_ms = 9;
    return RA_OK;
}

#define ROW(fn)                                                                                    \
    {                                                                                              \
        "gdn.test." #fn, "gdn", "test row", RA_CPU, "f64", RA_FWD, NULL, fn, NULL, NULL            \
    }

static ra_case c;
static ra_sealed sealed;
static double kept[8];

static void setup(void)
{
    tu_capture();
    tu_case_init(&c, "gdn");
    const int64_t shape[1] = {8};
    for (int i = 0; i < 8; i++)
        kept[i] = 0.25 * i - 1;
    tu_add(&c.tensors, "k", RA_F32, 1, shape, kept);
    tu_add(&c.tensors, "q", RA_F64, 1, shape, kept);
    tu_add(&c.tensors, "do", RA_F64, 1, shape, kept);
    ck_assert_int_eq(ra_inputs_seal(&sealed, &c), RA_OK);
}

static void teardown(void)
{
    ra_inputs_unseal(&sealed, &c);
    ra_case_clear(&c);
}

/* Runs fn isolated (limit 1 s) into o; asserts the inputs are intact. */
static void run(ra_outcome *o, ra_variant_fn *fn, const char *name, int in_process)
{
    ra_variant v = ROW(honest);
    v.name = name;
    v.forward = fn;
    ra_run r = {0, 0, -1, NULL};
    ra_isolation iso = {in_process, 1.0};
    ra_outcome_init(o);
    ck_assert_int_eq(ra_variant_run_guarded(o, &v, &c, 0, &r, &iso, &sealed, 1), RA_OK);
    for (int i = 0; i < 8; i++)
        ck_assert(tu_at(&c.tensors, "q", i) == kept[i]);
}

START_TEST(test_data_honest)
{
    for (int in_process = 0; in_process < 2; in_process++) {
        ra_outcome o;
        run(&o, honest, "gdn.test.honest", in_process);
        ck_assert_str_eq(o.died, "");
        ck_assert_int_eq(o.fst, RA_OK);
        ck_assert(o.elapsed_ms == 1.5);
        ck_assert_str_eq(ra_case_param(&o.result, "variant"), "gdn.test.honest");
        for (int i = 0; i < 8; i++)
            ck_assert(tu_at(&o.result.tensors, "o", i) == 2 * kept[i]);
        ra_outcome_clear(&o);
    }
}
END_TEST

/* A variant with forward_backward: after the forward and the backward
   the harness runs the one call too, in the child and in process; the
   same bits pass, one changed gradient element or a failure of the one
   call is the backward's failure, and the time is still the backward's
   (2.5 ms), not the one call's (9). */
START_TEST(test_data_fused)
{
    static const fused_defect defects[] = {FUSED_SAME, FUSED_FLIP, FUSED_FAIL};
    for (int in_process = 0; in_process < 2; in_process++)
        for (int d = 0; d < 3; d++) {
            const ra_variant v = {"gdn.test.fused", "gdn",       "test row", RA_CPU, "f64",
                                  RA_FWD | RA_BWD,  &defects[d], honest,     grad,   both};
            ra_run r = {0, 0, -1, NULL};
            ra_isolation iso = {in_process, 1.0};
            ra_outcome o;
            ra_outcome_init(&o);
            ck_assert_int_eq(ra_variant_run_guarded(&o, &v, &c, 1, &r, &iso, &sealed, 1), RA_OK);
            ck_assert_str_eq(o.died, "");
            ck_assert_int_eq(o.fst, RA_OK);
            ck_assert_int_eq(o.bwd_ran, 1);
            ck_assert(o.elapsed_ms == 2.5);
            if (defects[d] == FUSED_SAME) {
                ck_assert_int_eq(o.bst, RA_OK);
                for (int i = 0; i < 8; i++)
                    ck_assert(tu_at(&o.result.tensors, "dq", i) == 2 * kept[i]);
            } else if (defects[d] == FUSED_FLIP) {
                ck_assert_int_eq(o.bst, RA_EINTERNAL);
                ck_assert_str_eq(o.bwhy, "forward_backward differs from forward and backward: "
                                         "'dq' 1 of 8 elements differ");
            } else {
                ck_assert_int_eq(o.bst, RA_EIO);
                ck_assert_msg(strncmp(o.bwhy, "forward_backward: ", 18) == 0 &&
                                  strstr(o.bwhy, "planted failure"),
                              "bwhy: %s", o.bwhy);
            }
            for (int i = 0; i < 8; i++)
                ck_assert(tu_at(&c.tensors, "q", i) == kept[i]);
            ra_outcome_clear(&o);
        }
}
END_TEST

START_TEST(test_special_refusal_captured)
{
    ra_outcome o;
    run(&o, refuser, "gdn.test.refuser", 0);
    ck_assert_str_eq(o.died, "");
    ck_assert_int_eq(o.fst, RA_EUNSUPPORTED);
    ck_assert_str_eq(o.fwhy, "shape outside the envelope");
    ck_assert_int_eq(tu_nerr, 0); /* captured in the child, not reported */
    ra_outcome_clear(&o);
}
END_TEST

START_TEST(test_special_seal)
{
    /* read-only mapping, same bytes; unseal gives the heap buffers back */
    const ra_tensor *q = tu_t(&c, "q");
    ck_assert_ptr_eq(q->data, sealed.base + sealed.offset[1]);
    ck_assert_uint_eq(sealed.offset[0], 0);
    ck_assert_uint_eq(sealed.offset[1] % 64, 0);
    ck_assert(sealed.offset[1] >= 8 * 4);
    void *heap = sealed.heap[1];
    ra_inputs_unseal(&sealed, &c);
    ck_assert_ptr_eq(q->data, heap);
    ((double *)q->data)[0] = 5; /* writable again */
    ck_assert(tu_at(&c.tensors, "q", 0) == 5);
    ck_assert_int_eq(ra_inputs_seal(&sealed, &c), RA_OK);
}
END_TEST

START_TEST(test_regress_write_blamed)
{
    ra_outcome o;
    run(&o, writer, "gdn.test.writer", 0);
    ck_assert_str_eq(o.died,
                     "variant wrote into its input tensor 'q', which is read-only (SIGSEGV)");
    ck_assert_uint_eq(o.result.tensors.n, 0); /* nothing of it is trusted */
    ra_outcome_clear(&o);
}
END_TEST

START_TEST(test_regress_exit)
{
    ra_outcome o;
    run(&o, exiter, "gdn.test.exiter", 0);
    ck_assert_str_eq(o.died, "variant exited with status 3 before returning a result");
    ra_outcome_clear(&o);
}
END_TEST

START_TEST(test_regress_signal)
{
    ra_outcome o;
    run(&o, killer, "gdn.test.killer", 0);
    ck_assert_str_eq(o.died, "variant crashed: SIGFPE");
    ra_outcome_clear(&o);
}
END_TEST

START_TEST(test_regress_timeout)
{
    ra_outcome o;
    run(&o, sleeper, "gdn.test.sleeper", 0);
    ck_assert_str_eq(o.died, "timeout after 1 s (killed with SIGKILL)");
    ra_outcome_clear(&o);
}
END_TEST

static Suite *isolate_suite(void)
{
    Suite *s = suite_create("isolate");
    tu_tcase(s, "special", setup, teardown, test_special_refusal_captured, test_special_seal);
    tu_tcase(s, "data", setup, teardown, test_data_honest, test_data_fused);
    tu_tcase(s, "regress", setup, teardown, test_regress_write_blamed, test_regress_exit,
             test_regress_signal, test_regress_timeout);
    return s;
}

int main(void) { return tu_run(isolate_suite()); }
