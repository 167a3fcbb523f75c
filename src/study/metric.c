/* Study "metric": which acceptance rule catches which planted defect. */

/*
 * Kernel projects accept a kernel by one rule: cos_sim >= 0.999 (Sana),
 * fla's relative RMS error rms(err)/rms(ref) <= 2e-3 (tight) ... 2e-2
 * (loose), minGRU's torch.allclose with atol 1e-3 and rtol 0 on
 * gradients (max |err| <= 1e-3), or recaudit's gates for the variant's
 * declared precision class (data/gates.tsv).  This study plants defects a
 * kernel author could ship into the result of a real, correct variant
 * (gdn.cpu.chunk64.ieee on a gdn case, the reference through the cache)
 * and asks each rule, applied to every output and gradient the way a test
 * suite applies it, whether it notices:
 *
 *   control       the correct result itself (no rule may fire);
 *   elem-max      one element of o, the largest in magnitude, times 1.01;
 *   elem-median   one element of o of median magnitude, times 1.01;
 *   bias          every element of o times 1 + 2^-8 (a relative bias, e.g.
 *                 a scale folded in at bf16 precision);
 *   dropped-term  dbeta without its state term (RA_FAULT_DBETA_TERM: the
 *                 variant's own code with the fault, src/cpu/faults.h);
 *   tf32-as-ieee  TF32 operands in the kernel declared ieee
 *                 (RA_FAULT_TF32_AS_IEEE).
 *
 * Perturbations are applied to the stored f32 result (ra_tensor_set
 * rounds to nearest), the faults by running the variant's configuration
 * with the fault bit set.  A rule "catches" a defect when it fails on at
 * least one tensor; the value reported is that of the tensor furthest past
 * (or closest to) the threshold, as value/threshold (cos: (1 - cos) /
 * (1 - 0.999)), so > 1 means caught.
 */

#include "study/studies.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audit/gates.h"
#include "cpu/faults.h"
#include "cpu/gdn_variants.h"

#define BASE "gdn.cpu.chunk64.ieee"
#define NRULES 5

typedef struct rule {
    const char *name;   /* column in the tables */
    const char *metric; /* ra_metrics name; NULL: recaudit's gates */
    double threshold;
} rule;

static const rule rules[NRULES] = {
    {"cos >= 0.999 (Sana)", "cos", 0.999},
    {"rel_rms <= 2e-3 (fla tight)", "rel_rms", 2e-3},
    {"rel_rms <= 2e-2 (fla loose)", "rel_rms", 2e-2},
    {"max_abs <= 1e-3 (minGRU atol)", "max_abs", 1e-3},
    {"recaudit gates (class ieee)", NULL, 0},
};

typedef enum defect_kind { D_CONTROL, D_ELEM_MAX, D_ELEM_MEDIAN, D_BIAS, D_FAULT } defect_kind;

typedef struct defect {
    const char *name, *what;
    defect_kind kind;
    unsigned fault;
} defect;

static const defect defects[] = {
    {"control", "the correct result, unchanged", D_CONTROL, 0},
    {"elem-max", "one element of o (the largest |o|) off by 1 %", D_ELEM_MAX, 0},
    {"elem-median", "one element of o (median |o|) off by 1 %", D_ELEM_MEDIAN, 0},
    {"bias", "relative bias 2^-8 on every element of o", D_BIAS, 0},
    {"dropped-term", "dbeta misses its state term (fault DBETA_TERM)", D_FAULT,
     RA_FAULT_DBETA_TERM},
    {"tf32-as-ieee", "TF32 operands in the kernel declared ieee (fault TF32_AS_IEEE)", D_FAULT,
     RA_FAULT_TF32_AS_IEEE},
};
#define NDEFECTS (sizeof defects / sizeof defects[0])

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Index of the element of t whose |value| is the largest (median 0) or
   nearest the median of |values| (median 1). */
static int64_t pick_element(const ra_tensor *t, int median)
{
    double *a = malloc((size_t)t->numel * sizeof *a);
    if (!a || t->numel == 0) {
        free(a);
        return 0;
    }
    int64_t best = 0;
    for (int64_t i = 0; i < t->numel; i++)
        a[i] = fabs(ra_tensor_get(t, i));
    if (!median) {
        for (int64_t i = 1; i < t->numel; i++)
            if (a[i] > a[best])
                best = i;
    } else {
        double *s = malloc((size_t)t->numel * sizeof *s);
        if (s) {
            memcpy(s, a, (size_t)t->numel * sizeof *s);
            qsort(s, (size_t)t->numel, sizeof *s, cmp_double);
            const double med = s[t->numel / 2];
            for (int64_t i = 1; i < t->numel; i++)
                if (fabs(a[i] - med) < fabs(a[best] - med))
                    best = i;
            free(s);
        }
    }
    free(a);
    return best;
}

/* dst = a deep copy of src's parameters and tensors. */
static ra_status copy_case(ra_case *dst, const ra_case *src)
{
    ra_case_init(dst);
    RA_TRY(ra_case_set_op(dst, src->op));
    RA_TRY(ra_kv_copy(&dst->params, &src->params));
    for (size_t i = 0; i < src->tensors.n; i++) {
        ra_tensor *t;
        RA_TRY(ra_tensor_clone(&t, src->tensors.items[i], NULL));
        ra_status st = ra_tensors_add(&dst->tensors, t);
        if (st != RA_OK) {
            ra_tensor_free(t);
            return st;
        }
    }
    return RA_OK;
}

/* The defective result of defect d. */
static ra_status make_defective(ra_case *out, const defect *d, const ra_case *base,
                                const ra_study_ctx *ctx, const ra_variant *v,
                                const ra_study_case *sc)
{
    if (d->kind == D_FAULT) {
        ra_cpu_gdn_cfg cfg = *(const ra_cpu_gdn_cfg *)v->data;
        cfg.faults = d->fault;
        ra_variant fv = *v;
        fv.data = &cfg;
        ra_case_init(out);
        return ra_study_run(out, ctx, &fv, sc);
    }
    RA_TRY(copy_case(out, base));
    if (d->kind == D_CONTROL)
        return RA_OK;
    ra_tensor *o = ra_tensors_find(&out->tensors, "o");
    if (!o)
        RA_ERROR("study metric: the base result has no 'o'", RA_EINTERNAL);
    if (d->kind == D_BIAS) {
        for (int64_t i = 0; i < o->numel; i++)
            ra_tensor_set(o, i, ra_tensor_get(o, i) * (1 + 0x1p-8));
        return RA_OK;
    }
    const ra_tensor *z = ra_tensors_find(&sc->ref.tensors, "o");
    int64_t i = pick_element(z ? z : o, d->kind == D_ELEM_MEDIAN);
    ra_tensor_set(o, i, ra_tensor_get(o, i) * 1.01);
    return RA_OK;
}

/* How far past the rule a value is: > 1 fails. */
static double ratio(const char *metric, double value, double threshold)
{
    if (strcmp(metric, "cos") == 0)
        return (1 - value) / (1 - threshold);
    return value / threshold;
}

typedef struct verdict {
    int caught;
    double ratio;
    char tensor[32];
    double value, threshold;
    char metric[16];
} verdict;

static void consider(verdict *w, const char *tensor, const char *metric, double value,
                     double threshold)
{
    double r = ratio(metric, value, threshold);
    if (isnan(r))
        r = INFINITY;
    if (r > w->ratio || !w->tensor[0]) {
        w->ratio = r;
        snprintf(w->tensor, sizeof w->tensor, "%s", tensor);
        snprintf(w->metric, sizeof w->metric, "%s", metric);
        w->value = value;
        w->threshold = threshold;
    }
    if (r > 1)
        w->caught = 1;
}

/* Every rule on every tensor of res. */
static ra_status judge(verdict out[NRULES], const ra_case *res, const ra_study_case *sc,
                       const ra_gates *gates, const ra_variant *v)
{
    memset(out, 0, NRULES * sizeof *out);
    for (size_t i = 0; i < sc->ref.tensors.n; i++) {
        const char *name = sc->ref.tensors.items[i]->name;
        ra_metrics m;
        RA_TRY(ra_study_measure(&m, res, sc, name));
        for (int r = 0; r < NRULES; r++) {
            if (rules[r].metric) {
                double x;
                RA_TRY(ra_metrics_get(&x, &m, rules[r].metric));
                consider(&out[r], name, rules[r].metric, x, rules[r].threshold);
                continue;
            }
            const ra_gate *sel[RA_GATES_MAX_METRICS];
            size_t n = 0;
            RA_TRY(ra_gates_select_case(sel, &n, gates, sc->spec.op, v->pclass, v->name,
                                        sc->spec.regime, sc->spec.dtype, name));
            for (size_t j = 0; j < n; j++) {
                double x;
                RA_TRY(ra_metrics_get(&x, &m, sel[j]->metric));
                consider(&out[r], name, sel[j]->metric, x, sel[j]->threshold);
            }
        }
    }
    return RA_OK;
}

static const char *const cols[] = {"defect", "rule",      "caught", "tensor",       "metric",
                                   "value",  "threshold", "ratio",  "defect_index", NULL};

static ra_status run_all(ra_study_ctx *ctx, ra_study_report *rep, ra_points *p,
                         int caught[NDEFECTS][NRULES], verdict v_all[NDEFECTS][NRULES],
                         const char *shape)
{
    const ra_variant *v;
    RA_TRY(ra_study_variant(&v, ctx, BASE));
    ra_gates gates;
    ra_gates_init(&gates);
    RA_TRY(ra_gates_load(&gates, NULL));
    ra_study_case sc;
    ra_status st = ra_study_case_make(&sc, ctx, "gdn", shape, "default", "f32", 1, NULL, NULL, 1);
    if (st != RA_OK) {
        ra_gates_clear(&gates);
        return st;
    }
    ra_report_seed(rep, 1);
    ra_case base;
    ra_case_init(&base);
    st = ra_study_run(&base, ctx, v, &sc);
    for (size_t d = 0; st == RA_OK && d < NDEFECTS; d++) {
        ra_case res;
        st = make_defective(&res, &defects[d], &base, ctx, v, &sc);
        if (st == RA_OK)
            st = judge(v_all[d], &res, &sc, &gates, v);
        ra_case_clear(&res);
        for (int r = 0; st == RA_OK && r < NRULES; r++) {
            const verdict *w = &v_all[d][r];
            caught[d][r] = w->caught;
            st = ra_points_row(p);
            if (st == RA_OK)
                st = ra_points_set_text(p, "defect", defects[d].name);
            if (st == RA_OK)
                st = ra_points_set_text(p, "rule", rules[r].name);
            if (st == RA_OK)
                st = ra_points_set_text(p, "caught", w->caught ? "yes" : "no");
            if (st == RA_OK)
                st = ra_points_set_text(p, "tensor", w->tensor);
            if (st == RA_OK)
                st = ra_points_set_text(p, "metric", w->metric);
            if (st == RA_OK)
                st = ra_points_set_num(p, "value", w->value);
            if (st == RA_OK)
                st = ra_points_set_num(p, "threshold", w->threshold);
            if (st == RA_OK)
                st = ra_points_set_num(p, "ratio", w->ratio);
            if (st == RA_OK)
                st = ra_points_set_num(p, "defect_index", (double)d);
        }
    }
    ra_case_clear(&base);
    ra_study_case_clear(&sc);
    ra_gates_clear(&gates);
    return st;
}

ra_status ra_study_metric(ra_study_ctx *ctx, ra_study_report *rep)
{
    const char *shape =
        ctx->quick ? "B=1,T=64,Hk=1,Hv=2,K=16,V=16" : "B=1,T=256,Hk=2,Hv=4,K=64,V=64";
    ra_points *p;
    RA_TRY(ra_points_new(&p, cols));
    int caught[NDEFECTS][NRULES];
    verdict v[NDEFECTS][NRULES];
    ra_status st = run_all(ctx, rep, p, caught, v, shape);
    if (st != RA_OK) {
        ra_points_free(p);
        return st;
    }
    /* headline: defects caught per rule, the control clean */
    char per_rule[1024] = "";
    size_t used = 0;
    int control_clean = 1, all_by_gates = 1;
    for (int r = 0; r < NRULES; r++) {
        int n = 0;
        for (size_t d = 1; d < NDEFECTS; d++)
            n += caught[d][r];
        control_clean &= !caught[0][r];
        if (!rules[r].metric)
            all_by_gates = n == (int)NDEFECTS - 1;
        int w = snprintf(per_rule + used, sizeof per_rule - used, "%s%s %d", used ? ", " : "",
                         rules[r].name, n);
        if (w > 0 && (size_t)w < sizeof per_rule - used)
            used += (size_t)w;
    }
    /* rel_rms of o under the two one-element defects (rule 1 is fla's) */
    const double em = v[1][1].value, ed = v[2][1].value;
    st = ra_report_headline(
        rep,
        "Of %zu planted defects in a correct ieee chunk kernel's gdn result, each rule "
        "catches: %s; %s%s  A relative bias leaves cos at exactly 1, and one element of o off "
        "by 1 %% moves its rel_rms only to %.2g (the largest element) or %.2g (a median one).",
        NDEFECTS - 1, per_rule, all_by_gates ? "only recaudit's class gates catch every one, " : "",
        control_clean ? "and no rule fires on the correct result."
                      : "and some rule fires on the correct result itself (see the table).",
        em, ed);
    if (st == RA_OK)
        st = ra_report_printf(
            rep,
            "## Set-up\n\n"
            "Base: `%s` (declared class ieee) on the gdn case `%s`, default regime, f32 "
            "inputs, seed 1, with cotangents (every output and gradient: o, ht, dq, dk, dv, dg, "
            "dbeta).  Each rule is applied to every tensor, as a test suite applies it, against "
            "the certified MPFR reference; a rule catches a defect when one tensor fails.  "
            "The recaudit column uses data/gates.tsv's rows for class ieee (rel_rms and "
            "max_rel per tensor).  minGRU's rule is torch.allclose(atol=1e-3, rtol=0) on "
            "gradients, here on every tensor: max_abs <= 1e-3.\n\n"
            "| defect | what is planted |\n|---|---|\n",
            BASE, shape);
    for (size_t d = 0; st == RA_OK && d < NDEFECTS; d++)
        st = ra_report_printf(rep, "| %s | %s |\n", defects[d].name, defects[d].what);
    if (st == RA_OK)
        st = ra_report_printf(rep, "\n## Which rule catches which defect\n\n"
                                   "Each cell: caught or missed, then the tensor closest to "
                                   "(or furthest past) the rule, its metric and value / "
                                   "threshold (cos: (1 - cos) / 0.001); > 1 fails.\n\n| defect |");
    for (int r = 0; st == RA_OK && r < NRULES; r++)
        st = ra_report_printf(rep, " %s |", rules[r].name);
    if (st == RA_OK)
        st = ra_report_printf(rep, "\n|---|");
    for (int r = 0; st == RA_OK && r < NRULES; r++)
        st = ra_report_printf(rep, "---|");
    for (size_t d = 0; st == RA_OK && d < NDEFECTS; d++) {
        st = ra_report_printf(rep, "\n| %s |", defects[d].name);
        for (int r = 0; st == RA_OK && r < NRULES; r++) {
            const verdict *w = &v[d][r];
            st = ra_report_printf(rep, " %s (%s %s %.3g, x%.2g) |",
                                  w->caught ? "**caught**" : "missed", w->tensor, w->metric,
                                  w->value, w->ratio);
        }
    }
    if (st == RA_OK)
        st = ra_report_printf(
            rep, "\n\n## Reading the table\n\n"
                 "- cos is blind to scale: a relative bias multiplies the tensor and leaves the "
                 "angle at exactly 1; only the angle between result and truth counts, so a "
                 "defect must rotate the whole tensor by about 2.6 degrees (1 - cos = 1e-3) to "
                 "show.\n"
                 "- rel_rms and max_rel are normwise: one element off by 1 %% moves them by about "
                 "1 %% of that element's share of the norm, so a 1 %% element error on a large "
                 "tensor hides below any rel_rms threshold set far above roundoff; max_rel sees "
                 "the full 1 %% only when the element is the tensor's largest.  The class gates "
                 "sit near the kernel's own roundoff (ieee: rel_rms 5e-5, max_rel 1e-4, about 10x "
                 "the measured fp32 chunk error), so they catch it either way.\n"
                 "- The absolute rule depends on the scale of the data, not on the kernel: it "
                 "catches a defect on a tensor of large entries and misses the same defect on a "
                 "small one.\n"
                 "- Per defect, the rules that miss it:\n");
    for (size_t d = 1; st == RA_OK && d < NDEFECTS; d++) {
        st = ra_report_printf(rep, "  - %s: ", defects[d].name);
        int any = 0;
        for (int r = 0; st == RA_OK && r < NRULES; r++)
            if (!caught[d][r]) {
                st = ra_report_printf(rep, "%s%s (x%.2g)", any ? ", " : "", rules[r].name,
                                      v[d][r].ratio);
                any = 1;
            }
        if (st == RA_OK)
            st = ra_report_printf(rep, "%s.\n", any ? "" : "every rule catches it");
    }
    if (st == RA_OK)
        st = ra_report_printf(rep, "\n");
    ra_plot plot = {.title = "metric: value / threshold of each rule on each planted defect",
                    .x = "defect_index",
                    .xlabel = "planted defect",
                    .xtic = "defect",
                    .y = {"ratio"},
                    .ylabel = "value / threshold (> 1: caught)",
                    .series = "rule",
                    .logy = 1};
    ra_report_set_points(rep, p, &plot);
    return st;
}
