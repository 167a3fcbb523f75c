/* Check suite for the variant registry and plugin loader (src/audit/registry.c). */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "audit/registry.h"
#include "core/gdn_case.h"
#include "core/kv.h"
#include "core/op.h"
#include "core/status.h"
#include "core/table.h"
#include "cpu/cpu.h"
#include "gpu/gpu.h"
#include "recaudit/gdn.h"
#include "testutil.h"

/*
 * Expected values come from the documented naming scheme (the CPU variant
 * names of tests/testutil.c), from the glob semantics of POSIX fnmatch worked by hand, and
 * from the rules the registry documents (name alphabet, caps consistency,
 * duplicates).  Plugins: the broken objects built from tests/plugin-bad.c
 * (bad ABI version, the next ABI version, no ABI symbol, a bad variant
 * row), the ABI-3 plugin tests/plugin-abi3.c and the example plugin, found
 * under $top_builddir (exported by make check); when that variable is
 * absent the plugin tests are skipped with a note rather than guessed.
 */

static ra_status fwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    return RA_EUNSUPPORTED;
}

static ra_status bwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    return RA_EUNSUPPORTED;
}

/* Names of tu_cpu_variants that match glob (a count from the documented
   list, not from the registry under test). */
static size_t listed_matching(const char *glob)
{
    size_t n = 0;
    for (const char *const *v = tu_cpu_variants; *v; v++)
        n += ra_glob_match(glob, *v);
    return n;
}

START_TEST(special_builtin)
{
    const char *const *names = tu_cpu_variants;
    ra_registry *r;
    ck_assert_int_eq(ra_registry_new(&r), RA_OK);
    /* every built-in row of both directories' lists, nothing else */
    const size_t ncpu = ra_cpu_variant_count(), n = ncpu + ra_gpu_variant_count();
    ck_assert_uint_eq(ra_registry_count(r), n);
    size_t listed = 0;
    for (size_t i = 0; names[i]; i++, listed++) {
        const ra_variant *v = ra_registry_find(r, names[i]);
        ck_assert_msg(v != NULL, "missing %s", names[i]);
        ck_assert_str_eq(v->op, "gdn");
        ck_assert_int_eq(v->device, RA_CPU);
        ck_assert(v->caps & RA_FWD);
        ck_assert_ptr_null(ra_registry_origin_of(r, v));
        /* NKI's algorithms (neumann, schur) require unit-norm keys. */
        int nki = strstr(names[i], "neumann") || strstr(names[i], "schur");
        ck_assert_int_eq(!!(v->caps & RA_GDN_NEEDS_UNIT_KEYS), nki);
    }
    /* the study subject beside them: the sequential f32 kernel with a
       reversal backward, gated only where inverting steps is stable */
    const ra_variant *rev = ra_registry_find(r, "gdn.cpu.f32.reversal");
    ck_assert_ptr_nonnull(rev);
    ck_assert_str_eq(rev->pclass, "f32");
    ck_assert(rev->caps & RA_GDN_NEEDS_STABLE_STEPS && rev->caps & RA_BWD);
    ck_assert(!(ra_registry_find(r, "gdn.cpu.f32")->caps & RA_GDN_NEEDS_STABLE_STEPS));
    ck_assert_uint_ge(ncpu, listed + 1);
    ck_assert_uint_eq(ra_registry_count_matching(r, "*.cpu.*"), ncpu);
    ck_assert_uint_ge(ncpu, listed);
    /* the scan family's rows (their own list: other ops, other checks) */
    size_t nscan = 0;
    for (const char *const *sv = tu_cpu_scan_variants; *sv; sv++, nscan++) {
        const ra_variant *v = ra_registry_find(r, *sv);
        ck_assert_msg(v != NULL, "missing %s", *sv);
        ck_assert_int_eq(v->device, RA_CPU);
        ck_assert(v->caps & RA_FWD && v->caps & RA_BWD);
    }
    ck_assert_uint_eq(ra_registry_count_matching(r, "scan.cpu.*"), nscan);
    /* Registration order: ra_registry_at walks the same rows. */
    for (size_t i = 0; i < ra_registry_count(r); i++)
        ck_assert_ptr_eq(ra_registry_find(r, ra_registry_at(r, i)->name), ra_registry_at(r, i));
    ck_assert_ptr_null(ra_registry_at(r, n));
    ck_assert_ptr_null(ra_registry_find(r, "gdn.cpu"));
    ck_assert_uint_eq(ra_registry_count_matching(r, "gdn.cpu.chunk64.*"),
                      listed_matching("gdn.cpu.chunk64.*"));
    ck_assert_uint_eq(ra_registry_count_matching(r, "gdn.cpu.*.schur"),
                      listed_matching("gdn.cpu.*.schur"));
    ck_assert_uint_eq(ra_registry_count_matching(r, "gdn.cpu.f[0-9][0-9]"), 2);
    ck_assert_uint_eq(ra_registry_count_matching(r, "gdn.cuda.*"), ra_gpu_variant_count());
    ra_registry_free(r);
}
END_TEST

START_TEST(special_glob)
{
    ck_assert(ra_glob_match("gdn.cpu.*", "gdn.cpu.f64"));
    ck_assert(!ra_glob_match("gdn.cpu.*", "gdn.cuda.f64"));
    ck_assert(ra_glob_match("*", "anything.at.all"));
    ck_assert(ra_glob_match("gdn.*.f32", "gdn.cpu.f32"));
    ck_assert(!ra_glob_match("gdn.*.f32", "gdn.cpu.f32x"));
    ck_assert(ra_glob_match("gdn.cpu.chunk?4.ieee", "gdn.cpu.chunk64.ieee"));
    ck_assert(ra_glob_match("gdn.cpu.chunk[16][24]*", "gdn.cpu.chunk128.bf16.schur"));
    ck_assert(!ra_glob_match("gdn.cpu.chunk[!16]*", "gdn.cpu.chunk128.bf16.schur"));
    ck_assert(!ra_glob_match("gdn", "gdn.cpu.f64")); /* whole-name match */
}
END_TEST

START_TEST(special_add)
{
    ra_registry *r;
    ck_assert_int_eq(ra_registry_new_empty(&r), RA_OK);
    ra_variant v = {"gdn.test.one",  "gdn", "one line", RA_CPU, "f64",
                    RA_FWD | RA_BWD, NULL,  fwd,        bwd,    NULL};
    ck_assert_int_eq(ra_registry_add(r, &v), RA_OK);
    ck_assert_uint_eq(ra_registry_count(r), 1);

    /* The struct is copied: changing the caller's copy changes nothing. */
    v.caps = RA_FWD;
    ck_assert_uint_eq(ra_registry_find(r, "gdn.test.one")->caps, RA_FWD | RA_BWD);

    /* forward_backward beside a backward is kept with the row. */
    ra_variant both = v;
    both.name = "gdn.test.both";
    both.caps = RA_FWD | RA_BWD;
    both.forward_backward = fwd;
    ck_assert_int_eq(ra_registry_add(r, &both), RA_OK);
    ck_assert_ptr_eq(ra_registry_find(r, "gdn.test.both")->forward_backward, fwd);
    ck_assert_ptr_null(ra_registry_find(r, "gdn.test.one")->forward_backward);

    ra_variant dup = {"gdn.test.one", "gdn", "again", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL};
    ck_assert_int_eq(ra_registry_add(r, &dup), RA_EINVAL);
    tu_has(ra_last_error(), "already registered");

    struct {
        ra_variant v;
        const char *msg;
    } bad[] = {
        {{"gdn test", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL},
         "variant name 'gdn test'"},
        {{"", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL}, "variant name ''"},
        {{NULL, "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL}, "variant name '(null)'"},
        {{"gdn.x;rm", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL}, "gdn.x;rm"},
        {{"gdn.x", "", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL}, "op ''"},
        {{"gdn.x", "gdn", "two\nlines", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL},
         "one non-empty line"},
        {{"gdn.x", "gdn", NULL, RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL},
         "one non-empty line"},
        {{"gdn.x", "gdn", "d", (ra_device)7, "f64", RA_FWD, NULL, fwd, NULL, NULL}, "device 7"},
        {{"gdn.x", "gdn", "d", RA_CPU, "f64", RA_BWD, NULL, NULL, bwd, NULL}, "needs RA_FWD"},
        {{"gdn.x", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, NULL, NULL, NULL}, "needs RA_FWD"},
        {{"gdn.x", "gdn", "d", RA_CPU, "f64", RA_FWD | RA_BWD, NULL, fwd, NULL, NULL},
         "RA_BWD and the backward"},
        {{"gdn.x", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, bwd, NULL},
         "RA_BWD and the backward"},
        {{"gdn.x", "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, fwd},
         "forward_backward needs RA_BWD and a backward"},
        {{"gdn.x", "gdn", "d", RA_CPU, "f64", RA_FWD | (1u << 7), NULL, fwd, NULL, NULL},
         "capability bits 0x80 are not defined for op gdn"},
        {{"gdn.x", "nope", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL},
         "op 'nope' is not an operation"},
        {{"gdn.x", "gdn", "d", RA_CPU, "fp32", RA_FWD, NULL, fwd, NULL, NULL},
         "precision class 'fp32' is not one of"},
        {{"gdn.x", "gdn", "d", RA_CPU, NULL, RA_FWD, NULL, fwd, NULL, NULL},
         "precision class '(null)'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(ra_registry_add(r, &bad[i].v), RA_EINVAL);
        tu_has(ra_last_error(), bad[i].msg);
    }
    /* 81 characters: one over the limit; 80 is accepted. */
    char name[82];
    memset(name, 'a', 81);
    name[81] = '\0';
    ra_variant longv = {name, "gdn", "d", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL};
    ck_assert_int_eq(ra_registry_add(r, &longv), RA_EINVAL);
    name[80] = '\0';
    ck_assert_int_eq(ra_registry_add(r, &longv), RA_OK);
    ck_assert_uint_eq(ra_registry_count(r), 3);
    ra_registry_free(r);
}
END_TEST

START_TEST(special_caps_and_table)
{
    char buf[64];
    const ra_op *gdn = ra_op_find("gdn");
    ra_op_caps_format(buf, sizeof buf, gdn, RA_FWD | RA_BWD | RA_GDN_CAPS_ALL);
    ck_assert_str_eq(buf, "fwd,bwd,h0,gqa,l2norm,tail");
    ra_op_caps_format(buf, sizeof buf, gdn, RA_FWD | RA_GDN_CAP_TAIL);
    ck_assert_str_eq(buf, "fwd,tail");
    ra_op_caps_format(buf, sizeof buf, gdn, RA_FWD | RA_GDN_NEEDS_UNIT_KEYS);
    ck_assert_str_eq(buf, "fwd,unit-keys");
    ra_op_caps_format(buf, sizeof buf, gdn, 0);
    ck_assert_str_eq(buf, "");

    ra_registry *r;
    ck_assert_int_eq(ra_registry_new_empty(&r), RA_OK);
    ra_variant a = {"gdn.t.a", "gdn", "doc a", RA_CPU, "f64", RA_FWD | RA_GDN_CAP_H0,
                    NULL,      fwd,   NULL,    NULL};
    ra_variant b = {"gdn.t.b",       "gdn", "doc b", RA_CUDA, "f64",
                    RA_FWD | RA_BWD, NULL,  fwd,     bwd,     NULL};
    ck_assert_int_eq(ra_registry_add(r, &a), RA_OK);
    ck_assert_int_eq(ra_registry_add(r, &b), RA_OK);
    ra_table *t;
    ck_assert_int_eq(ra_registry_table(&t, r, "*.b"), RA_OK);
    ck_assert_uint_eq(ra_table_rows(t), 1);
    ck_assert_str_eq(ra_table_cell(t, 0, 0), "gdn.t.b");
    ck_assert_str_eq(ra_table_cell(t, 0, 1), "gdn");
    ck_assert_str_eq(ra_table_cell(t, 0, 2), "cuda");
    ck_assert_str_eq(ra_table_cell(t, 0, 3), "f64");
    ck_assert_str_eq(ra_table_cell(t, 0, 4), "fwd,bwd");
    ck_assert_str_eq(ra_table_cell(t, 0, 5), "doc b");
    ck_assert_str_eq(ra_table_cell(t, 0, 6), "built-in");
    ra_table_free(t);
    ck_assert_int_eq(ra_registry_table(&t, r, NULL), RA_OK);
    ck_assert_uint_eq(ra_table_rows(t), 2);
    ck_assert_str_eq(ra_table_cell(t, 0, 4), "fwd,h0");
    ra_table_free(t);
    ra_registry_free(r);
}
END_TEST

START_TEST(data_plugins)
{
    /* libtool puts the built objects under .libs */
    const char *path = tu_buildpath("tests/.libs/libbadabi.so");
    if (!path) {
        fprintf(stderr, "t-registry: top_builddir unset, plugin tests skipped\n");
        return;
    }
    ra_registry *r;
    ck_assert_int_eq(ra_registry_new(&r), RA_OK);
    size_t n0 = ra_registry_count(r);

    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_EUNSUPPORTED);
    tu_has(ra_last_error(), path, "ABI version 1004, this recaudit expects 3 to 4");
    path = tu_buildpath("tests/.libs/libnextabi.so");
    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_EUNSUPPORTED);
    tu_has(ra_last_error(), path, "ABI version 5, this recaudit expects 3 to 4");

    path = tu_buildpath("tests/.libs/libnoabi.so");
    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_ENOTFOUND);
    tu_has(ra_last_error(), path, "no symbol 'ra_plugin_abi_version'");

    /* libbadrow adds a valid row, then a bad one: the load fails and the
       valid row is removed again. */
    path = tu_buildpath("tests/.libs/libbadrow.so");
    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_EINVAL);
    tu_has(ra_last_error(), path, "variant name 'gdn.bad name'");
    ck_assert_ptr_null(ra_registry_find(r, "gdn.bad.ok"));

    ck_assert_int_eq(ra_registry_load_plugin(r, "/nonexistent/libx.so"), RA_EIO);
    tu_has(ra_last_error(), "/nonexistent/libx.so", "cannot load");
    ck_assert_int_eq(ra_registry_load_plugin(r, ""), RA_EINVAL);
    ck_assert_uint_eq(ra_registry_count(r), n0);

    /* The example plugin registers one variant, remembered with its path;
       loading it twice is refused as a duplicate. */
    path = tu_buildpath("examples/plugin/.libs/libgdnexample.so");
    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_OK);
    ck_assert_uint_eq(ra_registry_count(r), n0 + 1);
    const ra_variant *v = ra_registry_find(r, "gdn.example.f64");
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(ra_registry_origin_of(r, v), path);
    ck_assert_str_eq(ra_registry_origin(r, n0), path);
    ck_assert_uint_eq(v->caps, RA_FWD | RA_BWD | RA_GDN_CAP_H0 | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL);
    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_EINVAL);
    tu_has(ra_last_error(), "already registered");
    ck_assert_uint_eq(ra_registry_count(r), n0 + 1);

    /* An ABI-3 plugin loads; its row ends before forward_backward, so the
       row has none (the plugin put a function right after its row). */
    path = tu_buildpath("tests/.libs/libabi3.so");
    ck_assert_msg(ra_registry_load_plugin(r, path) == RA_OK, "%s", ra_last_error());
    v = ra_registry_find(r, "gdn.abi3.f64");
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_nonnull(v->forward);
    ck_assert_ptr_nonnull(v->backward);
    ck_assert_ptr_null(v->forward_backward);
    ck_assert_uint_eq(v->caps, RA_FWD | RA_BWD | RA_GDN_CAP_H0 | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL);
    ra_registry_free(r);

    /* ra_registry_new_with_plugins: a failing plugin leaves nothing. */
    path = tu_buildpath("tests/.libs/libnoabi.so");
    const char *list[] = {path, NULL};
    r = (ra_registry *)&r; /* poisoned: must be reset to NULL on failure */
    ck_assert_int_eq(ra_registry_new_with_plugins(&r, list), RA_ENOTFOUND);
    ck_assert_ptr_null(r);
}
END_TEST

/* Forward of v on c into a fresh out; the status. */
static ra_status run_fwd(const ra_variant *v, const ra_case *c, ra_tensors *out)
{
    ra_run run = {.threads = 1, .device = 0, .elapsed_ms = -1, .user = NULL};
    ra_tensors_init(out);
    return v->forward(v, c, out, &run);
}

START_TEST(regress_plugin_params)
{
    /* The example plugin read its parameters by hand: any l2norm text but
       "false"/"0" was a request for normalisation (l2norm=off, which the
       host reads as false, was refused as unsupported; l2norm=maybe too,
       where the host says the case is malformed) and l2eps was never
       read.  Through the exported readers it takes and refuses what the
       built-in gdn.cpu.f64 does, and agrees with it, value for value, on a
       case with scale and l2eps off their defaults (scale 0.3, not K^-1/2
       = 0.5: a variant that ignored it would be 0.6x off). */
    const char *path = tu_buildpath("examples/plugin/.libs/libgdnexample.so");
    if (!path) {
        fprintf(stderr, "t-registry: top_builddir unset, plugin tests skipped\n");
        return;
    }
    ra_registry *r;
    ck_assert_int_eq(ra_registry_new(&r), RA_OK);
    ck_assert_int_eq(ra_registry_load_plugin(r, path), RA_OK);
    const ra_variant *ex = ra_registry_find(r, "gdn.example.f64");
    const ra_variant *host = ra_registry_find(r, "gdn.cpu.f64");
    ck_assert_ptr_nonnull(ex);
    ck_assert_ptr_nonnull(host);
    const ra_gdn_shape s = {1, 8, 1, 2, 4, 4};
    ra_case c;
    tu_gdn_generate(&c, &s, RA_F32, NULL, 11, 0, 0);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "Off"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.3"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2eps", "0.25"), RA_OK);
    ra_tensors a, b;
    ck_assert_msg(run_fwd(ex, &c, &a) == RA_OK, "example: %s", ra_last_error());
    ck_assert_msg(run_fwd(host, &c, &b) == RA_OK, "host: %s", ra_last_error());
    const ra_tensor *oa = tu_tensor(&a, "o"), *ob = tu_tensor(&b, "o");
    ck_assert_int_eq(oa->numel, ob->numel);
    double omax = 0, dmax = 0;
    for (int64_t i = 0; i < oa->numel; i++) {
        omax = fmax(omax, fabs(ra_tensor_get(ob, i)));
        dmax = fmax(dmax, fabs(ra_tensor_get(oa, i) - ra_tensor_get(ob, i)));
    }
    /* Two f64 evaluations of the same recurrence: rounding only. */
    ck_assert_msg(omax > 0 && dmax <= 0x1p-40 * omax, "o differs by %g of %g", dmax, omax);
    ra_tensors_clear(&a);
    ra_tensors_clear(&b);

    /* Malformed or out-of-range texts: both refuse with RA_EINVAL, the
       example naming the parameter and its text as the host does. */
    const char *bad[][2] = {
        {"l2norm", "maybe"}, {"l2eps", "-1"}, {"l2eps", "1e-6x"}, {"scale", "inf"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ra_case d;
        tu_gdn_generate(&d, &s, RA_F32, NULL, 11, 0, 0);
        ck_assert_int_eq(ra_kv_set(&d.params, bad[i][0], bad[i][1]), RA_OK);
        ck_assert_msg(run_fwd(ex, &d, &a) == RA_EINVAL, "example on %s=%s: %s", bad[i][0],
                      bad[i][1], ra_last_error());
        tu_has(ra_last_error(), bad[i][0]);
        ck_assert_msg(run_fwd(host, &d, &b) == RA_EINVAL, "host on %s=%s", bad[i][0], bad[i][1]);
        ra_tensors_clear(&a);
        ra_tensors_clear(&b);
        ra_case_clear(&d);
    }
    ra_case_clear(&c);
    ra_registry_free(r);
}
END_TEST

/* The unit roundoff of each declared class (hand values: 2^-53 binary64,
   2^-24 binary32 and the classes computing at it, 2^-11 TF32's 10
   explicit bits, 2^-8 bf16's 7), and ulp_cls = max|err| / (u rms(ref))
   of a row built by hand. */
START_TEST(special_pclass_unit)
{
    ck_assert(ra_pclass_unit("f64") == 0x1p-53);
    ck_assert(ra_pclass_unit("f32") == 0x1p-24);
    ck_assert(ra_pclass_unit("ieee") == 0x1p-24);
    ck_assert(ra_pclass_unit("tf32x3") == 0x1p-24);
    ck_assert(ra_pclass_unit("tf32") == 0x1p-11);
    ck_assert(ra_pclass_unit("bf16") == 0x1p-8);
    ck_assert(isnan(ra_pclass_unit("fp32")) && isnan(ra_pclass_unit(NULL)));
    ra_row r;
    memset(&r, 0, sizeof r);
    strcpy(r.pclass, "tf32");
    r.m.max_abs = 3 * 0x1p-11;
    r.m.ref_rms = 2;
    ck_assert(isnan(ra_row_ulp_cls(&r))); /* no metrics */
    r.has_metrics = 1;
    ck_assert(ra_row_ulp_cls(&r) == 1.5);
    r.m.ref_rms = 0; /* all-zero reference */
    ck_assert(isinf(ra_row_ulp_cls(&r)));
    r.m.max_abs = 0;
    ck_assert(ra_row_ulp_cls(&r) == 0);
    strcpy(r.pclass, "-");
    ck_assert(isnan(ra_row_ulp_cls(&r)));
}
END_TEST

static Suite *registry_suite(void)
{
    Suite *s = suite_create("registry");
    tu_tcase(s, "special", tu_capture, NULL, special_pclass_unit, special_builtin, special_glob,
             special_add, special_caps_and_table);
    tu_tcase(s, "data", tu_capture, NULL, data_plugins);
    tu_tcase(s, "regress", tu_capture, NULL, regress_plugin_params);
    return s;
}

int main(void) { return tu_run(registry_suite()); }
