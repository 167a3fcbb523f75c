/* Study "reversal", gdn part: the gated delta rule's backward with states recovered by inverting
 * steps. */

/*
 * gdn.cpu.f32.reversal keeps every L-th state and recovers the others by
 * inverting the step S_t = a (I - beta k k^T) S_{t-1} + beta k v^T, walking
 * back at most L - 1 steps (src/cpu/gdn_tmpl_seq.h).  One inverted step
 * multiplies an error by at most gain_t = 1 / (a_t min(1, |1 - beta_t
 * |k_t|^2|)) (the largest singular value of the inverse of the linear
 * part), so log10(error) grows in L with a slope bounded by the mean of
 * log10(gain_t) over the tokens: the model drawn and tabled here.  Unlike
 * the rotation scan, the step is not conformal: an error only meets the
 * full gain along k_t, and successive keys point in different directions,
 * so the measured slope may sit below the bound.  dv never reads a state
 * (dv = beta lambda^T k) and is the control; the state-reading error is
 * the worst max_rel over dq, dk, dg and dbeta.
 *
 * Grid: regimes default, near-unit and strong-decay on B=1,T=1024,Hk=1,
 * Hv=2,K=16,V=16 (f32, seed 1), L in {1, 2, ..., 512}, against gdn.cpu.f32
 * (which recomputes its states from checkpoints: bit-identical to storing
 * them).  --quick: default regime, T=64, K=V=8, L <= 16.
 */

#include "study/reversal.h"

#include <math.h>
#include <string.h>

#include "cpu/gdn_variants.h"
#include "recaudit/plugin.h"

static const char *const full_regimes[] = {"near-unit", "default", "strong-decay"};
static const char *const quick_regimes[] = {"default"};
static const int full_spans[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
static const int quick_spans[] = {1, 2, 4, 8, 16};
static const char *const state_tensors[] = {"dq", "dk", "dg", "dbeta"};

/* Per-token log10 gains over every (b, t, hv) of the case: the mean of
   the full bound, the mean of its isotropic decay part -log10 exp(g), and
   the largest single-token bound. */
typedef struct gains {
    double mean, decay, max;
} gains;

static gains case_gains(const ra_case *c)
{
    gains r = {NAN, NAN, NAN};
    const ra_tensor *k = ra_tensors_find(&c->tensors, "k");
    const ra_tensor *g = ra_tensors_find(&c->tensors, "g");
    const ra_tensor *b = ra_tensors_find(&c->tensors, "beta");
    if (!k || !g || !b || k->ndim != 4 || g->ndim != 3 || g->numel == 0)
        return r;
    const int64_t Hk = k->shape[2], K = k->shape[3], Hv = g->shape[2], grp = Hv / Hk;
    double sum = 0, dsum = 0, mx = 0;
    for (int64_t i = 0; i < g->numel; i++) {
        const int64_t row = i / Hv * Hk + i % Hv / grp;
        double n2 = 0;
        for (int64_t d = 0; d < K; d++)
            n2 += ra_tensor_get(k, row * K + d) * ra_tensor_get(k, row * K + d);
        const double m = fabs(1 - ra_tensor_get(b, i) * n2), gi = ra_tensor_get(g, i);
        const double lg = -gi / log(10) - log10(m < 1 ? m : 1);
        sum += lg;
        dsum += -gi / log(10);
        mx = lg > mx ? lg : mx;
    }
    r.mean = sum / (double)g->numel;
    r.decay = dsum / (double)g->numel;
    r.max = mx;
    return r;
}

/* The worst state-reading max_rel (its tensor in which) and dv's max_rel. */
static ra_status measure(ra_metrics *m, const char **which, double *control,
                         const ra_study_ctx *ctx, const ra_variant *v, const ra_study_case *sc)
{
    ra_case res;
    ra_case_init(&res);
    ra_status st = ra_study_run(&res, ctx, v, sc);
    ra_metrics x;
    int have = 0;
    for (size_t i = 0; st == RA_OK && i < sizeof state_tensors / sizeof *state_tensors; i++) {
        st = ra_study_measure(&x, &res, sc, state_tensors[i]);
        if (st != RA_OK || (have && isnan(m->max_rel)))
            continue; /* a NaN stays the worst */
        if (!have || isnan(x.max_rel) || x.max_rel > m->max_rel) {
            *m = x;
            *which = state_tensors[i];
            have = 1;
        }
    }
    if (st == RA_OK)
        st = ra_study_measure(&x, &res, sc, "dv");
    if (st == RA_OK)
        *control = x.max_rel;
    ra_case_clear(&res);
    return st;
}

static ra_status one_regime(ra_study_ctx *ctx, ra_points *p, ra_reversal_group *g, gains *gn,
                            const char *shape, const int *spans, size_t nl)
{
    const ra_variant *vf, *vrev;
    RA_TRY(ra_study_variant(&vf, ctx, "gdn.cpu.f32"));
    RA_TRY(ra_study_variant(&vrev, ctx, "gdn.cpu.f32.reversal"));
    ra_study_case sc;
    RA_TRY(ra_study_case_make(&sc, ctx, "gdn", shape, g->regime, "f32", 1, NULL, NULL, 1));
    if (ctx->verbose)
        fprintf(stderr, "study reversal: gdn %s\n", g->regime);
    *gn = case_gains(&sc.c);
    g->predict = gn->mean;
    g->first = ra_points_nrows(p);
    ra_metrics mf, m;
    const char *wf = "-", *w = "-";
    double cf, c;
    ra_status st = measure(&mf, &wf, &cf, ctx, vf, &sc);
    for (size_t il = 0; st == RA_OK && il < nl; il++) {
        ra_cpu_gdn_cfg cfg = *(const ra_cpu_gdn_cfg *)vrev->data;
        cfg.rev_span = spans[il];
        ra_variant v = *vrev;
        v.data = &cfg;
        st = ra_reversal_point(p, g, spans[il], vf->name, "recompute", wf, &mf, cf);
        if (st == RA_OK)
            st = measure(&m, &w, &c, ctx, &v, &sc);
        if (st == RA_EUNSUPPORTED) /* a singular step: not in these regimes */
            break;
        if (st == RA_OK)
            st = ra_reversal_point(p, g, spans[il], vrev->name, "reversal", w, &m, c);
    }
    ra_study_case_clear(&sc);
    RA_TRY(st);
    g->last = ra_points_nrows(p);
    g->floor = mf.max_rel;
    return ra_reversal_close(p, g);
}

static ra_status regime_table(ra_study_report *rep, const ra_points *p, const ra_reversal_group *g)
{
    int cl = ra_points_col(p, "L"), cb = ra_points_col(p, "backward"),
        cm = ra_points_col(p, "max_rel"), cmod = ra_points_col(p, "model"),
        cc = ra_points_col(p, "control_max_rel"), ct = ra_points_col(p, "tensor");
    RA_TRY(ra_report_printf(rep,
                            "\n**gdn %s** (max_rel; mean log10 gain per token %.3g)\n\n"
                            "| L | gdn.cpu.f32 (recompute) | reversal | worst tensor | bound "
                            "model | reversal dv (control) |\n|---:|---:|---:|---|---:|---:|\n",
                            g->regime, g->predict));
    for (size_t r = g->first; r < g->last; r++) {
        if (strcmp(ra_points_text(p, r, cb), "reversal") != 0)
            continue;
        double L, e, ef = NAN, mod = NAN, ctl = NAN;
        ra_points_num(&L, p, r, cl);
        ra_points_num(&e, p, r, cm);
        ra_points_num(&mod, p, r, cmod);
        ra_points_num(&ctl, p, r, cc);
        if (r > g->first)
            ra_points_num(&ef, p, r - 1, cm);
        char mtxt[32];
        ra_reversal_fmt_model(mtxt, sizeof mtxt, mod);
        RA_TRY(ra_report_printf(rep, "| %g | %.2e | %.2e | %s | %s | %.2e |\n", L, ef, e,
                                ra_points_text(p, r, ct), mtxt, ctl));
    }
    return RA_OK;
}

ra_status ra_reversal_gdn(ra_study_ctx *ctx, ra_study_report *rep, ra_points *p,
                          ra_reversal_group *groups, size_t *ngroups)
{
    const char *const *regimes = ctx->quick ? quick_regimes : full_regimes;
    const size_t nr = ctx->quick ? sizeof quick_regimes / sizeof *quick_regimes
                                 : sizeof full_regimes / sizeof *full_regimes;
    const int *spans = ctx->quick ? quick_spans : full_spans;
    const size_t nl = ctx->quick ? sizeof quick_spans / sizeof *quick_spans
                                 : sizeof full_spans / sizeof *full_spans;
    const char *shape =
        ctx->quick ? "B=1,T=64,Hk=1,Hv=2,K=8,V=8" : "B=1,T=1024,Hk=1,Hv=2,K=16,V=16";
    ra_report_seed(rep, 1);
    const size_t first = *ngroups;
    gains gn[8];
    for (size_t i = 0; i < nr && i < 8; i++) {
        ra_reversal_group *g = &groups[*ngroups];
        memset(g, 0, sizeof *g);
        snprintf(g->op, sizeof g->op, "gdn");
        snprintf(g->regime, sizeof g->regime, "%s", regimes[i]);
        g->gamma = NAN;
        RA_TRY(one_regime(ctx, p, g, &gn[i], shape, spans, nl));
        (*ngroups)++;
    }
    RA_TRY(ra_report_printf(
        rep,
        "## gdn: gdn.cpu.f32.reversal\n\n"
        "Case `%s`, f32 inputs, seed 1, one case per regime; gdn.cpu.f32.reversal with the span "
        "L set on copies of its registered row (registered: L = 8), against gdn.cpu.f32, whose "
        "backward recomputes the states (bit-identical to storing them).  The error is the "
        "worst max_rel over dq, dk, dg and dbeta, which read the recovered states; dv never "
        "reads a state and is the control.  One inverted step multiplies an error by at most "
        "1 / (exp(g) min(1, |1 - beta |k|^2|)); the model column is the recompute error times "
        "that bound's mean per token, 10^(mean log10 gain (L - 1)).  The step is not "
        "conformal (the full gain acts along k_t only, and keys turn from token to token), so "
        "the bound is an upper estimate of the slope, not an identity as for the rotation "
        "scan.\n",
        shape));
    RA_TRY(ra_report_printf(rep, "\n### Fitted growth against the mean log10 gain\n"));
    RA_TRY(ra_report_printf(
        rep, "\n| case | mean log10 gain (bound) | its decay part | largest one-token "
             "log10 gain | fitted slope | slope / bound | +- 1 s.e. | R^2 | points "
             "(L range) |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n"));
    for (size_t i = first; i < *ngroups; i++) {
        const ra_reversal_group *g = &groups[i];
        const gains *x = &gn[i - first];
        if (g->fitted)
            RA_TRY(ra_report_printf(
                rep,
                "| gdn %s | %.4f | %.4f | %.3g | %.4f | %.3f | %.4f | %.4f | %zu "
                "(%d..%d) |\n",
                g->regime, g->predict, x->decay, x->max, g->fit.slope, g->fit.slope / g->predict,
                g->fit.slope_se, g->fit.r2, g->fit.n, g->L_lo, g->L_hi));
        else
            RA_TRY(ra_report_printf(rep, "| gdn %s | %.4f | %.4f | %.3g | - | - | - | - | %zu |\n",
                                    g->regime, g->predict, x->decay, x->max, g->fit.n));
    }
    RA_TRY(ra_report_printf(
        rep,
        "\nWhy the slopes sit where they do: the decay part of the gain, 1/exp(g), acts on every "
        "direction of the state and is always paid; the delta part, 1/(1 - beta |k|^2), acts "
        "along k_t only, and an error component along one key is mostly not along the next, "
        "so it is paid only in part.  The slope therefore lies between the decay part and the "
        "full bound: near the bound where decay dominates the gain (strong-decay), far below it "
        "where the delta term dominates (near-unit, exp(g) ~ 1).  At short spans "
        "the worst window is set by the single largest token gain, not the mean, so the "
        "measured error can sit above the mean-gain model there (strong-decay).\n\n"));
    RA_TRY(ra_reversal_notes(rep, p, groups + first, *ngroups - first));
    RA_TRY(ra_report_printf(rep, "### Every span\n"));
    for (size_t i = first; i < *ngroups; i++)
        RA_TRY(regime_table(rep, p, &groups[i]));
    return ra_report_printf(rep, "\n");
}
