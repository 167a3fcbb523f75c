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

/* Storage of T, W, U and of the chunk states; the last two rows put f16
   on one of them only, to say which one overflows. */
static const struct {
    const char *name;
    ra_cpu_store twu, state;
    const char *pclass; /* for the unit roundoff of the storage format */
} stores[] = {{"f32", RA_CPU_STORE_F32, RA_CPU_STORE_F32, "f32"},
              {"bf16", RA_CPU_STORE_BF16, RA_CPU_STORE_BF16, "bf16"},
              {"f16", RA_CPU_STORE_F16, RA_CPU_STORE_F16, "f16"},
              {"f16-states", RA_CPU_STORE_F32, RA_CPU_STORE_F16, "f16"},
              {"f16-TWU", RA_CPU_STORE_F16, RA_CPU_STORE_F32, "f16"}};
#define NSTORE 5

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
    ra_cpu_gdn_cfg cfgs[NSTORE];
    ra_variant rows[NSTORE];
    char names[NSTORE][64];
    for (int s = 0; s < NSTORE; s++) {
        cfgs[s] = *base;
        cfgs[s].store = stores[s].twu;
        cfgs[s].state_store = stores[s].state;
        snprintf(names[s], sizeof names[s], "gdn.cpu.chunk64.ieee+store.%s", stores[s].name);
        rows[s] = (ra_variant){names[s],
                               "gdn",
                               "storage study row",
                               RA_CPU,
                               "ieee",
                               RA_FWD | RA_GDN_CAPS_ALL,
                               &cfgs[s],
                               ra_cpu_gdn_forward_row,
                               NULL,
                               NULL};
    }
    const int *Ts = ctx->quick ? lengths_q : lengths;
    ra_status st = RA_OK;
    /* For the text: per case and storage, the first T at which o is
       non-finite and its first bad token; the largest state per case; the
       errors by storage on the default regime. */
    int bad_T[3][NSTORE];
    int64_t bad_tok[3][NSTORE];
    for (int c = 0; c < 3; c++)
        for (int s = 0; s < NSTORE; s++)
            bad_T[c][s] = -1, bad_tok[c][s] = -1;
    double smax_at[3] = {0}, def_err[NSTORE] = {0};
    int wide_bad = 0; /* f32 or bf16 storage non-finite anywhere */
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
            for (int s = 0; st == RA_OK && s < NSTORE; s++) {
                int64_t bad;
                double o_rel;
                st = measure(p, ctx, &sc, &rows[s], cases[c].label, *T, stores[s].name,
                             ra_study_unit_roundoff(stores[s].pclass), smax, &bad, &o_rel);
                if (st != RA_OK)
                    break;
                if (bad >= 0 && bad_T[c][s] < 0)
                    bad_T[c][s] = *T, bad_tok[c][s] = bad;
                if (s < 2 && !isfinite(o_rel))
                    wide_bad = 1;
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
        /* stores[]: 2 = f16 everywhere, 3 = f16 states only, 4 = f16 T, W, U only. */
        char with_h0[160], without[256];
        snprintf(with_h0, sizeof with_h0, "%s",
                 bad_T[2][3] >= 0 ? "the f16 chunk states are inf from the first chunk"
                                  : "the f16 chunk states stay finite");
        if (bad_T[1][2] < 0)
            snprintf(without, sizeof without,
                     "without h0 nothing overflows (|ht| at the sampled T reaches %.3g)",
                     smax_at[1]);
        else
            snprintf(without, sizeof without,
                     "without h0 the first overflow is %s (f16 T, W, U alone non-finite %s%d, f16 "
                     "states alone %s%d; |ht| at the sampled T reaches %.3g)",
                     bad_T[1][4] >= 0 && (bad_T[1][3] < 0 || bad_T[1][4] <= bad_T[1][3])
                         ? "U = T (beta v), a sum of several values near the f16 limit"
                         : "the state",
                     bad_T[1][4] >= 0 ? "from T = " : "never", bad_T[1][4] >= 0 ? bad_T[1][4] : 0,
                     bad_T[1][3] >= 0 ? "from T = " : "never", bad_T[1][3] >= 0 ? bad_T[1][3] : 0,
                     smax_at[1]);
        st = ra_report_headline(
            rep,
            "f16 storage overflows to inf on large values while f32 and bf16 storage %s: in the "
            "large-state regime with h0 (state up to %.3g) %s, and %s; on O(1) values f16 storage "
            "costs o rel_rms %.3g and bf16 %.3g against %.3g for f32, about their unit roundoffs "
            "2^-11 and 2^-8.",
            wide_bad ? "mostly stay finite (see the table)" : "stay finite", smax_at[2], with_h0,
            without, def_err[2], def_err[1], def_err[0]);
    }
    if (st == RA_OK)
        st = ra_report_printf(rep, "## Where f16 overflows\n\n"
                                   "First T of the sweep at which o is non-finite, and its first "
                                   "bad token, by what is stored in f16 (\"never\": finite at "
                                   "every T).\n\n"
                                   "| case | largest max abs ht_ref | all f16 | f16 states only | "
                                   "f16 T, W, U only |\n|---|---|---|---|---|\n");
    for (int c = 0; st == RA_OK && c < 3; c++) {
        char cell[3][48];
        for (int s = 2; s < NSTORE; s++)
            if (bad_T[c][s] < 0)
                snprintf(cell[s - 2], sizeof cell[0], "never");
            else
                snprintf(cell[s - 2], sizeof cell[0], "T = %d (token %lld)", bad_T[c][s],
                         (long long)bad_tok[c][s]);
        st = ra_report_printf(rep, "| %s | %.3g | %s | %s | %s |\n", cases[c].label, smax_at[c],
                              cell[0], cell[1], cell[2]);
    }
    if (st == RA_OK)
        st = ra_report_printf(
            rep,
            "\nThe f16 limit is 65504: a stored value from 65520 up rounds to inf (the test "
            "special_tf32 of tests/t-tensor.c checks 65519 -> 65504, 65520 and 65536 -> inf).  A "
            "chunk-start state stored as inf makes every later o of that head non-finite (inf - "
            "inf, 0 * inf in the products); an inf anywhere in a chunk's U or W reaches every row "
            "of "
            "that chunk through the zero entries of the triangular products (0 * inf = NaN, as on "
            "a "
            "tensor core), so a bad token at the start of a chunk does not mean the overflow "
            "happened there.  bf16 has the fp32 exponent range and never "
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
