/* Tests of the CPU gdn variants' planted faults and error handling. */

/*
 * Each fault of src/cpu/faults.h must change exactly the tensors it claims
 * (bit-for-bit comparison against the same variant with faults = 0), and
 * by the value faults.h describes where that value has an independent form
 * (the truncated sequence, the sequential fault, o = 0).  Bad
 * configurations and inputs are refused with the right status.
 */

#include "cpu-testutil.h"

/* Runs variant on c with and without the fault: exactly the tensors in
   changed (NULL ended) must differ. */
static void expect_fault(const ra_case *c, unsigned fault, const char *variant,
                         const char *const *changed, const char *note)
{
    result base, f;
    char what[128];
    snprintf(what, sizeof what, "fault 0x%x on %s%s", fault, variant, note);
    run_variant(&base, variant, c, 0);
    run_variant(&f, variant, c, fault);
    expect_changes(&base, &f, changed, what);
    result_clear(&base), result_clear(&f);
}

START_TEST(special_faults)
{
    /* Hv = 2 Hk and a partial last chunk, so every fault has something to
       change; f32 inputs; gates g/16, so that the last chunk reaches dh0
       (with the default gates exp(G) over 64 tokens is ~1e-22 and a change
       in the second chunk cannot show in dh0 in any precision). */
    ra_case c;
    make_case(&c, &(gen){1, 70, 1, 2, 8, 4, RA_F32, 1, 1, 0, 61, 16});
    static const char *const none[] = {NULL};
    static const char *const dbeta[] = {"dbeta", NULL};
    static const char *const ht[] = {"ht", NULL};
    static const char *const dk[] = {"dk", NULL};
    static const char *const all[] = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta", "dh0", NULL};
    /* The adjoint lambda = dL/dS_t evolves by lambda <- a (lambda - beta k
       (lambda^T k)^T) + scale q do^T without reading any state, so dv =
       beta lambda^T k and dh0 are independent of the forward states: a
       forward-only state bug leaves them (correctly) unchanged. */
    static const char *const states[] = {"o", "ht", "dq", "dk", "dg", "dbeta", NULL};
    static const struct {
        unsigned fault;
        const char *variant;
        const char *const *changed;
    } rows[] = {
        {RA_FAULT_DBETA_TERM, "gdn.cpu.f64", dbeta},
        {RA_FAULT_DBETA_TERM, "gdn.cpu.chunk64.tf32", dbeta},
        {RA_FAULT_DECAY_AFTER_UPDATE, "gdn.cpu.f32", states},
        {RA_FAULT_DECAY_AFTER_UPDATE, "gdn.cpu.chunk64.ieee", none},
        {RA_FAULT_TAIL_MASK, "gdn.cpu.chunk64.bf16", all},
        {RA_FAULT_TAIL_MASK, "gdn.cpu.f64", none},
        {RA_FAULT_TF32_AS_IEEE, "gdn.cpu.chunk64.ieee", all},
        {RA_FAULT_TF32_AS_IEEE, "gdn.cpu.chunk128.ieee.schur", all},
        {RA_FAULT_TF32_AS_IEEE, "gdn.cpu.chunk64.tf32", none},
        {RA_FAULT_TF32_AS_IEEE, "gdn.cpu.chunk64.bf16.neumann", none},
        {RA_FAULT_TF32_AS_IEEE, "gdn.cpu.f32", none},
        {RA_FAULT_FINAL_STATE_EARLY, "gdn.cpu.f32", ht},
        {RA_FAULT_FINAL_STATE_EARLY, "gdn.cpu.chunk64.ieee.neumann", ht},
        {RA_FAULT_DK_GROUP_SUM, "gdn.cpu.f64", dk},
        {RA_FAULT_DK_GROUP_SUM, "gdn.cpu.chunk128.bf16.schur", dk},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        expect_fault(&c, rows[i].fault, rows[i].variant, rows[i].changed, "");
    ra_case_clear(&c);
    /* Where a fault's condition is absent it must change nothing: Hv = Hk
       (no group to sum) and T = 128 (no partial chunk for C = 64 or 128). */
    gen o2 = {1, 128, 2, 2, 8, 4, RA_F32, 1, 1, 0, 63, 16};
    make_case(&c, &o2);
    static const struct {
        unsigned fault;
        const char *variant;
    } quiet_rows[] = {
        {RA_FAULT_DK_GROUP_SUM, "gdn.cpu.f32"},
        {RA_FAULT_DK_GROUP_SUM, "gdn.cpu.chunk64.ieee"},
        {RA_FAULT_TAIL_MASK, "gdn.cpu.chunk64.tf32"},
        {RA_FAULT_TAIL_MASK, "gdn.cpu.chunk128.bf16.schur"},
    };
    for (size_t i = 0; i < sizeof quiet_rows / sizeof quiet_rows[0]; i++)
        expect_fault(&c, quiet_rows[i].fault, quiet_rows[i].variant, none, " (condition absent)");
    ra_case_clear(&c);
}
END_TEST

/* The faults do what faults.h says, checked by value. */
START_TEST(special_fault_values)
{
    gen o = {1, 70, 1, 2, 8, 4, RA_F64, 1, 1, 0, 62, 1};
    ra_case c;
    make_case(&c, &o);
    const int T = 70, Hv = 2, V = 4;
    /* TAIL_MASK: the last token (70 = 64 + 6) gets o = 0, earlier ones stay. */
    result base, f;
    run_variant(&base, "gdn.cpu.chunk64.ieee", &c, 0);
    run_variant(&f, "gdn.cpu.chunk64.ieee", &c, RA_FAULT_TAIL_MASK);
    for (int h = 0; h < Hv; h++)
        for (int j = 0; j < V; j++) {
            ck_assert(tu_at(&f.f, "o", ((T - 1) * Hv + h) * V + j) == 0.0);
            ck_assert(tu_at(&f.f, "o", ((T - 2) * Hv + h) * V + j) ==
                      tu_at(&base.f, "o", ((T - 2) * Hv + h) * V + j));
        }
    result_clear(&base), result_clear(&f);
    /* FINAL_STATE_EARLY: ht equals the correct ht of the case cut to T-1 tokens. */
    gen o2 = o;
    o2.T = T - 1;
    ra_case c2;
    make_case(&c2, &o2); /* same seed: a different draw order, so copy instead */
    for (size_t i = 0; i < c2.tensors.n; i++) {
        ra_tensor *x = c2.tensors.items[i], *src = tu_tensor(&c.tensors, x->name);
        memcpy(x->data, src->data, x->nbytes); /* leading T-1 tokens / full states */
    }
    run_variant(&base, "gdn.cpu.f64", &c2, 0);
    run_variant(&f, "gdn.cpu.f64", &c, RA_FAULT_FINAL_STATE_EARLY);
    ck_assert(identical(tu_tensor(&base.f, "ht"), tu_tensor(&f.f, "ht")));
    result_clear(&f);
    run_variant(&f, "gdn.cpu.chunk64.ieee", &c, RA_FAULT_FINAL_STATE_EARLY);
    ck_assert_msg(max_rel(tu_tensor(&f.f, "ht"), tu_tensor(&base.f, "ht")) < 1e-5,
                  "chunk early ht");
    result_clear(&base), result_clear(&f);
    ra_case_clear(&c2);
    /* DBETA_TERM: the chunk analogue equals the sequential faulty dbeta. */
    ra_cpu_gdn_cfg cf = chunk_f64(64, RA_CPU_INV_FWDSUBST), sf = seq_f64;
    cf.faults = sf.faults = RA_FAULT_DBETA_TERM;
    result s;
    ra_run run = {.elapsed_ms = -1};
    ra_tensors_init(&base.b), ra_tensors_init(&s.b);
    ck_assert_int_eq(ra_cpu_gdn_backward(&cf, &c, &base.b, &run), RA_OK);
    ck_assert_int_eq(ra_cpu_gdn_backward(&sf, &c, &s.b, &run), RA_OK);
    ck_assert(max_rel(tu_tensor(&base.b, "dbeta"), tu_tensor(&s.b, "dbeta")) < 1e-12);
    ra_tensors_clear(&base.b), ra_tensors_clear(&s.b);
    ra_case_clear(&c);
}
END_TEST

START_TEST(special_errors)
{
    ra_case c;
    make_case(&c, &(gen){1, 8, 1, 1, 4, 4, RA_F32, 0, 0, 0, 81, 1});
    ra_error_handler_t *old = ra_set_error_handler(tu_handler);
    ra_tensors out;
    ra_tensors_init(&out);
    ra_cpu_gdn_cfg bad = {RA_CPU_CHUNK,        1,      64,    RA_CPU_ROUND_TF32,
                          RA_CPU_INV_FWDSUBST, RA_F64, RA_F64, 0, 0};
    ck_assert_int_eq(ra_cpu_gdn_forward(&bad, &c, &out, NULL), RA_EINVAL);
    bad = chunk_f64(0, RA_CPU_INV_FWDSUBST);
    ck_assert_int_eq(ra_cpu_gdn_forward(&bad, &c, &out, NULL), RA_EINVAL);
    ck_assert_uint_eq(out.n, 0);
    ra_tensor *d = ra_tensors_take(&c.tensors, "do");
    ra_tensor_free(d);
    ck_assert_int_eq(ra_cpu_gdn_backward(&seq_f64, &c, &out, NULL), RA_ENOTFOUND);
    ck_assert_int_eq(ra_cpu_gdn_forward(&seq_f64, &c, &out, NULL), RA_OK);
    ra_tensors_clear(&out);
    /* A zero key row with l2eps = 0: normalisation undefined, refused. */
    ra_kv_set(&c.params, "l2norm", "1");
    ra_kv_set(&c.params, "l2eps", "0");
    ra_tensor *k = tu_tensor(&c.tensors, "k");
    for (int i = 0; i < 4; i++)
        ra_tensor_set(k, 3 * 4 + i, 0.0);
    ck_assert_int_eq(ra_cpu_gdn_forward(&seq_f64, &c, &out, NULL), RA_EINVAL);
    ck_assert_msg(strstr(ra_last_error(), "'k' row [0, 3, 0]") != NULL, "%s", ra_last_error());
    ra_kv_set(&c.params, "l2eps", "1e-6");
    ck_assert_int_eq(ra_cpu_gdn_forward(&seq_f64, &c, &out, NULL), RA_OK);
    ra_tensors_clear(&out);
    float a[4] = {0}, t[4];
    ck_assert_int_eq(ra_cpu_gdn_inverse_f32(t, a, 0, RA_CPU_INV_SCHUR, RA_CPU_ROUND_IEEE),
                     RA_EINVAL);
    ra_set_error_handler(old);
    /* The table: unique names in the gdn.cpu. family, each with its
       configuration as its data, none with a planted fault. */
    ck_assert_uint_ge(ra_cpu_gdn_nvariants, 1);
    for (size_t i = 0; i < ra_cpu_gdn_nvariants; i++) {
        const ra_variant *v = &ra_cpu_gdn_variants[i];
        ck_assert_ptr_eq(ra_cpu_gdn_variant(v->name), v);
        ck_assert(strncmp(v->name, "gdn.cpu.", 8) == 0);
        const ra_cpu_gdn_cfg *cfg = ra_cpu_gdn_variant_cfg(v->name);
        ck_assert_ptr_eq(cfg, v->data);
        ck_assert_uint_eq(cfg->faults, 0);
    }
    ck_assert_ptr_null(ra_cpu_gdn_variant("gdn.cpu.nope"));
    ra_case_clear(&c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cpu-faults");
    tu_tcase(s, "special", NULL, NULL, special_faults, special_fault_values, special_errors);
    return s;
}

int main(void) { return tu_run(suite()); }
