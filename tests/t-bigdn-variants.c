/* Tests of the registered bigdn CPU variants: rows, wiring, the quick suite, gates that bite. */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "core/bigdn_case.h"
#include "core/op.h"
#include "core/tensor.h"
#include "cpu/bigdn_variants.h"
#include "cpu/cpu.h"
#include "quick-testutil.h"
#include "testutil.h"

/*
 * The kernels' arithmetic is tested against independent computations in
 * t-bigdn-cpu and t-bigdn-cpu-modes; here the rows around them:
 *
 *   special  the six documented rows are in the CPU list with their op,
 *            class and mode;
 *   data     a row's results are the kernel's on the case's values, bit
 *            for bit, under the op's result names and shapes, in f32;
 *            refusals come from the one case validator;
 *   regress  validate over the shipped quick suite with the shipped gates:
 *            the six rows pass every bigdn row of their op, and copies of
 *            the rows that declare a finer class than their products have
 *            (P2 as ieee, P1 as ieee, P2 as tf32) FAIL: the gates bite.
 *
 * References come through the cache ($RECAUDIT_CACHE).
 */

typedef struct doc_row {
    const char *name, *op, *pclass;
    ra_bigdn_prec mode;
} doc_row;

static const doc_row documented[] = {
    {"bigdn.cpu.f32.p0", "bigdn", "ieee", RA_BIGDN_P0},
    {"bigdn.cpu.f32.p1", "bigdn", "tf32", RA_BIGDN_P1},
    {"bigdn.cpu.f32.p2", "bigdn", "bf16", RA_BIGDN_P2},
    {"bigdn.core.cpu.f32.p0", "bigdn.core", "ieee", RA_BIGDN_P0},
    {"bigdn.core.cpu.f32.p1", "bigdn.core", "tf32", RA_BIGDN_P1},
    {"bigdn.core.cpu.f32.p2", "bigdn.core", "bf16", RA_BIGDN_P2},
};
#define NDOC (sizeof documented / sizeof documented[0])

static const ra_variant *cpu_row(const char *name)
{
    for (size_t i = 0; i < ra_cpu_variant_count(); i++)
        if (strcmp(ra_cpu_variant_at(i)->name, name) == 0)
            return ra_cpu_variant_at(i);
    return NULL;
}

START_TEST(special_rows)
{
    for (size_t i = 0; i < NDOC; i++) {
        const ra_variant *v = cpu_row(documented[i].name);
        ck_assert_msg(v != NULL, "%s is not in the CPU list", documented[i].name);
        ck_assert_str_eq(v->op, documented[i].op);
        ck_assert_str_eq(v->pclass, documented[i].pclass);
        ck_assert_int_eq(v->device, RA_CPU);
        ck_assert_uint_eq(v->caps, RA_FWD | RA_BWD);
        ck_assert_int_eq(((const ra_cpu_bigdn_cfg *)v->data)->mode, documented[i].mode);
    }
}
END_TEST

static void gen(ra_case *c, const char *op, const char *shape, const char *regime, const char *dt)
{
    tu_generate(c, op, shape, regime, dt, 11);
}

static float *floats(const ra_tensor *t)
{
    float *f = malloc((size_t)t->numel * sizeof *f);
    ck_assert_ptr_nonnull(f);
    for (int64_t i = 0; i < t->numel; i++)
        f[i] = (float)ra_tensor_get(t, i);
    return f;
}

/* Each result tensor of role `role` of c's op is in `res`, f32, with the
   shape of its case twin (out: dout's; d<x>: x's), and equals want[k] bit
   for bit, k counting the op's tensors of that role in layout order. */
static void expect_results(const ra_case *c, const ra_tensors *res, ra_role role,
                           float *const *want)
{
    const ra_op *op = ra_op_find(c->op);
    ck_assert_ptr_nonnull(op);
    int k = 0;
    for (const ra_op_tensor *t = op->tensors; t->name; t++) {
        if (t->role != role)
            continue;
        const ra_tensor *r = ra_tensors_find(res, t->name);
        ck_assert_msg(r != NULL, "%s: no %s", c->op, t->name);
        ck_assert_int_eq(r->dtype, RA_F32);
        const ra_tensor *twin =
            ra_tensors_find(&c->tensors, role == RA_ROLE_OUTPUT ? "dout" : t->name + 1);
        ck_assert_ptr_nonnull(twin);
        ck_assert(ra_shape_equal(r->ndim, r->shape, twin->ndim, twin->shape));
        for (int64_t i = 0; i < r->numel; i++)
            ck_assert_msg(ra_tensor_get(r, i) == (double)want[k][i], "%s %s[%lld]: %g, kernel %g",
                          c->op, t->name, (long long)i, ra_tensor_get(r, i), (double)want[k][i]);
        k++;
    }
    ck_assert_int_eq((int)res->n, k);
}

/* Runs row `name` on c and the kernel directly on c's values. */
static void check_wiring(const char *name, const char *op, const char *dt)
{
    ra_case c;
    gen(&c, op, "B=2,F=3,S=5,H=2,D=8", "sana", dt);
    const ra_variant *v = cpu_row(name);
    ck_assert_ptr_nonnull(v);
    ra_bigdn_problem p;
    ck_assert_int_eq(ra_bigdn_problem_init(&p, &c, RA_BIGDN_NEED_COTANGENTS, "case"), RA_OK);
    const ra_bigdn_dims d = {
        p.s.B, p.s.F, p.s.S, p.s.H, p.s.D, (float)p.k_scale, (float)p.norm_eps, (float)p.eps, 0};
    const ra_bigdn_prec m = ((const ra_cpu_bigdn_cfg *)v->data)->mode;
    float *in[RA_BIGDN_NIN], *dout = floats(p.dout), *out[1], *g[RA_BIGDN_NIN] = {NULL};
    for (int j = 0; j < RA_BIGDN_NIN; j++) {
        in[j] = floats(p.in[j]);
        g[j] = malloc((size_t)p.in[j]->numel * sizeof(float));
    }
    out[0] = malloc((size_t)p.dout->numel * sizeof(float));
    if (p.kind == RA_BIGDN_FULL) {
        ck_assert_int_eq(
            ra_cpu_bigdn_forward(&d, m, in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0]),
            RA_OK);
        ck_assert_int_eq(ra_cpu_bigdn_backward(&d, m, in[0], in[1], in[2], in[3], in[4], in[5],
                                               in[6], dout, g[0], g[1], g[2], g[3], g[4]),
                         RA_OK);
    } else {
        ck_assert_int_eq(ra_cpu_bigdn_core_forward(&d, m, in[0], in[1], in[2], in[3], in[4], in[5],
                                                   in[6], out[0]),
                         RA_OK);
        ck_assert_int_eq(ra_cpu_bigdn_core_backward(&d, m, in[0], in[1], in[2], in[3], in[4], in[5],
                                                    in[6], dout, g[0], g[1], g[2], g[3], g[4], g[5],
                                                    g[6]),
                         RA_OK);
    }
    ra_tensors res;
    ra_tensors_init(&res);
    ra_run run = {0, 0, -1, NULL};
    ck_assert_msg(v->forward(v, &c, &res, &run) == RA_OK, "%s", ra_last_error());
    expect_results(&c, &res, RA_ROLE_OUTPUT, out);
    ra_tensors_clear(&res);
    run.threads = 1; /* the kernels' sums have a fixed order: the same bits on one thread */
    ck_assert_msg(v->backward(v, &c, &res, &run) == RA_OK, "%s", ra_last_error());
    expect_results(&c, &res, RA_ROLE_GRADIENT, g);
    ra_tensors_clear(&res);
    for (int j = 0; j < RA_BIGDN_NIN; j++)
        free(in[j]), free(g[j]);
    free(dout), free(out[0]);
    ra_case_clear(&c);
}

START_TEST(data_wiring)
{
    check_wiring("bigdn.cpu.f32.p1", "bigdn", "bf16");
    check_wiring("bigdn.cpu.f32.p2", "bigdn", "f32");
    check_wiring("bigdn.core.cpu.f32.p0", "bigdn.core", "f32");
    check_wiring("bigdn.core.cpu.f32.p2", "bigdn.core", "bf16");
}
END_TEST

/* The rows refuse what the case validator refuses, in its words. */
START_TEST(data_refused)
{
    tu_capture();
    const ra_variant *v = cpu_row("bigdn.cpu.f32.p2");
    ra_case c;
    gen(&c, "bigdn", "B=1,F=2,S=3,H=1,D=4", "default", "f32");
    ra_tensors res;
    ra_tensors_init(&res);
    ra_run run = {0, 0, -1, NULL};
    ra_tensor_free(ra_tensors_take(&c.tensors, "dout"));
    ck_assert_int_eq(v->forward(v, &c, &res, &run), RA_OK); /* no cotangent needed */
    ra_tensors_clear(&res);
    tu_expect_error(v->backward(v, &c, &res, &run), RA_ENOTFOUND, "cpu bigdn", "'dout'");
    ck_assert_int_eq((int)res.n, 0);
    ra_tensor_set(ra_tensors_find(&c.tensors, "beta"), 4, 1.0 / 0.0);
    tu_expect_error(v->forward(v, &c, &res, &run), RA_EINVAL, "'beta'", "[0, 0, 1, 1]");
    ck_assert_int_eq((int)res.n, 0);
    ra_case_clear(&c);
}
END_TEST

/* --- validate over the quick suite ------------------------------------------------------ */

static void validate(ra_rows *rows, const ra_variant *vs, size_t n)
{
    ra_registry *reg;
    ck_assert_int_eq(ra_registry_new_empty(&reg), RA_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(ra_registry_add(reg, &vs[i]) == RA_OK, "%s", ra_last_error());
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    ra_rows_init(rows);
    ck_assert_msg(ra_validate(rows, reg, "bigdn*", &quick, &o) == RA_OK, "%s", ra_last_error());
    ra_registry_free(reg);
}

START_TEST(regress_quick_passes)
{
    ra_variant vs[NDOC];
    for (size_t i = 0; i < NDOC; i++)
        vs[i] = *cpu_row(documented[i].name);
    ra_rows rows;
    validate(&rows, vs, NDOC);
    for (size_t i = 0; i < rows.n; i++)
        ck_assert_msg(rows.v[i].verdict == RA_VERDICT_PASS, "%s %s %s %s %s = %g: %s",
                      rows.v[i].variant, rows.v[i].id.shape, rows.v[i].id.regime, rows.v[i].tensor,
                      rows.v[i].metric, rows.v[i].value, rows.v[i].note);
    /* every row gated on each of its op's quick cases: 2 metrics per
       result tensor (bigdn: out + 5 gradients, bigdn.core: out + 7) */
    for (size_t i = 0; i < NDOC; i++) {
        size_t cases = 0, got = 0;
        for (size_t c = 0; c < quick.n; c++)
            cases += strcmp(quick.rows[c].spec.op, documented[i].op) == 0;
        for (size_t r = 0; r < rows.n; r++)
            got += strcmp(rows.v[r].variant, documented[i].name) == 0;
        const size_t per = strcmp(documented[i].op, "bigdn") == 0 ? 12 : 16;
        ck_assert_msg(cases >= 4, "%s: only %zu quick rows", documented[i].op, cases);
        ck_assert_msg(got == cases * per, "%s: %zu verdict rows, want %zu", documented[i].name, got,
                      cases * per);
    }
    ra_rows_clear(&rows);
}
END_TEST

/* Copies of the rows with the products of one mode declaring the class
   of a finer one: each must fail at least one gate. */
START_TEST(regress_planted_class)
{
    static const struct {
        const char *name, *from, *pclass;
    } planted[] = {
        {"bigdn.planted.p2_as_ieee", "bigdn.cpu.f32.p2", "ieee"},
        {"bigdn.planted.p1_as_ieee", "bigdn.cpu.f32.p1", "ieee"},
        {"bigdn.planted.p2_as_tf32", "bigdn.cpu.f32.p2", "tf32"},
        {"bigdn.core.planted.p2_as_ieee", "bigdn.core.cpu.f32.p2", "ieee"},
        {"bigdn.core.planted.p1_as_ieee", "bigdn.core.cpu.f32.p1", "ieee"},
        {"bigdn.core.planted.p2_as_tf32", "bigdn.core.cpu.f32.p2", "tf32"},
    };
    enum { NP = sizeof planted / sizeof planted[0] };
    ra_variant vs[NP];
    for (size_t i = 0; i < NP; i++) {
        vs[i] = *cpu_row(planted[i].from);
        vs[i].name = planted[i].name;
        vs[i].pclass = planted[i].pclass;
    }
    ra_rows rows;
    validate(&rows, vs, NP);
    for (size_t i = 0; i < NP; i++) {
        size_t fail = 0, ran = 0;
        for (size_t r = 0; r < rows.n; r++) {
            if (strcmp(rows.v[r].variant, planted[i].name) != 0)
                continue;
            ran++;
            ck_assert_str_eq(rows.v[r].pclass, planted[i].pclass);
            fail += rows.v[r].verdict == RA_VERDICT_FAIL;
        }
        ck_assert_msg(ran > 0, "%s did not run", planted[i].name);
        ck_assert_msg(fail > 0, "%s (the products of %s declared %s) passed every gate",
                      planted[i].name, planted[i].from, planted[i].pclass);
    }
    ra_rows_clear(&rows);
}
END_TEST

static Suite *bigdn_variants_suite(void)
{
    Suite *s = suite_create("bigdn-variants");
    tu_tcase(s, "special", NULL, NULL, special_rows);
    tu_tcase(s, "data", NULL, NULL, data_wiring, data_refused);
    tcase_set_timeout(tu_tcase(s, "regress", quick_setup, quick_teardown, regress_quick_passes,
                               regress_planted_class),
                      600);
    return s;
}

int main(void) { return tu_run(bigdn_variants_suite()); }
