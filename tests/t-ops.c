/* Tests of the operation table: every row is complete and agrees with its own hooks. */
#include <config.h>

#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "gradcheck/gradcheck.h"
#include "ref/refop.h"
#include "testutil.h"

/*
 * Generic code trusts the rows, so each row is checked against what its
 * hooks do: a generated case holds exactly the inputs and cotangents the
 * layout lists (optional ones only when a flag asks), identify reads back
 * the spec that generated it, the reference's layout names exactly the
 * outputs and gradients of the table, and every regime of the row can be
 * generated at the row's example shape (or is refused by its spec check).
 * Expected values come from the table itself and from the case files the
 * hooks write, never from a hard-coded operation count.
 */

static size_t count_ops(void)
{
    size_t n = 0;
    while (ra_ops()[n])
        n++;
    return n;
}

START_TEST(special_lookup)
{
    ck_assert_uint_ge(count_ops(), 1);
    for (const ra_op *const *o = ra_ops(); *o; o++) {
        ck_assert_ptr_eq(ra_op_find((*o)->name), *o);
        ck_assert(strchr((*o)->doc, '\n') == NULL); /* one line each */
        const ra_op *got = NULL;
        ck_assert_int_eq(ra_op_require(&got, (*o)->name, "--op"), RA_OK);
        ck_assert_ptr_eq(got, *o);
    }
    ck_assert_ptr_null(ra_op_find("no-such-op"));
    ck_assert_ptr_null(ra_op_find(NULL));
    const ra_op *got;
    /* the message names the known operations */
    tu_expect_error(ra_op_require(&got, "no-such-op", "--op"), RA_ENOTFOUND,
                    "--op 'no-such-op': unknown operation", ra_ops()[0]->name);
}
END_TEST

/* Names, roles and capability bits are well formed and unique. */
START_TEST(special_rows)
{
    for (const ra_op *const *o = ra_ops(); *o; o++) {
        const ra_op *op = *o;
        size_t nin = 0, nout = 0;
        for (const ra_op_tensor *t = op->tensors; t->name; t++) {
            for (const ra_op_tensor *u = t + 1; u->name; u++)
                ck_assert_msg(strcmp(t->name, u->name) != 0, "%s: %s twice", op->name, t->name);
            char d[64];
            snprintf(d, sizeof d, "d%s", t->name);
            const ra_op_tensor *twin = ra_op_tensor_find(op, d);
            /* every output has its cotangent, every differentiable input its gradient */
            if (t->role == RA_ROLE_OUTPUT) {
                nout++;
                ck_assert_msg(twin && twin->role == RA_ROLE_COTANGENT, "%s: no %s", op->name, d);
            }
            if (t->role == RA_ROLE_INPUT && ra_op_input_nondiff(op, t->name)) {
                nin++;
                ck_assert_msg(!twin, "%s: %s has a gradient but is nondiff", op->name, d);
            } else if (t->role == RA_ROLE_INPUT) {
                nin++;
                ck_assert_msg(twin && twin->role == RA_ROLE_GRADIENT, "%s: no %s", op->name, d);
                ck_assert_int_eq(twin->optional, t->optional);
            }
            ck_assert(t->shape && *t->shape);
        }
        for (const char *const *nd = op->nondiff; nd && *nd; nd++) {
            const ra_op_tensor *t = ra_op_tensor_find(op, *nd);
            ck_assert_msg(t && t->role == RA_ROLE_INPUT, "%s: nondiff %s is no input", op->name,
                          *nd);
        }
        ck_assert_uint_ge(nin, 1);
        ck_assert_uint_ge(nout, 1);
        ck_assert(op->regimes && op->regimes[0].name);
        int nflags = 0;
        while (op->flags && op->flags[nflags].name)
            nflags++;
        ck_assert_int_le(nflags, 16);
        unsigned seen = RA_FWD | RA_BWD;
        for (const ra_op_cap *c = op->caps; c && c->name; c++) {
            ck_assert_msg(c->bit >= RA_CAP_OP(0) && (c->bit & (c->bit - 1)) == 0,
                          "%s: cap %s is not one RA_CAP_OP bit", op->name, c->name);
            ck_assert_msg(!(seen & c->bit), "%s: cap bit of %s twice", op->name, c->name);
            seen |= c->bit;
        }
        ck_assert_uint_eq(ra_op_caps_known(op), seen);
        ck_assert_ptr_nonnull(op->ref);
        ck_assert_str_eq(op->ref->name, op->name); /* hooks of this operation */
        if (op->gradcheck)
            ck_assert_str_eq(op->gradcheck->name, op->name);
        ck_assert_ptr_nonnull(op->generate);
        ck_assert_ptr_nonnull(op->identify);
        ck_assert_ptr_nonnull(op->supports);
    }
}
END_TEST

START_TEST(special_caps_format)
{
    const ra_op *op = ra_ops()[0];
    char buf[256];
    ra_op_caps_format(buf, sizeof buf, op, RA_FWD | RA_BWD);
    ck_assert_str_eq(buf, "fwd,bwd");
    ra_op_caps_format(buf, sizeof buf, NULL, RA_FWD | RA_CAP_OP(0));
    ck_assert_str_eq(buf, "fwd,0x100"); /* bits no row names are shown, not dropped */
    ra_op_caps_format(buf, sizeof buf, op, 0);
    ck_assert_str_eq(buf, "");
    /* every named bit prints its name, in the row's order */
    unsigned all = ra_op_caps_known(op);
    ra_op_caps_format(buf, sizeof buf, op, all);
    char want[256] = "fwd,bwd";
    for (const ra_op_cap *c = op->caps; c && c->name; c++)
        snprintf(want + strlen(want), sizeof want - strlen(want), ",%s", c->name);
    ck_assert_str_eq(buf, want);
}
END_TEST

/* A spec of op with every flag set, the example shape and regime r. */
static ra_case_spec spec_of(const ra_op *op, const char *regime, unsigned flags)
{
    ra_case_spec s;
    ra_case_spec_init(&s);
    strcpy(s.op, op->name);
    snprintf(s.shape, sizeof s.shape, "%s", op->shape_example);
    snprintf(s.regime, sizeof s.regime, "%s", regime);
    strcpy(s.dtype, "f32");
    s.seed = 3;
    s.has_seed = 1;
    s.flags = flags;
    s.bwd = 1;
    return s;
}

/* Generated cases hold what the layout says; identify reads the spec back. */
START_TEST(data_generate_identify)
{
    for (const ra_op *const *o = ra_ops(); *o; o++) {
        const ra_op *op = *o;
        unsigned all = 0;
        for (int i = 0; op->flags && op->flags[i].name; i++)
            all |= 1u << i;
        for (const ra_op_item *r = op->regimes; r->name; r++)
            for (int pass = 0; pass < 2; pass++) {
                ra_case_spec s = spec_of(op, r->name, pass ? all : 0);
                if (ra_case_spec_check(&s, "op") != RA_OK)
                    continue; /* the regime needs another shape: refused early, with a reason */
                ra_case c;
                ra_case_init(&c);
                ck_assert_msg(ra_case_spec_generate(&c, &s) == RA_OK, "%s %s: %s", op->name,
                              r->name, ra_last_error());
                size_t expected = 0;
                for (const ra_op_tensor *t = op->tensors; t->name; t++) {
                    int in_case = t->role == RA_ROLE_INPUT || t->role == RA_ROLE_COTANGENT;
                    const ra_tensor *x = ra_tensors_find(&c.tensors, t->name);
                    if (in_case && !t->optional)
                        ck_assert_msg(x != NULL, "%s: %s missing", op->name, t->name);
                    if (!in_case)
                        ck_assert_msg(x == NULL, "%s: %s in a case", op->name, t->name);
                    expected += x != NULL;
                    if (x && t->state)
                        ck_assert_int_eq(x->dtype, RA_F32);
                }
                ck_assert_uint_eq(c.tensors.n, expected); /* nothing outside the layout */
                ra_case_spec back;
                ra_case_spec_from_case(&back, &c, 1);
                ck_assert_str_eq(back.op, s.op);
                ck_assert_str_eq(back.shape, s.shape);
                ck_assert_str_eq(back.regime, s.regime);
                ck_assert_str_eq(back.dtype, s.dtype);
                ck_assert_uint_eq(back.flags, s.flags);
                ck_assert(back.has_seed && back.seed == s.seed);
                ra_case_clear(&c);
            }
    }
}
END_TEST

/* The reference produces exactly the outputs and gradients of the table. */
START_TEST(data_reference_layout)
{
    for (const ra_op *const *o = ra_ops(); *o; o++) {
        const ra_op *op = *o;
        ra_case_spec s = spec_of(op, op->regimes[0].name, 0);
        ck_assert_int_eq(ra_case_spec_check(&s, "op"), RA_OK);
        ra_case c;
        ra_case_init(&c);
        ck_assert_int_eq(ra_case_spec_generate(&c, &s), RA_OK);
        void *state;
        ra_ref_outs layout;
        ck_assert_int_eq(op->ref->prepare(&state, &layout, &c, 1, "case"), RA_OK);
        for (size_t i = 0; i < layout.n; i++) {
            const ra_op_tensor *t = ra_op_tensor_find(op, layout.t[i].name);
            ck_assert_msg(t && (t->role == RA_ROLE_OUTPUT || t->role == RA_ROLE_GRADIENT),
                          "%s: reference tensor %s", op->name, layout.t[i].name);
        }
        for (const ra_op_tensor *t = op->tensors; t->name; t++) {
            if ((t->role != RA_ROLE_OUTPUT && t->role != RA_ROLE_GRADIENT) || t->optional)
                continue;
            int found = 0;
            for (size_t i = 0; i < layout.n; i++)
                found |= strcmp(layout.t[i].name, t->name) == 0;
            ck_assert_msg(found, "%s: the reference lacks %s", op->name, t->name);
        }
        op->ref->release(state);
        ra_case_clear(&c);
    }
}
END_TEST

/* Spec checks: flags by name, unknown ops, regimes and dtypes refused. */
START_TEST(special_spec_refusals)
{
    const ra_op *op = ra_ops()[0];
    ra_case_spec s = spec_of(op, op->regimes[0].name, 0);
    tu_expect_error(ra_case_spec_set_flag(&s, op, "no-such-flag"), RA_EINVAL,
                    "flag 'no-such-flag' is not one of op");
    ra_case_spec bad = s;
    strcpy(bad.regime, "no-such-regime");
    tu_expect_error(ra_case_spec_check(&bad, "op"), RA_EINVAL, "'no-such-regime'");
    bad = s;
    strcpy(bad.dtype, "f7");
    tu_expect_error(ra_case_spec_check(&bad, "op"), RA_EINVAL, "f7");
    bad = s;
    strcpy(bad.op, "no-such-op");
    tu_expect_error(ra_case_spec_check(&bad, "op"), RA_ENOTFOUND, "no-such-op");
    bad = s;
    bad.flags = 1u << 20;
    tu_expect_error(ra_case_spec_check(&bad, "op"), RA_EINVAL, "defines no such flag");
    bad = s;
    strcpy(bad.shape, "nonsense");
    tu_expect_error(ra_case_spec_check(&bad, "op"), RA_EINVAL, "nonsense");
    /* flag names format back in table order */
    for (int i = 0; op->flags && op->flags[i].name; i++)
        ck_assert_int_eq(ra_case_spec_set_flag(&s, op, op->flags[i].name), RA_OK);
    char buf[256], want[256] = "";
    ra_case_spec_flags_format(buf, sizeof buf, &s, " --");
    for (int i = 0; op->flags && op->flags[i].name; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), " --%s", op->flags[i].name);
    ck_assert_str_eq(buf, want);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ops");
    tu_tcase(s, "special", tu_capture, NULL, special_lookup, special_rows,
             special_caps_format, special_spec_refusals);
    tu_tcase(s, "data", tu_capture, NULL, data_generate_identify, data_reference_layout);
    return tu_run(s);
}
