/* Check suite for the kernel benchmark (src/audit/bench.c) and the operations' FLOP counts. */

#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/bench.h"
#include "core/op.h"
#include "gpu/clock_probe.h"
#include "gpu/device.h"
#include "recaudit/gdn.h"
#include "testutil.h"

/*
 * Expected values: the gdn FLOP formula evaluated by hand for one shape
 * (the arithmetic is written beside the assertion); statistics of timings
 * that test variants report by construction (a fixed sequence of
 * elapsed_ms values), so median, min and max are known; bytes from the
 * shapes and dtypes the test variants write, counted by hand.  The fused
 * (forward_backward) test variants run the same forward and backward and
 * plant a known difference after them, so the bench must find exactly it.
 */

/* A checked case id: gdn, default regime, f32, seed 1; gradients when bwd. */
static ra_case_spec make_id(const char *shape, int bwd)
{
    ra_case_spec id = tu_gdn_spec(shape, 1, 0, bwd);
    ck_assert_int_eq(ra_case_spec_check(&id, "test"), RA_OK);
    return id;
}

/* B=2, T=100, Hk=1, Hv=3, K=16, V=8, C=64, per token and value head:
   2*64*(3*16 + 2*8) + 6*16*8 + 64*64/3 = 8192 + 768 + 4096/3 = 30976/3;
   times B*T*Hv = 600 tokens x heads: 6195200; backward 3x: 18585600. */
START_TEST(data_gdn_flops)
{
    ra_case c;
    ra_case_init(&c);
    ra_case_spec id = make_id("B=2,T=100,Hk=1,Hv=3,K=16,V=8", 0);
    ck_assert_int_eq(ra_case_spec_generate(&c, &id), RA_OK);
    const ra_op *op = ra_op_find("gdn");
    ck_assert_ptr_nonnull(op->flops);
    ck_assert_double_eq_tol(op->flops(&c, 0), 6195200.0, 1e-6);
    ck_assert_double_eq_tol(op->flops(&c, 1), 18585600.0, 1e-6);
    ck_assert_ptr_nonnull(op->flops_doc);
    ra_case_clear(&c);
}
END_TEST

/* --- test variants: known times, known outputs -------------------------------------------- */

/* Times reported by the forward, in call order: a warm-up, then five
   repetitions; the backward reports ten times the same sequence. */
static const double fwd_times[] = {100, 4, 1, 3, 2, 20};
static int calls_fwd, calls_bwd;

static ra_status zeros(ra_tensors *out, const char *name, ra_dtype dt, int nd, const int64_t *shape)
{
    ra_tensor *t;
    return ra_tensors_new(out, &t, name, dt, nd, shape);
}

/* o [1,64,2,4] bf16 (1024 bytes), ht [1,2,4,4] f32 (128 bytes). */
static ra_status outputs(ra_tensors *out)
{
    RA_TRY(zeros(out, "o", RA_BF16, 4, (const int64_t[]){1, 64, 2, 4}));
    return zeros(out, "ht", RA_F32, 4, (const int64_t[]){1, 2, 4, 4});
}

/* dq, dk [1,64,1,4] f32 (1024 bytes each), dv [1,64,2,4] f32 (2048),
   dg, dbeta [1,64,2] f32 (512 each): 5120 bytes. */
static ra_status gradients(ra_tensors *out)
{
    RA_TRY(zeros(out, "dq", RA_F32, 4, (const int64_t[]){1, 64, 1, 4}));
    RA_TRY(zeros(out, "dk", RA_F32, 4, (const int64_t[]){1, 64, 1, 4}));
    RA_TRY(zeros(out, "dv", RA_F32, 4, (const int64_t[]){1, 64, 2, 4}));
    RA_TRY(zeros(out, "dg", RA_F32, 3, (const int64_t[]){1, 64, 2}));
    return zeros(out, "dbeta", RA_F32, 3, (const int64_t[]){1, 64, 2});
}

static ra_status timed_fwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c;
    RA_TRY(outputs(out));
    run->elapsed_ms = fwd_times[calls_fwd++ % 6];
    return RA_OK;
}

static ra_status timed_bwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c;
    RA_TRY(gradients(out));
    run->elapsed_ms = 10 * fwd_times[calls_bwd++ % 6];
    return RA_OK;
}

/* Fused test variants: forward 1 ms, backward 2 ms, the one call 2.5 ms
   (so its fwd+bwd median is 2.5, where the sum would be 3); the row's data
   says what the one call changes after computing both. */
typedef enum { FUSED_SAME, FUSED_FLIP, FUSED_MISSING } fused_defect;

static ra_status fused_fwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c;
    run->elapsed_ms = 1;
    return outputs(out);
}

static ra_status fused_bwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c;
    run->elapsed_ms = 2;
    return gradients(out);
}

static ra_status fused_both(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)c;
    RA_TRY(outputs(out));
    RA_TRY(gradients(out));
    const fused_defect d = *(const fused_defect *)self->data;
    if (d == FUSED_FLIP) /* one element of dv, 512 in all */
        ra_tensor_set(ra_tensors_find(out, "dv"), 5, 1.0);
    else if (d == FUSED_MISSING)
        ra_tensor_free(ra_tensors_take(out, "ht"));
    run->elapsed_ms = 2.5;
    return RA_OK;
}

/* Does not time itself. */
static ra_status untimed_fwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)run;
    return timed_fwd(self, c, out, &(ra_run){.elapsed_ms = -1});
}

static ra_status failing_fwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    RA_ERROR("planted failure", RA_EIO);
}

#define CAPS (RA_FWD | RA_BWD | RA_GDN_CAP_GQA)
#define FUSED(name, defect)                                                                        \
    {                                                                                              \
        name, "gdn", "forward_backward", RA_CPU, "f32", CAPS, &(const fused_defect){defect},       \
            fused_fwd, fused_bwd, fused_both                                                       \
    }
static const ra_variant test_variants[] = {
    {"gdn.t.timed", "gdn", "known times", RA_CPU, "f32", CAPS, NULL, timed_fwd, timed_bwd, NULL},
    {"gdn.t.fwdonly", "gdn", "no backward", RA_CPU, "f32", RA_FWD | RA_GDN_CAP_GQA, NULL, timed_fwd,
     NULL, NULL},
    {"gdn.t.failing", "gdn", "fails", RA_CPU, "f32", CAPS, NULL, failing_fwd, timed_bwd, NULL},
    {"gdn.t.untimed", "gdn", "wall clock", RA_CPU, "f32", RA_FWD | RA_GDN_CAP_GQA, NULL,
     untimed_fwd, NULL, NULL},
    FUSED("gdn.f.same", FUSED_SAME),
    FUSED("gdn.f.flip", FUSED_FLIP),
    FUSED("gdn.f.missing", FUSED_MISSING),
};

static const ra_variant *test_variant(const char *name)
{
    for (size_t i = 0; i < sizeof test_variants / sizeof test_variants[0]; i++)
        if (strcmp(test_variants[i].name, name) == 0)
            return &test_variants[i];
    ck_abort_msg("no test variant %s", name);
    return NULL;
}

static ra_registry *test_registry(void)
{
    ra_registry *r;
    ck_assert_int_eq(ra_registry_new_empty(&r), RA_OK);
    for (size_t i = 0; i < sizeof test_variants / sizeof test_variants[0]; i++)
        ck_assert_int_eq(ra_registry_add(r, &test_variants[i]), RA_OK);
    return r;
}

#define SHAPE "B=1,T=64,Hk=1,Hv=2,K=4,V=4"

/* ra_bench_case over the test variants matching glob with reps
   repetitions (the counters of the timed variants reset first). */
static ra_status bench_test(ra_bench_rows *rows, const char *glob, int bwd, int reps)
{
    calls_fwd = calls_bwd = 0;
    ra_registry *r = test_registry();
    ra_case_spec id = make_id(SHAPE, bwd);
    ra_bench_opts o;
    ra_bench_opts_init(&o);
    o.reps = reps;
    ra_bench_rows_init(rows);
    ra_status st = ra_bench_case(rows, r, glob, &id, &o);
    ra_registry_free(r);
    return st;
}

static const ra_bench_row *find_row(const ra_bench_rows *rows, const char *variant, const char *dir)
{
    for (size_t i = 0; i < rows->n; i++)
        if (strcmp(rows->v[i].variant, variant) == 0 && strcmp(rows->v[i].direction, dir) == 0)
            return &rows->v[i];
    ck_abort_msg("no row %s %s", variant, dir);
    return NULL;
}

/* Bytes of the cotangents of the case at SHAPE: do 64*2*4*4 = 2048, plus
   dht 2*4*4*4 = 128 when the generator wrote it. */
static double cotangent_bytes(void)
{
    ra_case c;
    ra_case_init(&c);
    ra_case_spec id = make_id(SHAPE, 1);
    ck_assert_int_eq(ra_case_spec_generate(&c, &id), RA_OK);
    const double cot = 2048 + (ra_tensors_find(&c.tensors, "dht") ? 128 : 0);
    ra_case_clear(&c);
    return cot;
}

/* Five repetitions of the timed variant on B=1, T=64, Hk=1, Hv=2, K=V=4. */
START_TEST(data_timed_rows)
{
    ra_bench_rows rows;
    ck_assert_int_eq(bench_test(&rows, "gdn.t.timed", 1, 5), RA_OK);
    ck_assert_uint_eq(rows.n, 3);
    ck_assert_uint_eq(rows.failed, 0);

    /* forward times after the warm-up: 4 1 3 2 20 -> median 3 (the mean
       would be 6), min 1, max 20 */
    const ra_bench_row *f = find_row(&rows, "gdn.t.timed", "fwd");
    ck_assert_int_eq(f->reps, 5);
    ck_assert_double_eq(f->median_ms, 3);
    ck_assert_double_eq(f->min_ms, 1);
    ck_assert_double_eq(f->max_ms, 20);
    ck_assert_str_eq(f->timer, "variant");
    ck_assert_str_eq(f->device, "cpu");
    const ra_bench_row *b = find_row(&rows, "gdn.t.timed", "bwd");
    ck_assert_double_eq(b->median_ms, 30);
    ck_assert_double_eq(b->min_ms, 10);
    ck_assert_double_eq(b->max_ms, 200);
    /* sums per repetition: 44 11 33 22 220 */
    const ra_bench_row *s = find_row(&rows, "gdn.t.timed", "fwd+bwd");
    ck_assert_double_eq(s->median_ms, 33);
    ck_assert_double_eq(s->min_ms, 11);
    ck_assert_double_eq(s->max_ms, 220);

    /* bytes: inputs 5120 (q, k 64*4*4 = 1024 each, v 64*2*4*4 = 2048,
       g, beta 64*2*4 = 512 each); outputs 1024 + 128 */
    const double cot = cotangent_bytes();
    ck_assert_double_eq(f->bytes, 5120 + 1152);
    ck_assert_double_eq(b->bytes, 5120 + cot + 5120);
    ck_assert_double_eq(s->bytes, 2 * 5120 + 1152 + cot + 5120);
    /* the nominal count: per token and head 2*64*(12 + 8) + 6*16 + 4096/3
       = 2656 + 4096/3 = 12064/3; 128 tokens x heads: 1544192/3 */
    ck_assert_double_eq_tol(f->flops, 1544192.0 / 3, 1e-6);
    ck_assert_double_eq_tol(b->flops, 1544192.0, 1e-6);
    ck_assert_double_eq_tol(s->flops, 4 * 1544192.0 / 3, 1e-6);

    ra_table *t;
    ck_assert_int_eq(ra_bench_table(&t, &rows), RA_OK);
    ck_assert_str_eq(ra_table_header(t, 4), "median_ms");
    ck_assert_str_eq(ra_table_cell(t, 0, 4), "3");
    /* GB/s = 6272 bytes / 3 ms = 2.0907e-3 */
    ck_assert_str_eq(ra_table_cell(t, 0, 8), "0.002091");
    ra_table_free(t);
    ra_bench_rows_clear(&rows);
}
END_TEST

/* A variant with forward_backward: fwd and bwd are still the separate
   calls' (1 and 2 ms), fwd+bwd the one call's 2.5 ms (the sum would be
   3), its inputs read once, and the note says so. */
START_TEST(data_fused_rows)
{
    ra_bench_rows rows;
    ck_assert_int_eq(bench_test(&rows, "gdn.f.same", 1, 3), RA_OK);
    ck_assert_uint_eq(rows.n, 3);
    ck_assert_uint_eq(rows.failed, 0);
    ck_assert_double_eq(find_row(&rows, "gdn.f.same", "fwd")->median_ms, 1);
    ck_assert_double_eq(find_row(&rows, "gdn.f.same", "bwd")->median_ms, 2);
    const ra_bench_row *s = find_row(&rows, "gdn.f.same", "fwd+bwd");
    ck_assert_int_eq(s->reps, 3);
    ck_assert_double_eq(s->median_ms, 2.5);
    ck_assert_double_eq(s->min_ms, 2.5);
    ck_assert_double_eq(s->max_ms, 2.5);
    ck_assert_int_eq(s->failed, 0);
    ck_assert_str_eq(s->timer, "variant");
    ck_assert_str_eq(s->note, "one call (forward_backward)");
    /* inputs 5120 once, outputs 1152, gradients 5120 */
    ck_assert_double_eq(s->bytes, 5120 + 1152 + cotangent_bytes() + 5120);
    ra_table *t;
    ck_assert_int_eq(ra_bench_table(&t, &rows), RA_OK);
    ck_assert_str_eq(ra_table_header(t, 10), "note");
    ck_assert_str_eq(ra_table_cell(t, 2, 10), "one call (forward_backward)");
    ck_assert_str_eq(ra_table_cell(t, 0, 10), "-");
    ra_table_free(t);
    ra_bench_rows_clear(&rows);
    /* forward only: no fused call, no note */
    ck_assert_int_eq(bench_test(&rows, "gdn.f.same", 0, 3), RA_OK);
    ck_assert_uint_eq(rows.n, 1);
    ck_assert_str_eq(find_row(&rows, "gdn.f.same", "fwd")->note, "");
    ra_bench_rows_clear(&rows);
}
END_TEST

/* A fused call whose tensors are not the separate calls' fails its fwd+bwd
   row, naming the first tensor that differs and how; its fwd and bwd rows
   stand, and the other variants still run. */
START_TEST(special_fused_differs)
{
    ra_bench_rows rows;
    ck_assert_int_eq(bench_test(&rows, "gdn.f.*", 1, 2), RA_OK);
    ck_assert_uint_eq(rows.n, 9);
    ck_assert_uint_eq(rows.failed, 2);
    const ra_bench_row *fl = find_row(&rows, "gdn.f.flip", "fwd+bwd");
    ck_assert_int_eq(fl->failed, 1);
    ck_assert_msg(strstr(fl->note, "failed: forward_backward differs") &&
                      strstr(fl->note, "'dv' 1 of 512 elements differ"),
                  "%s", fl->note);
    ck_assert_int_eq(find_row(&rows, "gdn.f.flip", "fwd")->failed, 0);
    ck_assert_int_eq(find_row(&rows, "gdn.f.flip", "bwd")->failed, 0);
    const ra_bench_row *mi = find_row(&rows, "gdn.f.missing", "fwd+bwd");
    ck_assert_int_eq(mi->failed, 1);
    ck_assert_msg(strstr(mi->note, "'ht' missing"), "%s", mi->note);
    ck_assert_int_eq(find_row(&rows, "gdn.f.same", "fwd+bwd")->failed, 0);
    ra_bench_rows_clear(&rows);
}
END_TEST

static ra_status empty_both(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    return RA_OK;
}

/* ra_variant_run_forward_backward: the outputs and gradients of the one
   call under the variant's name; refused without forward_backward, and
   when the call returns nothing. */
START_TEST(special_run_forward_backward)
{
    ra_case c, res;
    ra_case_init(&c);
    ra_case_init(&res);
    ra_case_spec id = make_id(SHAPE, 1);
    ck_assert_int_eq(ra_case_spec_generate(&c, &id), RA_OK);
    ra_run run = {0, 0, -1, NULL};
    ck_assert_int_eq(ra_variant_run_forward_backward(&res, test_variant("gdn.f.same"), &c, &run),
                     RA_OK);
    ck_assert_str_eq(ra_case_param(&res, "variant"), "gdn.f.same");
    ck_assert_uint_eq(res.tensors.n, 7);
    ck_assert_ptr_nonnull(ra_tensors_find(&res.tensors, "ht"));
    ck_assert_ptr_nonnull(ra_tensors_find(&res.tensors, "dbeta"));
    ck_assert_double_eq(run.elapsed_ms, 2.5);
    ra_case_clear(&res);
    ra_case_init(&res);
    tu_expect_error(ra_variant_run_forward_backward(&res, test_variant("gdn.t.timed"), &c, &run),
                    RA_EINVAL, "gdn.t.timed", "no forward_backward");
    ra_case_clear(&res);
    ra_case_init(&res);
    ra_variant empty = *test_variant("gdn.f.same");
    empty.forward_backward = empty_both;
    tu_expect_error(ra_variant_run_forward_backward(&res, &empty, &c, &run), RA_EINTERNAL,
                    "forward_backward returned no output");
    ra_case_clear(&res);
    ra_case_clear(&c);
}
END_TEST

/* A skip, a failure and a wall-clock variant: each one row or set of rows,
   and the run goes on after the failure. */
START_TEST(special_skip_fail_wall)
{
    ra_bench_rows rows;
    ck_assert_int_eq(bench_test(&rows, "gdn.t.*", 1, 3), RA_OK);
    ck_assert_uint_eq(rows.failed, 1);
    const ra_bench_row *sk = find_row(&rows, "gdn.t.fwdonly", "fwd+bwd");
    ck_assert_int_eq(sk->reps, 0);
    ck_assert_int_eq(sk->failed, 0);
    ck_assert_msg(strstr(sk->note, "skipped: no backward"), "%s", sk->note);
    const ra_bench_row *fl = find_row(&rows, "gdn.t.failing", "fwd+bwd");
    ck_assert_int_eq(fl->failed, 1);
    ck_assert_msg(strstr(fl->note, "planted failure"), "%s", fl->note);
    /* forward-only: the untimed variant is skipped with gradients asked for,
       so ask again without them */
    ra_bench_rows_clear(&rows);
    ck_assert_int_eq(bench_test(&rows, "gdn.t.untimed", 0, 3), RA_OK);
    ck_assert_uint_eq(rows.n, 1);
    const ra_bench_row *w = find_row(&rows, "gdn.t.untimed", "fwd");
    ck_assert_str_eq(w->timer, "wall");
    ck_assert(w->min_ms >= 0 && w->min_ms <= w->median_ms && w->median_ms <= w->max_ms);
    ra_bench_rows_clear(&rows);
}
END_TEST

START_TEST(special_refusals)
{
    ra_bench_rows rows;
    tu_expect_error(bench_test(&rows, "gdn.t.*", 0, 0), RA_EINVAL, "repetitions");
    ck_assert_uint_eq(rows.n, 0);
}
END_TEST

/* The SM clock probe refuses a bad load or length before it looks for a
   device, and without a device (or without CUDA) says so; with one, its
   two timers of the same launch agree and the median lies in [min, max]. */
START_TEST(special_clock_probe)
{
    ra_gpu_clock c;
    tu_expect_error(ra_gpu_clock_probe(RA_GPU_LOADS, 10, &c), RA_EINVAL, "unknown load");
    tu_expect_error(ra_gpu_clock_probe(RA_GPU_LOAD_FFMA, 0.5, &c), RA_EINVAL, "1 to 60000");
    ck_assert_str_eq(ra_gpu_load_name(RA_GPU_LOAD_MMA_TF32), "mma.tf32");
    if (ra_gpu_count() == 0) {
        tu_expect_error(ra_gpu_clock_probe(RA_GPU_LOAD_FFMA, 10, &c), RA_EUNSUPPORTED,
                        "sm clock probe");
        return;
    }
    ck_assert_int_eq(ra_gpu_clock_probe(RA_GPU_LOAD_MMA_BF16, 10, &c), RA_OK);
    ck_assert(c.blocks > 0 && c.mhz_min <= c.mhz && c.mhz <= c.mhz_max && c.mhz_min > 0);
    ck_assert(c.timer_ms > 0.8 * c.ms && c.timer_ms <= 1.05 * c.ms);
}
END_TEST

static Suite *bench_suite(void)
{
    Suite *s = suite_create("bench");
    tu_tcase(s, "special", tu_capture, NULL, special_skip_fail_wall, special_refusals,
             special_clock_probe, special_fused_differs, special_run_forward_backward);
    tu_tcase(s, "data", tu_capture, NULL, data_gdn_flops, data_timed_rows, data_fused_rows);
    return s;
}

int main(void) { return tu_run(bench_suite()); }
