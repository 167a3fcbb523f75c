/* The storage study: per-chunk states, T, W and U kept in f32, bf16 or f16, and where f16
 * overflows. */

/*
 * A chunked kernel writes T, W, U and each chunk-start state to memory and
 * reads them back: fla stores them in the input dtype.  The study holds the
 * arithmetic fixed (chunk 64, IEEE fp32 operands, forward substitution, o
 * and ht stored in f32) and varies only that storage (the cfg->store knob
 * of src/cpu/gdn_tmpl_chunk.h): f32, bf16 (u = 2^-8, the fp32 range) and
 * f16 (u = 2^-11, largest finite 65504: the tie 65520 and everything above
 * rounds to inf).  Cases: the default regime (values O(1)) and large-state
 * (v = 2^15 N(0,1), near-unit decay: without h0 the state builds up to
 * around the f16 limit, with h0 = 2^17 N(0,1) it starts beyond it), at
 * T = 64 ... 4096.  For every point: o and ht against the certified
 * reference (cache), the number of non-finite elements, the first token
 * whose o is non-finite, and max |ht_ref| (how large the state has grown
 * by the end of the case) beside the f16 limit.  Where a device answers,
 * the registered CUDA chunk64 ieee and bf16 rows (f32 and bf16 storage)
 * run on the same cases.
 */

#include "study/prec.h"
#include "study/study.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu/gdn_variants.h"
#include "recaudit/gdn.h"

#define F16_MAX 65504.0

static const struct {
    const char *name;
    ra_cpu_store store;
    const char *pclass; /* for the unit roundoff of the storage format */
} stores[] = {{"f32", RA_CPU_STORE_F32, "f32"},
              {"bf16", RA_CPU_STORE_BF16, "bf16"},
              {"f16", RA_CPU_STORE_F16, "f16"}};

static const struct {
    const char *regime, *flags, *label;
} cases[] = {{"default", NULL, "default"},
             {"large-state", NULL, "large-state"},
             {"large-state", "h0", "large-state+h0"}};

static const int lengths[] = {64, 256, 1024, 4096, 0}, lengths_q[] = {64, 256, 0};

/* First token index whose o row holds a non-finite value, -1 if none. */
static int64_t first_bad_token(const ra_case *res)
{
    const ra_tensor *o = ra_tensors_find(&res->tensors, "o");
    if (!o || o->ndim != 4)
        return -1;
    const int64_t T = o->shape[1], row = o->numel / (o->shape[0] * T);
    int64_t first = -1;
    for (int64_t i = 0; i < o->numel; i++)
        if (!isfinite(ra_tensor_get(o, i))) {
            const int64_t t = i / row % T;
            if (first < 0 || t < first)
                first = t;
        }
    return first;
}

static double ref_state_max(const ra_study_case *sc)
{
    const ra_tensor *ht = ra_tensors_find(&sc->ref.tensors, "ht");
    double m = 0;
    for (int64_t i = 0; ht && i < ht->numel; i++)
        m = fmax(m, fabs(ra_tensor_get(ht, i)));
    return m;
}

static ra_status measure(ra_points *p, ra_study_ctx *ctx, const ra_study_case *sc,
                         const ra_variant *v, const char *label, int T, const char *storage,
                         double u, double smax, int64_t *first_bad, double *o_rel)
{
    ra_case res;
    ra_case_init(&res);
    ra_status st = ra_study_run(&res, ctx, v, sc);
    *first_bad = st == RA_OK ? first_bad_token(&res) : -1;
    static const char *const outs[] = {"o", "ht"};
    for (int i = 0; st == RA_OK && i < 2; i++) {
        ra_metrics m;
        if ((st = ra_study_measure(&m, &res, sc, outs[i])) != RA_OK ||
            (st = ra_points_row(p)) != RA_OK ||
            (st = ra_points_set_text(p, "case", label)) != RA_OK ||
            (st = ra_points_set_num(p, "T", T)) != RA_OK ||
            (st = ra_points_set_text(p, "variant", v->name)) != RA_OK ||
            (st = ra_points_set_text(p, "storage", storage)) != RA_OK ||
            (st = ra_points_set_text(p, "tensor", outs[i])) != RA_OK ||
            (st = ra_study_put_metrics(p, &m)) != RA_OK ||
            (st = ra_points_set_num(p, "u_storage", u)) != RA_OK ||
            (st = ra_points_set_num(p, "ref_max_state", smax)) != RA_OK)
            break;
        if (i == 0) {
            *o_rel = m.nan_count + m.inf_count ? INFINITY : m.rel_rms;
            if (*first_bad >= 0)
                st = ra_points_set_num(p, "first_nonfinite_t", (double)*first_bad);
            /* The plot draws finite errors; a non-finite o is drawn at 1
               (the top of the axis) so the overflow shows. */
            if (st == RA_OK)
                st = ra_points_set_num(p, "plot_rel_rms", isfinite(*o_rel) ? *o_rel : 1.0);
        }
    }
    ra_case_clear(&res);
    return st;
}

static int keep_o(const ra_points *p, size_t row, void *arg)
{
    (void)arg;
    const char *t = ra_points_text(p, row, ra_points_col(p, "tensor"));
    return t && strcmp(t, "o") == 0;
}

ra_status ra_study_storage(ra_study_ctx *ctx, ra_study_report *rep)
{
    static const char *const cols[] = {
        "case",         "T",       "variant",   "storage",           "tensor",    "max_rel",
        "rel_rms",      "max_abs", "nonfinite", "first_nonfinite_t", "u_storage", "ref_max_state",
        "plot_rel_rms", NULL};
    ra_points *p;
    RA_TRY(ra_points_new(&p, cols));
    const unsigned long long seed = 65504;
    ra_report_seed(rep, seed);
    const ra_cpu_gdn_cfg *base = ra_cpu_gdn_variant_cfg("gdn.cpu.chunk64.ieee");
    if (!base) {
        ra_points_free(p);
        RA_ERROR("storage study: gdn.cpu.chunk64.ieee is not registered", RA_ENOTFOUND);
    }
    ra_cpu_gdn_cfg cfgs[3];
    ra_variant rows[3];
    char names[3][64];
    for (int s = 0; s < 3; s++) {
        cfgs[s] = *base;
        cfgs[s].store = stores[s].store;
        snprintf(names[s], sizeof names[s], "gdn.cpu.chunk64.ieee+store.%s", stores[s].name);
        rows[s] = (ra_variant){names[s],
                               "gdn",
                               "storage study row",
                               RA_CPU,
                               "ieee",
                               RA_FWD | RA_GDN_CAPS_ALL,
                               &cfgs[s],
                               ra_cpu_gdn_forward_row,
                               NULL};
    }
    const int *Ts = ctx->quick ? lengths_q : lengths;
    ra_status st = RA_OK;
    /* For the text: per case label, the first T at which f16 is non-finite
       and the largest state; the worst finite errors by storage on default. */
    int f16_bad_T[3] = {-1, -1, -1};
    int64_t f16_bad_tok[3] = {-1, -1, -1};
    double smax_at[3] = {0}, def_err[3] = {0}, other_bad[3] = {0};
    for (int c = 0; st == RA_OK && c < 3; c++)
        for (const int *T = Ts; st == RA_OK && *T; T++) {
            char shape[96];
            snprintf(shape, sizeof shape, "B=1,T=%d,Hk=1,Hv=2,K=%d,V=%d", *T, ctx->quick ? 16 : 32,
                     ctx->quick ? 16 : 32);
            ra_study_case sc;
            if ((st = ra_study_case_make(&sc, ctx, "gdn", shape, cases[c].regime, "f16", seed,
                                         cases[c].flags, NULL, 0)) != RA_OK)
                break;
            const double smax = ref_state_max(&sc);
            smax_at[c] = fmax(smax_at[c], smax);
            for (int s = 0; st == RA_OK && s < 3; s++) {
                int64_t bad;
                double o_rel;
                st = measure(p, ctx, &sc, &rows[s], cases[c].label, *T, stores[s].name,
                             ra_study_unit_roundoff(stores[s].pclass), smax, &bad, &o_rel);
                if (st != RA_OK)
                    break;
                if (s == 2 && bad >= 0 && f16_bad_T[c] < 0)
                    f16_bad_T[c] = *T, f16_bad_tok[c] = bad;
                if (s != 2 && !isfinite(o_rel))
                    other_bad[c] = 1;
                if (c == 0)
                    def_err[s] = fmax(def_err[s], o_rel);
            }
            /* Registered CUDA rows of the two storages fla uses. */
            for (size_t i = 0; st == RA_OK && i < ra_registry_count(ctx->registry); i++) {
                const ra_variant *v = ra_registry_at(ctx->registry, i);
                char why[256];
                const int ie = ra_glob_match("gdn.cuda.chunk64.ieee", v->name),
                          bf = ra_glob_match("gdn.cuda.chunk64.bf16", v->name);
                if ((!ie && !bf) || !ra_study_device_ok(v, why, sizeof why))
                    continue;
                ra_report_used_gpu(rep);
                int64_t bad;
                double o_rel;
                st = measure(p, ctx, &sc, v, cases[c].label, *T, ie ? "f32" : "bf16",
                             ra_study_unit_roundoff(ie ? "f32" : "bf16"), smax, &bad, &o_rel);
            }
            ra_study_case_clear(&sc);
            if (ctx->verbose)
                fprintf(stderr, "storage: %s T=%d done\n", cases[c].label, *T);
        }
    if (st == RA_OK) {
        char where[256];
        if (f16_bad_T[1] >= 0)
            snprintf(
                where, sizeof where,
                "without h0 from T = %d (first non-finite o at token %lld, the state peaking at "
                "%.3g)",
                f16_bad_T[1], (long long)f16_bad_tok[1], smax_at[1]);
        else
            snprintf(where, sizeof where,
                     "not without h0 (the state peaks at %.3g, %s the f16 limit 65504)", smax_at[1],
                     smax_at[1] > F16_MAX ? "above" : "below");
        st = ra_report_headline(
            rep,
            "f16 storage of the chunk states overflows to inf on large states (large-state regime: "
            "with h0 %s, %s) while f32 and bf16 storage stay finite%s; on O(1) values f16 storage "
            "costs o rel_rms %.3g and bf16 %.3g against %.3g for f32, about their unit roundoffs "
            "2^-11 and 2^-8.",
            f16_bad_T[2] >= 0 ? "from the first chunk" : "not at all", where,
            other_bad[1] || other_bad[2] ? " (except where noted)" : "", def_err[2], def_err[1],
            def_err[0]);
    }
    if (st == RA_OK)
        st = ra_report_printf(
            rep,
            "## Where f16 overflows\n\n"
            "| case | largest max abs ht_ref | f16 o first non-finite at T | first bad token |\n"
            "|---|---|---|---|\n");
    for (int c = 0; st == RA_OK && c < 3; c++)
        st = ra_report_printf(rep, "| %s | %.3g | %s%d | %lld |\n", cases[c].label, smax_at[c],
                              f16_bad_T[c] < 0 ? "never; " : "",
                              f16_bad_T[c] < 0 ? 0 : f16_bad_T[c], (long long)f16_bad_tok[c]);
    if (st == RA_OK)
        st = ra_report_printf(
            rep,
            "\nThe f16 limit is 65504: a stored value from 65520 up rounds to inf (the test "
            "special_tf32 of tests/t-tensor.c checks 65519 -> 65504, 65520 and 65536 -> inf).  A "
            "chunk-start state stored as inf makes every later o of that head non-finite (inf - "
            "inf, 0 * inf in the products), so the first bad token is the first token of the chunk "
            "after the state crossed the limit.  bf16 has the fp32 exponent range and never "
            "overflows here; it pays 3 more bits of mantissa loss than f16 instead.\n\n");
    static const char *const tcols[] = {
        "case",    "T",         "variant",           "storage",       "rel_rms",
        "max_rel", "nonfinite", "first_nonfinite_t", "ref_max_state", NULL};
    if (st == RA_OK && (st = ra_report_printf(rep, "## Every point (o)\n\n")) == RA_OK)
        st = ra_report_table(rep, p, tcols, keep_o, NULL);
    if (st != RA_OK) {
        ra_points_free(p);
        return st;
    }
    static const ra_plot plot = {.title = "storage of T, W, U and chunk states: error of o",
                                 .x = "T",
                                 .xlabel = "T (tokens)",
                                 .y = {"plot_rel_rms", NULL},
                                 .ylabel = "rel_rms of o (non-finite drawn at 1)",
                                 .model = {"u_storage", NULL},
                                 .series = "variant",
                                 .panel = "case",
                                 .logx = 1,
                                 .logy = 1};
    ra_report_set_points(rep, p, &plot);
    return RA_OK;
}
