/* Check suite for gdn shapes and case validation (src/core/gdn_case.c). */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gdn_case.h"
#include "testutil.h"

/*
 * Cases are built by hand here (tensor by tensor, shapes from the Tensors
 * table of docs/gdn.md), then broken one field at a time; each refusal must
 * name the tensor (and axis or element) or the shape field at fault.
 * Expected multi-indices and defaults are worked out in the comments.
 */

/* --- shapes ------------------------------------------------------------------ */

START_TEST(special_shape_accepts)
{
    ra_gdn_shape s;
    ck_assert_int_eq(ra_gdn_shape_parse(&s, "B=1,T=64,Hk=1,Hv=2,K=16,V=32"), RA_OK);
    ck_assert(s.B == 1 && s.T == 64 && s.Hk == 1 && s.Hv == 2 && s.K == 16 && s.V == 32);
    ck_assert_int_eq(ra_gdn_shape_parse(&s, "V=8,K=4,Hv=6,Hk=3,T=5,B=2"), RA_OK);
    ck_assert(s.B == 2 && s.T == 5 && s.Hk == 3 && s.Hv == 6 && s.K == 4 && s.V == 8);
    /* H sets Hk and Hv, D sets K and V. */
    ck_assert_int_eq(ra_gdn_shape_parse(&s, "B=1,T=7,H=4,D=128"), RA_OK);
    ck_assert(s.Hk == 4 && s.Hv == 4 && s.K == 128 && s.V == 128);
    char buf[128];
    ra_gdn_shape_format(buf, sizeof buf, &s);
    ck_assert_str_eq(buf, "B=1,T=7,Hk=4,Hv=4,K=128,V=128");
    /* The canonical text parses back to the same shape. */
    ra_gdn_shape t;
    ck_assert_int_eq(ra_gdn_shape_parse(&t, buf), RA_OK);
    ck_assert(memcmp(&s, &t, sizeof s) == 0);
    ck_assert_int_eq(tu_nerr, 0);
}
END_TEST

START_TEST(special_shape_refuses)
{
    ra_gdn_shape s;
    struct {
        const char *text, *m1, *m2;
    } bad[] = {
        {"B=1,T=64,Hk=1,Hv=2,K=16", "missing V", NULL},
        {"T=64,Hk=1,Hv=2,K=16,V=16", "missing B", NULL},
        {"B=1,T=64,Hk=1,Hv=2,K=16,V=16,B=2", "'B' given twice", NULL},
        {"B=1,T=0,Hk=1,Hv=2,K=16,V=16", "T must be a positive integer", "'0'"},
        {"B=1,T=64,Hk=1,Hv=2,K=-16,V=16", "K must be a positive integer", "'-16'"},
        {"B=1,T=64,Hk=1,Hv=2,K=abc,V=16", "K must be a positive integer", "'abc'"},
        {"B=1,T=64,Hk=1,Hv=2,K=16x,V=16", "K must be a positive integer", "'16x'"},
        {"B=1,T=64,Hk=1,Hv=2,K=,V=16", "K must be a positive integer", NULL},
        {"B=1,T=99999999999,Hk=1,Hv=2,K=16,V=16", "T must be a positive integer", NULL},
        {"B=1,T=64,Hk=2,Hv=3,K=16,V=16", "Hv=3", "Hk=2"},
        {"B=1,T=64,Hk=1,Hv=2,K=16,V=16,", "trailing comma", NULL},
        {"B=1,T=64,,Hk=1,Hv=2,K=16,V=16", "not KEY=VALUE", NULL},
        {"B=1,T=64,Hk=1,Hv=2,K=16,V16", "'V16' is not KEY=VALUE", NULL},
        {"B=1,T=64,Q=1,Hv=2,K=16,V=16", "unknown key 'Q'", NULL},
        {"B=1,T=64,H=2,Hk=2,K=16,V=16", "H or Hk/Hv", NULL},
        {"B=1,T=64,H=2,D=2,V=16", "D or K/V", NULL},
        {"", "empty", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(ra_gdn_shape_parse(&s, bad[i].text) == RA_EINVAL, "accepted '%s'",
                      bad[i].text);
        tu_has(ra_last_error(), bad[i].m1, bad[i].m2);
    }
    ck_assert_int_eq(ra_gdn_shape_parse(&s, NULL), RA_EINVAL);
    ck_assert_int_eq(tu_nerr, (int)(sizeof bad / sizeof bad[0]) + 1);
}
END_TEST

/* --- problems ------------------------------------------------------------------- */

/* A valid case B=1, T=3, Hk=1, Hv=2, K=4, V=5, all f32 and 0.25; h0, do,
   dht as `with` (TU_H0, TU_DO, TU_DHT) asks. */
static void make_case(ra_case *c, unsigned with)
{
    const ra_gdn_shape s = {1, 3, 1, 2, 4, 5};
    tu_gdn_case(c, &s, RA_F32, with);
    for (size_t i = 0; i < c->tensors.n; i++)
        for (int64_t j = 0; j < c->tensors.items[i]->numel; j++)
            ra_tensor_set(c->tensors.items[i], j, 0.25);
}

/* Replaces tensor `name` by a zero tensor of another shape. */
static void reshape(ra_case *c, const char *name, int ndim, const int64_t *shape)
{
    tu_add(&c->tensors, name, RA_F32, ndim, shape, NULL);
}

START_TEST(special_problem_valid)
{
    ra_case c;
    make_case(&c, TU_H0 | TU_DO | TU_DHT);
    ra_gdn_problem p;
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, RA_GDN_NEED_COTANGENTS, "case.st"), RA_OK);
    ck_assert(p.s.B == 1 && p.s.T == 3 && p.s.Hk == 1 && p.s.Hv == 2 && p.s.K == 4 && p.s.V == 5);
    ck_assert(p.q == ra_tensors_find(&c.tensors, "q") && p.h0 && p.do_ && p.dht);
    /* Defaults: scale K^-1/2 = 1/2, l2norm false, l2eps 1e-6; no texts. */
    ck_assert(p.scale == 0.5 && p.l2norm == 0 && p.l2eps == 1e-6);
    ck_assert(p.scale_text == NULL && p.l2eps_text == NULL);
    /* Given parameters are read, and their texts kept for MPFR. */
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "0.1"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "true"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c.params, "l2eps", "0"), RA_OK);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "case.st"), RA_OK);
    ck_assert(p.scale == 0.1 && p.l2norm == 1 && p.l2eps == 0.0);
    ck_assert_str_eq(p.scale_text, "0.1");
    ck_assert_str_eq(p.l2eps_text, "0");
    ra_case_clear(&c);
    /* Optional tensors absent: fine without the cotangent flag. */
    make_case(&c, 0);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, NULL), RA_OK);
    ck_assert(p.h0 == NULL && p.do_ == NULL && p.dht == NULL);
    ck_assert_int_eq(tu_nerr, 0);
    ra_case_clear(&c);
    /* Grouped value heads: Hk = 2, Hv = 4; value head 3 reads key head
       3 / (4 / 2) = 1. */
    ra_gdn_shape s = {1, 1, 2, 4, 1, 1};
    ck_assert_int_eq(ra_gdn_key_head(&s, 3), 1);
    ck_assert_int_eq(ra_gdn_key_head(&s, 1), 0);
}
END_TEST

START_TEST(special_problem_missing)
{
    const char *req[] = {"q", "k", "v", "g", "beta"};
    for (int i = 0; i < 5; i++) {
        ra_case c;
        make_case(&c, TU_DO);
        ra_tensor_free(ra_tensors_take(&c.tensors, req[i]));
        ra_gdn_problem p;
        ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "in.st"), RA_ENOTFOUND);
        char want[32];
        snprintf(want, sizeof want, "'%s'", req[i]);
        tu_has(ra_last_error(), "in.st", want);
        ra_case_clear(&c);
    }
    ra_case c;
    make_case(&c, 0);
    ra_gdn_problem p;
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, RA_GDN_NEED_COTANGENTS, "in.st"), RA_ENOTFOUND);
    tu_has(ra_last_error(), "in.st", "'do'");
    /* Wrong operation. */
    ck_assert_int_eq(ra_case_set_op(&c, "glr"), RA_OK);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "in.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'glr'", "'gdn'");
    ra_case_clear(&c);
    make_case(&c, 0);
    free(c.op);
    c.op = NULL;
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "in.st"), RA_EINVAL);
    ra_case_clear(&c);
}
END_TEST

START_TEST(special_problem_shapes)
{
    struct {
        const char *name;
        int ndim;
        int64_t shape[4];
        const char *m1, *m2;
    } bad[] = {
        {"k", 4, {1, 3, 1, 6}, "'k' axis 3 (K) is 6", "expected 4"},
        {"v", 4, {2, 3, 2, 5}, "'v' axis 0 (B) is 2", NULL},
        {"g", 3, {1, 4, 2}, "'g' axis 1 (T) is 4", NULL},
        {"beta", 2, {1, 3}, "'beta' has shape [1, 3]", "expected 3 dims"},
        {"h0", 4, {1, 2, 5, 5}, "'h0' axis 2 (K) is 5", NULL},
        {"dht", 4, {1, 2, 4, 4}, "'dht' axis 3 (V) is 4", NULL},
        {"do", 4, {1, 3, 1, 5}, "'do' axis 2 (Hv) is 1", NULL},
        {"q", 3, {1, 3, 1}, "'q' has 3 dims", NULL},
        {"v", 4, {1, 3, 2, 0}, "empty axis", NULL},
        /* Hk = 2 with Hv = 3 (q and k agree with each other). */
        {"v", 4, {1, 3, 3, 5}, "Hv=3", "Hk=2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ra_case c;
        make_case(&c, TU_H0 | TU_DO | TU_DHT);
        reshape(&c, bad[i].name, bad[i].ndim, bad[i].shape);
        if (i == sizeof bad / sizeof bad[0] - 1) { /* q, k with Hk = 2 */
            const int64_t qk[4] = {1, 3, 2, 4};
            reshape(&c, "q", 4, qk);
            reshape(&c, "k", 4, qk);
        }
        ra_gdn_problem p;
        ck_assert_msg(ra_gdn_problem_init(&p, &c, 0, "x.st") == RA_EINVAL, "accepted case %zu", i);
        tu_has(ra_last_error(), bad[i].m1, bad[i].m2);
        tu_has(ra_last_error(), "x.st");
        ra_case_clear(&c);
    }
}
END_TEST

START_TEST(special_problem_values)
{
    ra_case c;
    make_case(&c, TU_H0 | TU_DO);
    ra_gdn_problem p;
    /* v [1, 3, 2, 5]: element [0, 2, 1, 3] is flat ((0*3 + 2)*2 + 1)*5 + 3 = 28. */
    ra_tensor *v = ra_tensors_find(&c.tensors, "v");
    ra_tensor_set(v, 28, NAN);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'v' element [0, 2, 1, 3] is NaN", "n.st");
    ra_tensor_set(v, 28, 1.0);
    /* g [1, 3, 2]: [0, 1, 1] is flat 3. */
    ra_tensor_set(ra_tensors_find(&c.tensors, "g"), 3, INFINITY);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'g' element [0, 1, 1] is +Inf");
    ra_tensor_set(ra_tensors_find(&c.tensors, "g"), 3, 0.0);
    /* h0 [1, 2, 4, 5]: the last element [0, 1, 3, 4] is flat 39. */
    ra_tensor_set(ra_tensors_find(&c.tensors, "h0"), 39, -INFINITY);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'h0' element [0, 1, 3, 4] is -Inf");
    ra_tensor_set(ra_tensors_find(&c.tensors, "h0"), 39, 0.0);
    /* Cotangents are checked too. */
    ra_tensor_set(ra_tensors_find(&c.tensors, "do"), 0, NAN);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'do' element [0, 0, 0, 0] is NaN");
    ra_tensor_set(ra_tensors_find(&c.tensors, "do"), 0, 0.0);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_OK);
    /* Malformed parameters name the parameter. */
    ck_assert_int_eq(ra_kv_set(&c.params, "l2norm", "maybe"), RA_OK);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'l2norm'", "'maybe'");
    ra_kv_remove(&c.params, "l2norm");
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "abc"), RA_OK);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'scale'", "'abc'");
    ck_assert_int_eq(ra_kv_set(&c.params, "scale", "inf"), RA_OK);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    ra_kv_remove(&c.params, "scale");
    ck_assert_int_eq(ra_kv_set(&c.params, "l2eps", "-1e-6"), RA_OK);
    ck_assert_int_eq(ra_gdn_problem_init(&p, &c, 0, "n.st"), RA_EINVAL);
    tu_has(ra_last_error(), "'l2eps'");
    ra_case_clear(&c);
}
END_TEST

static Suite *gdn_case_suite(void)
{
    Suite *s = suite_create("gdn-case");
    tu_tcase(s, "special", tu_capture, NULL, special_shape_accepts, special_shape_refuses,
             special_problem_valid, special_problem_missing, special_problem_shapes,
             special_problem_values);
    return s;
}

int main(void) { return tu_run(gdn_case_suite()); }
