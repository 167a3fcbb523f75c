/* Sensitivity of the quick suite and gates: every planted defect must fail validate. */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "cpu/faults.h"
#include "core/gen_gdn.h"
#include "cpu/gdn_variants.h"
#include "quick-testutil.h"
#include "testutil.h"

/*
 * Each test runs the validate entry point (ra_validate) over the shipped
 * quick suite with the shipped gates, on the CPU variants that honour one
 * planted defect (src/cpu/faults.h): rows of the test's own, copies of the
 * built-in rows (same names and declared classes, so the same gates) whose configuration has
 * that fault bit set.  It expects every one of those variants to fail at
 * least one row on the
 * tensor the defect corrupts.  The same variants with faults = 0 pass
 * every row (clean).  If a defect gets through, the fix is a better suite
 * row or gate, never a weaker test.
 *
 * References come through the cache ($RECAUDIT_CACHE), so after the first
 * test each suite row costs a file read.
 */

/* Runs validate on suite (run: the quick suite) with the CPU gdn variants
   matching glob, each with the faults planted in a copy of its
   configuration. */
static void run_on(ra_rows *rows, const char *glob, unsigned faults, const ra_suite *suite)
{
    ra_registry *reg;
    ck_assert_int_eq(ra_registry_new_empty(&reg), RA_OK);
    ra_cpu_gdn_cfg *cfgs = calloc(ra_cpu_gdn_nvariants, sizeof *cfgs);
    ck_assert_ptr_nonnull(cfgs);
    for (size_t i = 0; i < ra_cpu_gdn_nvariants; i++) {
        ra_variant v = ra_cpu_gdn_variants[i];
        cfgs[i] = *(const ra_cpu_gdn_cfg *)v.data;
        cfgs[i].faults = faults;
        v.data = &cfgs[i];
        ck_assert_int_eq(ra_registry_add(reg, &v), RA_OK);
    }
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    o.iso.in_process = 1; /* the planted faults stay in bounds; isolation: t-isolate */
    ra_rows_init(rows);
    ck_assert_msg(ra_validate(rows, reg, glob, suite, &o) == RA_OK, "%s", ra_last_error());
    ra_registry_free(reg);
    free(cfgs);
}

static void run(ra_rows *rows, const char *glob, unsigned faults)
{
    run_on(rows, glob, faults, &quick);
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
    for (const char *const *v = tu_cpu_variants; *v; v++)
        for (size_t c = 0; c < quick.n; c++) {
            if (strcmp(quick.rows[c].spec.op, "gdn") != 0)
                continue; /* the gdn variants serve gdn rows only */
            size_t pass = 0, skip = 0;
            if (strcmp(quick.rows[c].spec.op, "gdn") != 0) /* other ops' rows */
                continue;
            for (size_t i = 0; i < rows.n; i++) {
                const ra_row *r = &rows.v[i];
                if (strcmp(r->variant, *v) || strcmp(r->id.shape, quick.rows[c].spec.shape) ||
                    strcmp(r->id.regime, quick.rows[c].spec.regime))
                    continue;
                pass += r->verdict == RA_VERDICT_PASS;
                skip += r->verdict == RA_VERDICT_SKIP;
            }
            int nki = strstr(*v, "neumann") || strstr(*v, "schur");
            char comps[RA_SPEC_REGIME_MAX + 2]; /* raw-keys alone or in a composite */
            snprintf(comps, sizeof comps, "+%s+", quick.rows[c].spec.regime);
            if (nki && strstr(comps, "+raw-keys+") &&
                !(quick.rows[c].spec.flags & RA_GDN_FLAG_L2NORM))
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

/* A planted defect: the variants (glob, and the list each of which must
   be caught) and the tensors it must be caught on. */
typedef struct defect {
    unsigned fault;
    const char *glob;
    const char *const *variants;
    const char *tensors[2]; /* the second may be NULL */
    const char *what;
} defect;

static void expect_defect_caught(const defect *d)
{
    ra_rows rows;
    run(&rows, d->glob, d->fault);
    for (int i = 0; i < 2 && d->tensors[i]; i++)
        expect_caught(&rows, d->variants, d->tensors[i], d->what);
    ra_rows_clear(&rows);
}

/* The variants honouring a defect: every CPU variant, the sequential
   ones, the chunked ones (all but the first two), the ieee ones. */
static const char *const seq[] = {"gdn.cpu.f64", "gdn.cpu.f32", NULL};
static const char *const ieee[] = {"gdn.cpu.chunk64.ieee", "gdn.cpu.chunk64.ieee.neumann",
                                   "gdn.cpu.chunk128.ieee.schur", NULL};
#define ALL tu_cpu_variants
#define CHUNKED (tu_cpu_variants + 2)

static const defect dbeta_term = {
    RA_FAULT_DBETA_TERM, "gdn.cpu.*", ALL, {"dbeta"}, "dbeta missing a term"};
static const defect decay_after_update = {RA_FAULT_DECAY_AFTER_UPDATE,
                                          "gdn.cpu.f[36][24]",
                                          seq,
                                          {"o", "ht"},
                                          "decay after the delta update"};
static const defect tail_mask = {
    RA_FAULT_TAIL_MASK, "gdn.cpu.chunk*", CHUNKED, {"o", "ht"}, "tail mask off by one"};
static const defect tf32_as_ieee = {
    RA_FAULT_TF32_AS_IEEE, "gdn.cpu.chunk*.ieee*", ieee, {"o"}, "TF32 rounding in an ieee variant"};
static const defect final_state_early = {
    RA_FAULT_FINAL_STATE_EARLY, "gdn.cpu.*", ALL, {"ht"}, "final state one step early"};
static const defect dk_group_sum = {
    RA_FAULT_DK_GROUP_SUM, "gdn.cpu.*", ALL, {"dk"}, "dk without the group sum"};

START_TEST(regress_dbeta_term) { expect_defect_caught(&dbeta_term); }
END_TEST

START_TEST(regress_decay_after_update) { expect_defect_caught(&decay_after_update); }
END_TEST

START_TEST(regress_tail_mask) { expect_defect_caught(&tail_mask); }
END_TEST

START_TEST(regress_tf32_as_ieee) { expect_defect_caught(&tf32_as_ieee); }
END_TEST

START_TEST(regress_final_state_early) { expect_defect_caught(&final_state_early); }
END_TEST

START_TEST(regress_dk_group_sum) { expect_defect_caught(&dk_group_sum); }
END_TEST

/* Defects next to their gates.  The quick suite's planted defects give
   errors of 1e-3 and more, far past every gate, so a gate loosened 100x
   would still catch them; these cases put a defect's whole error within
   about 3-10x of its class's thresholds (measured: every gated row of the
   variant below 30x its threshold, asserted below), so any loosening by
   30x or more lets the defect through and fails this test.  One short
   case (T = 16, K = V = 16, default regime, f32 inputs) and
   - TF32 operands in the ieee variants: errors of the TF32 class (about
     5e-4) against the ieee gates (5e-5 rel_rms, 1e-4 max_rel), measured
     4x (o max_rel) to 9x (o rel_rms);
   - the dropped dbeta term in the bf16 variants, whose own rounding is
     within 10x of the defect there: dbeta measured 6.7x its 8e-2 max_rel
     gate;
   - the dropped dbeta term in the tf32 variants at T = 100, K = V = 32
     (the quick suite's first row, but alone): measured at most 9.8x. */
static const char *const near_suite =
    "op\tshape\tregime\tdtype\tdirection\tseed\tflags\n"
    "gdn\tB=1,T=16,Hk=1,Hv=1,K=16,V=16\tdefault\tf32\tfwd+bwd\t8\t-\n";
static const char *const near_suite_t100 =
    "op\tshape\tregime\tdtype\tdirection\tseed\tflags\n"
    "gdn\tB=1,T=100,Hk=1,Hv=2,K=32,V=32\tdefault\tf32\tfwd+bwd\t1\t-\n";

/* validate on the suite in suite_text with fault planted in the variants
   matching glob: every variant in names is caught on tensor, and each of
   their gated rows is within 30x of its threshold. */
static void expect_near_gate(const char *suite_text, unsigned fault, const char *glob,
                             const char *const *names, const char *tensor, const char *what)
{
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_msg(ra_suite_parse(&s, suite_text, "near-gate suite") == RA_OK, "%s",
                  ra_last_error());
    ra_rows rows;
    run_on(&rows, glob, fault, &s);
    expect_caught(&rows, names, tensor, what);
    for (size_t i = 0; i < rows.n; i++) {
        const ra_row *r = &rows.v[i];
        int named = 0;
        for (const char *const *v = names; *v; v++)
            named |= strcmp(r->variant, *v) == 0;
        if (!named || !r->gated || r->higher_is_better)
            continue;
        ck_assert_msg(r->value <= 30 * r->threshold,
                      "%s: %s %s %s = %g is %.0fx its gate %g: no longer near it", what, r->variant,
                      r->tensor, r->metric, r->value, r->value / r->threshold, r->threshold);
    }
    ra_rows_clear(&rows);
    ra_suite_clear(&s);
}

static const char *const bf16s[] = {"gdn.cpu.chunk64.bf16", "gdn.cpu.chunk64.bf16.neumann",
                                    "gdn.cpu.chunk128.bf16.schur", NULL};
static const char *const tf32s[] = {"gdn.cpu.chunk64.tf32", "gdn.cpu.chunk64.tf32.neumann",
                                    "gdn.cpu.chunk128.tf32.schur", NULL};

START_TEST(regress_near_gate)
{
    expect_near_gate(near_suite, RA_FAULT_TF32_AS_IEEE, "gdn.cpu.chunk*.ieee*", ieee, "o",
                     "TF32 in an ieee variant, near its gate");
    expect_near_gate(near_suite, RA_FAULT_DBETA_TERM, "gdn.cpu.chunk*.bf16*", bf16s, "dbeta",
                     "bf16 dbeta missing a term, near its gate");
    expect_near_gate(near_suite_t100, RA_FAULT_DBETA_TERM, "gdn.cpu.chunk*.tf32*", tf32s, "dbeta",
                     "tf32 dbeta missing a term, near its gate");
}
END_TEST

/* The class, not the name, picks the gates (data/gates.tsv).  Rows of the
   built-in configurations registered under names that lie about, or do not
   spell, their arithmetic:
   - gdn.x.chunk64.tf32: the clean f32 sequential kernel declaring f32 is
     gated by the f32 rows (rel_rms 2e-5, max_rel 4e-5), not the tf32 ones
     (4e-3, 1e-2) that its name would have picked;
   - gdn.z.chunk64.tf32: the ieee chunked kernel with TF32 operands planted
     (one class lower than it declares: errors about 5e-4) declaring ieee
     fails the ieee gates on o, where by its name it passed tf32's;
   - gdn.mykernel.fp32: the clean f32 kernel declaring f32, a name no gate
     glob ever matched ("no gate covers"), is gated and passes. */
static const ra_variant *builtin(const char *name)
{
    for (size_t i = 0; i < ra_cpu_gdn_nvariants; i++)
        if (strcmp(ra_cpu_gdn_variants[i].name, name) == 0)
            return &ra_cpu_gdn_variants[i];
    ck_abort_msg("no built-in %s", name);
    return NULL;
}

START_TEST(regress_class_not_name)
{
    ra_cpu_gdn_cfg faulty = *(const ra_cpu_gdn_cfg *)builtin("gdn.cpu.chunk64.ieee")->data;
    faulty.faults = RA_FAULT_TF32_AS_IEEE;
    ra_variant seq = *builtin("gdn.cpu.f32"), chunk = *builtin("gdn.cpu.chunk64.ieee");
    ra_variant x = seq, z = chunk, my = seq;
    x.name = "gdn.x.chunk64.tf32";
    x.pclass = "f32";
    z.name = "gdn.z.chunk64.tf32";
    z.pclass = "ieee";
    z.data = &faulty;
    my.name = "gdn.mykernel.fp32";
    my.pclass = "f32";
    ra_registry *reg;
    ck_assert_int_eq(ra_registry_new_empty(&reg), RA_OK);
    ck_assert_int_eq(ra_registry_add(reg, &x), RA_OK);
    ck_assert_int_eq(ra_registry_add(reg, &z), RA_OK);
    ck_assert_int_eq(ra_registry_add(reg, &my), RA_OK);
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_int_eq(ra_suite_parse(&s, near_suite, "near-gate suite"), RA_OK);
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_msg(ra_validate(&rows, reg, "gdn.*", &s, &o) == RA_OK, "%s", ra_last_error());
    static const char *const caught[] = {"gdn.z.chunk64.tf32", NULL};
    expect_caught(&rows, caught, "o", "TF32 operands in a kernel declaring ieee");
    size_t gated[2] = {0, 0};
    for (size_t i = 0; i < rows.n; i++) {
        const ra_row *r = &rows.v[i];
        int k = strcmp(r->variant, "gdn.x.chunk64.tf32") == 0  ? 0
                : strcmp(r->variant, "gdn.mykernel.fp32") == 0 ? 1
                                                               : -1;
        if (k < 0)
            continue;
        ck_assert_msg(r->verdict == RA_VERDICT_PASS, "%s %s %s: %s", r->variant, r->tensor,
                      r->metric, r->note);
        ck_assert_str_eq(r->pclass, "f32");
        ck_assert_msg(r->threshold <= 4e-5, "%s %s %s gated at %g: not the f32 class's rows",
                      r->variant, r->tensor, r->metric, r->threshold);
        gated[k]++;
    }
    /* 7 tensors (o ht dq dk dv dg dbeta) x (rel_rms, max_rel) each */
    ck_assert_uint_eq(gated[0], 14);
    ck_assert_uint_eq(gated[1], 14);
    ra_rows_clear(&rows);
    ra_suite_clear(&s);
    ra_registry_free(reg);
}
END_TEST

static Suite *sensitivity_suite(void)
{
    Suite *s = suite_create("sensitivity");
    tcase_set_timeout(tu_tcase(s, "regress", quick_setup, quick_teardown, regress_clean,
                               regress_dbeta_term, regress_decay_after_update, regress_tail_mask,
                               regress_tf32_as_ieee, regress_final_state_early,
                               regress_dk_group_sum, regress_near_gate, regress_class_not_name),
                      600);
    return s;
}

int main(void) { return tu_run(sensitivity_suite()); }
