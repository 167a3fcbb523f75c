/* Sensitivity of the quick suite and gates: every planted defect must fail validate. */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "cpu/faults.h"

/*
 * Each test runs the validate entry point (ra_validate) over the shipped
 * quick suite with the shipped gates, on the CPU variants that honour one
 * planted defect (src/cpu/faults.h), with ra_run.faults set to that bit,
 * and expects every one of those variants to fail at least one row on the
 * tensor the defect corrupts.  The same variants with faults = 0 pass
 * every row (clean).  If a defect gets through, the fix is a better suite
 * row or gate, never a weaker test.
 *
 * References come through the cache ($RECAUDIT_CACHE), so after the first
 * test each suite row costs a file read.
 */

static void quiet(const char *reason, const char *file, int line, ra_status code)
{
    (void)reason, (void)file, (void)line, (void)code;
}

static ra_registry *reg;
static ra_gates gates;
static ra_suite quick;

static void setup(void)
{
    ra_set_error_handler(quiet);
    ck_assert_int_eq(ra_registry_new(&reg), RA_OK);
    ra_gates_init(&gates);
    ck_assert_msg(ra_gates_load(&gates, NULL) == RA_OK, "%s", ra_last_error());
    ra_suite_init(&quick);
    ck_assert_msg(ra_suite_load(&quick, "quick") == RA_OK, "%s", ra_last_error());
}

static void teardown(void)
{
    ra_suite_clear(&quick);
    ra_gates_clear(&gates);
    ra_registry_free(reg);
}

static const char *const all_variants[] = {"gdn.cpu.f64",
                                           "gdn.cpu.f32",
                                           "gdn.cpu.chunk64.ieee",
                                           "gdn.cpu.chunk64.tf32",
                                           "gdn.cpu.chunk64.bf16",
                                           "gdn.cpu.chunk64.ieee.neumann",
                                           "gdn.cpu.chunk64.tf32.neumann",
                                           "gdn.cpu.chunk64.bf16.neumann",
                                           "gdn.cpu.chunk128.ieee.schur",
                                           "gdn.cpu.chunk128.tf32.schur",
                                           "gdn.cpu.chunk128.bf16.schur",
                                           NULL};

/* Runs validate quick on the variants matching glob with faults. */
static void run(ra_rows *rows, const char *glob, unsigned faults)
{
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    o.faults = faults;
    ra_rows_init(rows);
    ck_assert_msg(ra_validate(rows, reg, glob, &quick, &o) == RA_OK, "%s", ra_last_error());
}

/* Every variant in names failed a row on tensor (any tensor if NULL). */
static void expect_caught(const ra_rows *rows, const char *const *names, const char *tensor,
                          const char *defect)
{
    for (const char *const *v = names; *v; v++) {
        size_t fails = 0, on_tensor = 0, pass = 0;
        for (size_t i = 0; i < rows->n; i++) {
            const ra_row *r = &rows->v[i];
            if (strcmp(r->variant, *v) != 0)
                continue;
            pass += r->verdict == RA_VERDICT_PASS;
            if (r->verdict != RA_VERDICT_FAIL)
                continue;
            fails++;
            on_tensor += !tensor || strcmp(r->tensor, tensor) == 0;
        }
        ck_assert_msg(pass + fails > 0, "%s: variant %s did not run", defect, *v);
        ck_assert_msg(on_tensor > 0, "%s: %s not caught%s%s (%zu failing rows elsewhere)", defect,
                      *v, tensor ? " on " : "", tensor ? tensor : "", fails);
    }
}

START_TEST(regress_clean)
{
    ra_rows rows;
    run(&rows, "gdn.cpu.*", 0);
    for (size_t i = 0; i < rows.n; i++)
        ck_assert_msg(rows.v[i].verdict != RA_VERDICT_FAIL, "clean %s %s %s %s %s = %g: %s",
                      rows.v[i].variant, rows.v[i].id.shape, rows.v[i].id.regime, rows.v[i].tensor,
                      rows.v[i].metric, rows.v[i].value, rows.v[i].note);
    /* Every variant passed rows on every suite row (case), except that
       NKI's algorithms (neumann, schur: unit-keys requirement) skip the
       raw-keys rows, and only those. */
    for (const char *const *v = all_variants; *v; v++)
        for (size_t c = 0; c < quick.n; c++) {
            size_t pass = 0, skip = 0;
            for (size_t i = 0; i < rows.n; i++) {
                const ra_row *r = &rows.v[i];
                if (strcmp(r->variant, *v) || strcmp(r->id.shape, quick.rows[c].shape) ||
                    strcmp(r->id.regime, quick.rows[c].regime))
                    continue;
                pass += r->verdict == RA_VERDICT_PASS;
                skip += r->verdict == RA_VERDICT_SKIP;
            }
            int nki = strstr(*v, "neumann") || strstr(*v, "schur");
            if (nki && strcmp(quick.rows[c].regime, "raw-keys") == 0 && !quick.rows[c].l2norm)
                ck_assert_msg(skip == 1 && pass == 0, "clean: %s on raw keys: %zu skip, %zu pass",
                              *v, skip, pass);
            else
                ck_assert_msg(pass > 0 && skip == 0,
                              "clean: %s on suite line %d: %zu pass, %zu skip", *v,
                              quick.rows[c].line, pass, skip);
        }
    ra_rows_clear(&rows);
}
END_TEST

START_TEST(regress_dbeta_term)
{
    ra_rows rows;
    run(&rows, "gdn.cpu.*", RA_FAULT_DBETA_TERM);
    expect_caught(&rows, all_variants, "dbeta", "dbeta missing a term");
    ra_rows_clear(&rows);
}
END_TEST

START_TEST(regress_decay_after_update)
{
    static const char *const seq[] = {"gdn.cpu.f64", "gdn.cpu.f32", NULL};
    ra_rows rows;
    run(&rows, "gdn.cpu.f[36][24]", RA_FAULT_DECAY_AFTER_UPDATE);
    expect_caught(&rows, seq, "o", "decay after the delta update");
    expect_caught(&rows, seq, "ht", "decay after the delta update");
    ra_rows_clear(&rows);
}
END_TEST

START_TEST(regress_tail_mask)
{
    ra_rows rows;
    run(&rows, "gdn.cpu.chunk*", RA_FAULT_TAIL_MASK);
    expect_caught(&rows, all_variants + 2, "o", "tail mask off by one");
    expect_caught(&rows, all_variants + 2, "ht", "tail mask off by one");
    ra_rows_clear(&rows);
}
END_TEST

START_TEST(regress_tf32_as_ieee)
{
    static const char *const ieee[] = {"gdn.cpu.chunk64.ieee", "gdn.cpu.chunk64.ieee.neumann",
                                       "gdn.cpu.chunk128.ieee.schur", NULL};
    ra_rows rows;
    run(&rows, "gdn.cpu.chunk*.ieee*", RA_FAULT_TF32_AS_IEEE);
    expect_caught(&rows, ieee, "o", "TF32 rounding in an ieee variant");
    ra_rows_clear(&rows);
}
END_TEST

START_TEST(regress_final_state_early)
{
    ra_rows rows;
    run(&rows, "gdn.cpu.*", RA_FAULT_FINAL_STATE_EARLY);
    expect_caught(&rows, all_variants, "ht", "final state one step early");
    ra_rows_clear(&rows);
}
END_TEST

START_TEST(regress_dk_group_sum)
{
    ra_rows rows;
    run(&rows, "gdn.cpu.*", RA_FAULT_DK_GROUP_SUM);
    expect_caught(&rows, all_variants, "dk", "dk without the group sum");
    ra_rows_clear(&rows);
}
END_TEST

static Suite *sensitivity_suite(void)
{
    Suite *s = suite_create("sensitivity");
    TCase *regress = tcase_create("regress");
    tcase_add_checked_fixture(regress, setup, teardown);
    tcase_set_timeout(regress, 600);
    tcase_add_test(regress, regress_clean);
    tcase_add_test(regress, regress_dbeta_term);
    tcase_add_test(regress, regress_decay_after_update);
    tcase_add_test(regress, regress_tail_mask);
    tcase_add_test(regress, regress_tf32_as_ieee);
    tcase_add_test(regress, regress_final_state_early);
    tcase_add_test(regress, regress_dk_group_sum);
    suite_add_tcase(s, regress);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sensitivity_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
