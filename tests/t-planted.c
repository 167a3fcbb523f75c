/* Planted defects of every class (shape, path, parameter, precision class, small term) against
 * quick. */
#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"
#include "cpu/faults.h"
#include "cpu/gdn_variants.h"
#include "quick-testutil.h"
#include "testutil.h"

/*
 * Each defect is one fault switch of the CPU gdn implementations
 * (src/cpu/faults.h), each written on its own (a loop bound, a pointer
 * offset, an index map, a dropped term, a rounding), modelled on the bugs
 * public linear-attention kernels shipped.  The test plants it in copies
 * of the built-in rows that honour it (same names and declared classes,
 * so the same gates) and runs validate over the shipped quick suite with
 * the shipped gates.  Every such variant must FAIL, and by a margin: some
 * failing row on one of the defect's tensors has value / threshold >= 3
 * (MARGIN).  A defect that passes or fails narrowly means quick lacks the
 * shape, path or regime that shows it: the fix is a suite row or regime,
 * never a weaker test.  The worst margin of each defect is printed (the
 * figures of docs/gdn.md).
 *
 * Classes:
 *   shape      KTILE64 (K > 64), CKPT256 (T > 256), GQA_PAIR (Hv/Hk >= 4),
 *              HEAD_INTERLEAVE (Hk >= 2, Hv > Hk), BATCH_BETA (B > 1),
 *              TAIL_MASK (T % 64 != 0), DK_GROUP_SUM (Hv > Hk)
 *   path       H0_TRANSPOSED (h0), NO_DHT_LAST (no dht), L2NORM_BACK
 *              (l2norm on keys that are not unit-norm), SCALE_DEFAULT
 *              (a non-default scale), FINAL_STATE_EARLY
 *   parameter  L2EPS_IGNORED, SCALE_TWICE, DECAY_AFTER_UPDATE
 *   precision  TF32_OUTPUT (one TF32 product in an f32 kernel),
 *              BF16_STATE (bf16 chunk states in ieee kernels),
 *              and in tf32 kernels (a one-class-lower state: caught on
 *              dg by the tf32 regime-keyed dg refinement of gates.tsv,
 *              measured 3.4x..3.6x), TF32_AS_IEEE (TF32 operands in ieee
 *              kernels)
 *   small term DBETA_TERM, DK_BETA_TERM, DG_BETA_TERM, DG_STATE_TERM
 * Each variant list names the rows that honour the fault, one per class
 * where the fault lives in shared code (the driver), so the test stays
 * within a few quick runs.
 *
 * References come through the cache ($RECAUDIT_CACHE).
 */

#define MARGIN 3.0

typedef struct planted {
    unsigned fault;
    const char *variants[5]; /* NULL-ended: each must fail */
    const char *tensors[8];  /* NULL-ended: rows on these count */
    const char *what;
} planted;

/* Registers copies of the named built-in rows with the fault set. */
static ra_registry *faulty_registry(const planted *d, ra_cpu_gdn_cfg *cfgs)
{
    ra_registry *reg;
    ck_assert_int_eq(ra_registry_new_empty(&reg), RA_OK);
    for (int i = 0; d->variants[i]; i++) {
        const ra_variant *b = ra_cpu_gdn_variant(d->variants[i]);
        ck_assert_msg(b != NULL, "no built-in %s", d->variants[i]);
        ra_variant v = *b;
        cfgs[i] = *(const ra_cpu_gdn_cfg *)b->data;
        cfgs[i].faults = d->fault;
        v.data = &cfgs[i];
        ck_assert_int_eq(ra_registry_add(reg, &v), RA_OK);
    }
    return reg;
}

static int on_tensor(const planted *d, const char *tensor)
{
    for (int i = 0; d->tensors[i]; i++)
        if (strcmp(d->tensors[i], tensor) == 0)
            return 1;
    return 0;
}

static void expect_planted_caught(const planted *d)
{
    ra_cpu_gdn_cfg cfgs[5];
    ra_registry *reg = faulty_registry(d, cfgs);
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    o.iso.in_process = 1; /* the faults are in-bounds: no crash to isolate */
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_msg(ra_validate(&rows, reg, "gdn.*", &quick, &o) == RA_OK, "%s", ra_last_error());
    double worst = -1;
    for (int v = 0; d->variants[v]; v++) {
        double best = 0;
        const ra_row *at = NULL;
        for (size_t i = 0; i < rows.n; i++) {
            const ra_row *r = &rows.v[i];
            if (strcmp(r->variant, d->variants[v]) || r->verdict != RA_VERDICT_FAIL || !r->gated ||
                r->higher_is_better || !on_tensor(d, r->tensor) || !(r->threshold > 0))
                continue;
            double m = r->value / r->threshold; /* NaN fails every gate: as caught */
            if (m != m)
                m = 1e300;
            if (m > best)
                best = m, at = r;
        }
        ck_assert_msg(best >= MARGIN, "%s: %s caught by at most %.3gx its gate on %s (need %gx)",
                      d->what, d->variants[v], best, d->tensors[0], MARGIN);
        printf("planted %-40s %-30s %8.3gx  (%s %s %s %s %s)\n", d->what, d->variants[v], best,
               at->tensor, at->metric, at->id.shape, at->id.regime, at->id.dtype);
        fflush(stdout);
        if (worst < 0 || best < worst)
            worst = best;
    }
    printf("planted %-40s worst margin %.3gx\n", d->what, worst);
    fflush(stdout);
    ra_rows_clear(&rows);
    ra_registry_free(reg);
}

#define F32 "gdn.cpu.f32"
#define F64 "gdn.cpu.f64"
#define IEEE "gdn.cpu.chunk64.ieee"
#define TF32 "gdn.cpu.chunk64.tf32"
#define BF16 "gdn.cpu.chunk64.bf16"
#define SCHUR_BF16 "gdn.cpu.chunk128.bf16.schur"
#define OUT "o", "ht"
#define GRADS "dq", "dk", "dv", "dg"

static const planted defects[] = {
    /* shape-dependent */
    {RA_FAULT_KTILE64, {F32, F64}, {"o"}, "o over the first 64 key rows (K > 64)"},
    {RA_FAULT_CKPT256, {F32, F64}, {GRADS}, "checkpoint buffer of 256 tokens (T > 256)"},
    {RA_FAULT_GQA_PAIR, {F32, BF16}, {"dk"}, "dk group sum by pairs (Hv/Hk >= 4)"},
    {RA_FAULT_HEAD_INTERLEAVE, {F32, BF16}, {OUT}, "key head hv mod Hk (Hk >= 2)"},
    {RA_FAULT_BATCH_BETA, {F32, BF16}, {OUT}, "beta without the batch offset (B > 1)"},
    {RA_FAULT_TAIL_MASK, {IEEE, BF16}, {OUT}, "tail mask off by one (T % 64 != 0)"},
    {RA_FAULT_DK_GROUP_SUM, {F32, BF16}, {"dk"}, "dk without the group sum (Hv > Hk)"},
    /* path-dependent */
    {RA_FAULT_H0_TRANSPOSED, {F32, BF16}, {OUT}, "h0 read transposed (h0 path)"},
    {RA_FAULT_NO_DHT_LAST, {F32, F64}, {GRADS}, "last token dropped without dht"},
    {RA_FAULT_L2NORM_BACK, {F32, BF16}, {"dq", "dk"}, "l2norm backward n^2 for n^3"},
    {RA_FAULT_SCALE_DEFAULT, {F32, BF16}, {"o"}, "case scale ignored (default used)"},
    {RA_FAULT_FINAL_STATE_EARLY, {F32, BF16}, {"ht"}, "final state one step early"},
    /* parameter handling */
    {RA_FAULT_L2EPS_IGNORED, {F32, TF32}, {"o", GRADS}, "l2eps ignored"},
    {RA_FAULT_SCALE_TWICE, {F32, BF16}, {"o"}, "scale applied twice"},
    {RA_FAULT_DECAY_AFTER_UPDATE, {F32, F64}, {OUT}, "decay after the delta update"},
    /* precision class, judged by the declared class's gates */
    {RA_FAULT_TF32_OUTPUT, {F32}, {"o"}, "one TF32 product in an f32 kernel"},
    {RA_FAULT_BF16_STATE,
     {IEEE, "gdn.cpu.chunk128.ieee.schur", TF32, "gdn.cpu.chunk128.tf32.schur"},
     {OUT, "dg"},
     "bf16 chunk states, fp32 or tf32 declared"},
    {RA_FAULT_TF32_AS_IEEE, {IEEE}, {OUT}, "TF32 operands in an ieee kernel"},
    /* small terms */
    {RA_FAULT_DBETA_TERM, {F32, BF16, SCHUR_BF16}, {"dbeta"}, "dbeta without its state term"},
    {RA_FAULT_DK_BETA_TERM, {F32, F64}, {"dk"}, "dk without -beta S~ du"},
    {RA_FAULT_DG_BETA_TERM, {F32, F64}, {"dg"}, "dg without -beta k du^T"},
    {RA_FAULT_DG_STATE_TERM, {IEEE, BF16}, {"dg"}, "dg without the chunk-state gate term"},
};

#define NDEFECTS (sizeof defects / sizeof defects[0])

START_TEST(regress_planted) { expect_planted_caught(&defects[_i]); }
END_TEST

/* The defects are distinct switches and there are at least 20. */
START_TEST(special_defects_distinct)
{
    ck_assert_uint_ge(NDEFECTS, 20);
    unsigned seen = 0;
    for (size_t i = 0; i < NDEFECTS; i++) {
        ck_assert_msg(!(seen & defects[i].fault), "fault %#x planted twice", defects[i].fault);
        ck_assert_msg((defects[i].fault & (defects[i].fault - 1)) == 0, "one fault per defect");
        seen |= defects[i].fault;
    }
    ck_assert_uint_eq(seen, RA_FAULT_ALL);
}
END_TEST

/* Term-isolating regimes (docs/gdn.md, "Which regime isolates which
   term").  For each planted small-term defect, in the variant of the
   lowest class that carries it, the regime that makes the dropped term
   dominant must show it at >= 10x that variant's gate (value / threshold
   of its worst gated row on the gradient), and at least as clearly as
   the default regime does.  One case, B=1, T=136, Hk=1, Hv=2, K=V=32
   (three chunks of 64, two of 128), with h0, f32 inputs; the ratio in
   every regime below is printed (the figures of docs/gdn.md). */
typedef struct isolating {
    unsigned fault;
    const char *variant, *tensor, *regime;
} isolating;

static const isolating isolators[] = {
    {RA_FAULT_DBETA_TERM, BF16, "dbeta", "large-state"},
    {RA_FAULT_DK_BETA_TERM, F32, "dk", "large-state"},
    {RA_FAULT_DG_BETA_TERM, F32, "dg", "raw-keys"},
    {RA_FAULT_DG_STATE_TERM, BF16, "dg", "near-unit+large-state+big-beta"},
};

static const char *const regimes_shown[] = {"default",
                                            "zero-gate",
                                            "strong-decay",
                                            "near-unit",
                                            "raw-keys",
                                            "small-beta",
                                            "big-beta",
                                            "aligned-keys",
                                            "large-state",
                                            "default+large-state",
                                            "default+large-state+small-beta",
                                            "near-unit+large-state+big-beta",
                                            NULL};

/* The worst value / threshold of the gated rows on tensor of variant
   with fault planted, on the one-row suite (shape, regime, f32 inputs,
   seed, flags). */
static double case_margin(unsigned fault, const char *variant, const char *tensor,
                          const char *shape, const char *regime, int seed, const char *flags)
{
    char text[512];
    snprintf(text, sizeof text,
             "op\tshape\tregime\tdtype\tdirection\tseed\tflags\n"
             "gdn\t%s\t%s\tf32\tfwd+bwd\t%d\t%s\n",
             shape, regime, seed, flags);
    ra_suite s;
    ra_suite_init(&s);
    ck_assert_msg(ra_suite_parse(&s, text, "isolating suite") == RA_OK, "%s", ra_last_error());
    planted d = {fault, {variant, NULL}, {tensor, NULL}, "isolating"};
    ra_cpu_gdn_cfg cfgs[5];
    ra_registry *reg = faulty_registry(&d, cfgs);
    ra_audit_opts o;
    ra_audit_opts_init(&o);
    o.gates = &gates;
    o.iso.in_process = 1;
    ra_rows rows;
    ra_rows_init(&rows);
    ck_assert_msg(ra_validate(&rows, reg, "gdn.*", &s, &o) == RA_OK, "%s", ra_last_error());
    double m = -1;
    for (size_t i = 0; i < rows.n; i++) {
        const ra_row *r = &rows.v[i];
        if (strcmp(r->tensor, tensor) == 0 && r->gated && !r->higher_is_better &&
            r->value / r->threshold > m)
            m = r->value / r->threshold;
    }
    ck_assert_msg(m >= 0, "no gated row on %s", tensor);
    ra_rows_clear(&rows);
    ra_registry_free(reg);
    ra_suite_clear(&s);
    return m;
}

/* The worst value / threshold of the defect's gated rows on its tensor. */
static double term_margin(const isolating *t, const char *regime)
{
    return case_margin(t->fault, t->variant, t->tensor, "B=1,T=136,Hk=1,Hv=2,K=32,V=32", regime, 5,
                       "h0");
}

/* The bf16 class's dg envelope is 0.3 for one harsh regime (strong decay
   over a large state); gates.tsv's regime-keyed refinement tightens it to
   1.2e-1 / 1.1e-1 (rel_rms / max_rel, 1.6x over the measured maxima of
   quick's covering array) everywhere else.  A chunk64.bf16 whose dg
   drops the chunk-state gate term measured dg rel_rms 8.2e-2 and max_rel
   0.144 on this default-regime row (T = 260: five chunks, so the carried
   state matters): 1.31x the max_rel refinement; it passed the 0.3
   envelope and must fail again.  The correct kernel passes the same row
   (dg measured 5e-3). */
START_TEST(regress_bf16_dg_default)
{
    const char *shape = "B=1,T=260,Hk=1,Hv=1,K=16,V=16";
    double bad = case_margin(RA_FAULT_DG_STATE_TERM, BF16, "dg", shape, "default", 7, "-");
    double good = case_margin(0, BF16, "dg", shape, "default", 7, "-");
    printf("bf16 dg default: dropped chunk-state term %.3gx its gate, correct %.3gx\n", bad, good);
    fflush(stdout);
    ck_assert_msg(bad > 1, "dg without the chunk-state term passes the default row (%.3gx)", bad);
    ck_assert_msg(good <= 1, "the correct chunk64.bf16 fails the default row (%.3gx)", good);
}
END_TEST

START_TEST(regress_isolating_regime)
{
    const isolating *t = &isolators[_i];
    double in_regime = -1, in_default = -1;
    for (const char *const *r = regimes_shown; *r; r++) {
        double m = term_margin(t, *r);
        printf("isolating %-8d %-22s %-6s %-32s %9.3gx its gate\n", (int)_i, t->variant, t->tensor,
               *r, m);
        fflush(stdout);
        if (strcmp(*r, t->regime) == 0)
            in_regime = m;
        if (strcmp(*r, "default") == 0)
            in_default = m;
    }
    ck_assert_msg(in_regime >= 10,
                  "%s %s: the dropped term shows at %.3gx its gate in %s (need 10x)", t->variant,
                  t->tensor, in_regime, t->regime);
    ck_assert_msg(in_regime >= in_default,
                  "%s %s: %s shows the term less than default does (%.3gx < %.3gx)", t->variant,
                  t->tensor, t->regime, in_regime, in_default);
}
END_TEST

static Suite *planted_suite(void)
{
    Suite *s = suite_create("planted");
    TCase *tc = tcase_create("regress");
    tcase_add_checked_fixture(tc, quick_setup, quick_teardown);
    tcase_add_loop_test(tc, regress_planted, 0, (int)NDEFECTS);
    tcase_add_test(tc, special_defects_distinct);
    tcase_add_test(tc, regress_bf16_dg_default);
    tcase_set_timeout(tc, 900);
    suite_add_tcase(s, tc);
    TCase *iso = tcase_create("isolating");
    tcase_add_checked_fixture(iso, quick_setup, quick_teardown);
    tcase_add_loop_test(iso, regress_isolating_regime, 0,
                        (int)(sizeof isolators / sizeof isolators[0]));
    tcase_set_timeout(iso, 600);
    suite_add_tcase(s, iso);
    return s;
}

int main(void) { return tu_run(planted_suite()); }
