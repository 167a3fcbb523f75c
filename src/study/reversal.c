/* Study "reversal": how the error of a backward that reconstructs states by inverting steps grows
 * with the span. */

/*
 * A reversal backward keeps a checkpoint every L steps and recovers the
 * states in between by inverting the forward step, walking back at most
 * L - 1 steps.  An error e in a state becomes e / sigma_min(A_t) one step
 * back, so after j steps it is about e * prod sigma_min^-1; on the
 * rotation regime (A_t = gamma R(theta_t), conformal: every singular
 * value is gamma) that is e * gamma^-j exactly, and the backward error of
 * dA, which reads the recovered states, should grow like gamma^-(L-1):
 * log10(error) linear in L with slope -log10(gamma) (seed 002's
 * "sigma_min^-chunklen").  dBm, the reversed adjoint, never reads a state,
 * so its error must not grow at all: the control.
 *
 * Grid: gamma in {0.99, 0.9, 0.7, 0.5}, L in {1, 2, 4, ..., 512}, on one
 * case per gamma (scan.affine B=1,T=1024,N=8,k=2,v=1, f32, seed 1; the
 * reference through the cache), for the store (no span), recompute
 * (checkpoints every L, segments re-run) and reversal backwards of the
 * registered CPU rows scan.cpu.affine.ieee.*: the span is the row's
 * configuration (ra_cpu_scan_cfg.span), which the study varies on copies
 * of the registered rows, so the kernel measured is the registered one.
 * The fit (GSL) uses the reversal points whose error is finite and at
 * least 10x the store backward's (where the amplification, not the
 * forward's own roundoff, sets the error).  --quick: gamma = 0.5,
 * L <= 32, T = 64.
 *
 * The gdn part (reversal_gdn.c) does the same for the gated delta rule's
 * sequential fp32 backward (gdn.cpu.f32.reversal).  One points table holds
 * both parts (op, regime and panel tell them apart).
 */

#include "study/reversal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/scan_variants.h"
#include "study/studies.h"

static const double full_gammas[] = {0.99, 0.9, 0.7, 0.5};
static const double quick_gammas[] = {0.5};
static const int full_spans[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
static const int quick_spans[] = {1, 2, 4, 8, 16, 32};

const char *const ra_reversal_cols[] = {
    "op",      "regime",  "gamma",           "L",     "variant", "backward", "tensor",
    "max_rel", "rel_rms", "control_max_rel", "model", "in_fit",  "panel",    NULL};

ra_status ra_reversal_point(ra_points *p, const ra_reversal_group *g, int L, const char *variant,
                            const char *backward, const char *tensor, const ra_metrics *m,
                            double control)
{
    RA_TRY(ra_points_row(p));
    RA_TRY(ra_points_set_text(p, "op", g->op));
    RA_TRY(ra_points_set_text(p, "regime", g->regime));
    if (isfinite(g->gamma))
        RA_TRY(ra_points_set_num(p, "gamma", g->gamma));
    RA_TRY(ra_points_set_num(p, "L", L));
    RA_TRY(ra_points_set_text(p, "variant", variant));
    RA_TRY(ra_points_set_text(p, "backward", backward));
    RA_TRY(ra_points_set_text(p, "tensor", tensor));
    RA_TRY(ra_points_set_num(p, "max_rel", m->max_rel));
    RA_TRY(ra_points_set_num(p, "rel_rms", m->rel_rms));
    RA_TRY(ra_points_set_num(p, "control_max_rel", control));
    return ra_points_set_textf(p, "panel", "%s %s", g->op, g->regime);
}

ra_status ra_reversal_close(ra_points *p, ra_reversal_group *g)
{
    double x[64], y[64];
    size_t n = 0;
    int cm = ra_points_col(p, "max_rel"), cl = ra_points_col(p, "L"),
        cb = ra_points_col(p, "backward");
    g->L_lo = g->L_hi = 0;
    g->seed_L = 0;
    g->fitted = 0;
    for (size_t r = g->first; r < g->last; r++) {
        double e, L;
        if (strcmp(ra_points_text(p, r, cb), "reversal") != 0 || !ra_points_num(&e, p, r, cm) ||
            !ra_points_num(&L, p, r, cl))
            continue;
        const int use = isfinite(e) && e >= 10 * g->floor;
        const double model = g->floor * pow(10, g->predict * (L - 1));
        if (model <= 3.4e38) /* past fp32's range the model says nothing measurable */
            RA_TRY(ra_points_put_num(p, r, "model", model));
        RA_TRY(ra_points_put_text(p, r, "in_fit", use ? "yes" : "no"));
        if (!g->seed_L && !(e < RA_REVERSAL_SEED_FIGURE))
            g->seed_L = L;
        if (use && n < 64) {
            x[n] = L;
            y[n] = log10(e);
            if (!g->L_lo)
                g->L_lo = (int)L;
            g->L_hi = (int)L;
            n++;
        }
    }
    if (n >= 2) {
        RA_TRY(ra_fit_linear(&g->fit, x, y, n));
        g->fitted = 1;
    }
    g->fit.n = n;
    return RA_OK;
}

void ra_reversal_fmt_model(char *buf, size_t len, double model)
{
    if (isnan(model))
        snprintf(buf, len, "> 3.4e38");
    else
        snprintf(buf, len, "%.2e", model);
}

/* One run: metrics of the state-reading tensor, max_rel of the control. */
static ra_status measure(ra_metrics *m, double *control, const ra_study_ctx *ctx,
                         const ra_variant *v, const ra_study_case *sc)
{
    ra_case res;
    ra_case_init(&res);
    ra_status st = ra_study_run(&res, ctx, v, sc);
    ra_metrics mc;
    if (st == RA_OK)
        st = ra_study_measure(m, &res, sc, "dA");
    if (st == RA_OK)
        st = ra_study_measure(&mc, &res, sc, "dBm");
    if (st == RA_OK)
        *control = mc.max_rel;
    ra_case_clear(&res);
    return st;
}

/* A copy of a registered scan row with checkpoint span L. */
static void span_row(ra_variant *v, ra_cpu_scan_cfg *cfg, const ra_variant *base, int span)
{
    *cfg = *(const ra_cpu_scan_cfg *)base->data;
    cfg->span = span;
    *v = *base;
    v->data = cfg;
}

static ra_status scan_gamma(ra_study_ctx *ctx, ra_points *p, ra_reversal_group *g,
                            const char *shape, const int *spans, size_t nl)
{
    const ra_variant *vs, *vr, *vrev;
    RA_TRY(ra_study_variant(&vs, ctx, "scan.cpu.affine.ieee.store"));
    RA_TRY(ra_study_variant(&vr, ctx, "scan.cpu.affine.ieee.recompute"));
    RA_TRY(ra_study_variant(&vrev, ctx, "scan.cpu.affine.ieee.reversal"));
    ra_study_case sc;
    RA_TRY(ra_study_case_make(&sc, ctx, "scan.affine", shape, g->regime, "f32", 1, NULL, NULL, 1));
    if (ctx->verbose)
        fprintf(stderr, "study reversal: scan.affine %s\n", g->regime);
    g->first = ra_points_nrows(p);
    ra_metrics ms, m;
    double cs, c;
    ra_status st = measure(&ms, &cs, ctx, vs, &sc);
    for (size_t il = 0; st == RA_OK && il < nl; il++) {
        const int L = spans[il];
        ra_cpu_scan_cfg cfg;
        ra_variant v;
        st = ra_reversal_point(p, g, L, vs->name, "store", "dA", &ms, cs);
        span_row(&v, &cfg, vr, L);
        if (st == RA_OK)
            st = measure(&m, &c, ctx, &v, &sc);
        if (st == RA_OK)
            st = ra_reversal_point(p, g, L, vr->name, "recompute", "dA", &m, c);
        span_row(&v, &cfg, vrev, L);
        if (st == RA_OK)
            st = measure(&m, &c, ctx, &v, &sc);
        if (st == RA_OK)
            st = ra_reversal_point(p, g, L, vrev->name, "reversal", "dA", &m, c);
    }
    ra_study_case_clear(&sc);
    RA_TRY(st);
    g->last = ra_points_nrows(p);
    g->floor = ms.max_rel;
    return ra_reversal_close(p, g);
}

/* The per-L table of one group: store, recompute, reversal, model, control. */
static ra_status group_table(ra_study_report *rep, const ra_points *p, const ra_reversal_group *g,
                             const char *state_tensor, const char *control_tensor)
{
    int cl = ra_points_col(p, "L"), cb = ra_points_col(p, "backward"),
        cm = ra_points_col(p, "max_rel"), cmod = ra_points_col(p, "model"),
        cc = ra_points_col(p, "control_max_rel");
    RA_TRY(ra_report_printf(
        rep,
        "\n**%s %s** (max_rel)\n\n| L | store %s | recompute %s | reversal "
        "%s | model | reversal %s (control) |\n|---:|---:|---:|---:|---:|---:|\n",
        g->op, g->regime, state_tensor, state_tensor, state_tensor, control_tensor));
    for (size_t r = g->first; r < g->last; r++) {
        if (strcmp(ra_points_text(p, r, cb), "store") != 0)
            continue;
        double L, v[3] = {NAN, NAN, NAN}, mod = NAN, ctl = NAN;
        ra_points_num(&L, p, r, cl);
        for (size_t q = r; q < g->last && q < r + 3; q++) {
            double Lq;
            if (!ra_points_num(&Lq, p, q, cl) || Lq != L)
                break;
            const char *b = ra_points_text(p, q, cb);
            int k = strcmp(b, "store") == 0 ? 0 : strcmp(b, "recompute") == 0 ? 1 : 2;
            ra_points_num(&v[k], p, q, cm);
            if (k == 2) {
                ra_points_num(&mod, p, q, cmod);
                ra_points_num(&ctl, p, q, cc);
            }
        }
        char mtxt[32];
        ra_reversal_fmt_model(mtxt, sizeof mtxt, mod);
        RA_TRY(ra_report_printf(rep, "| %g | %.2e | %.2e | %.2e | %s | %.2e |\n", L, v[0], v[1],
                                v[2], mtxt, ctl));
    }
    return RA_OK;
}

/* The fit table of groups [0, n). */
static ra_status fit_table(ra_study_report *rep, const ra_reversal_group *g, size_t n,
                           const char *predict_name)
{
    RA_TRY(ra_report_printf(rep,
                            "\n| case | %s | fitted slope | ratio | +- 1 s.e. | R^2 | points "
                            "(L range) | first L with error >= 9.3e19 | L where the fit "
                            "reaches 9.3e19 |\n|---|---:|---:|---:|---:|---:|---|---:|---:|\n",
                            predict_name));
    for (size_t i = 0; i < n; i++) {
        char seedL[32] = "not reached", fitL[32] = "-";
        if (g[i].seed_L)
            snprintf(seedL, sizeof seedL, "%g", g[i].seed_L);
        if (g[i].fitted && g[i].fit.slope > 0)
            snprintf(fitL, sizeof fitL, "%.0f",
                     (log10(RA_REVERSAL_SEED_FIGURE) - g[i].fit.intercept) / g[i].fit.slope);
        if (g[i].fitted)
            RA_TRY(ra_report_printf(
                rep, "| %s %s | %.4f | %.4f | %.3f | %.4f | %.4f | %zu (%d..%d) | %s | %s |\n",
                g[i].op, g[i].regime, g[i].predict, g[i].fit.slope, g[i].fit.slope / g[i].predict,
                g[i].fit.slope_se, g[i].fit.r2, g[i].fit.n, g[i].L_lo, g[i].L_hi, seedL, fitL));
        else
            RA_TRY(ra_report_printf(rep, "| %s %s | %.4f | - | - | - | - | %zu | %s | %s |\n",
                                    g[i].op, g[i].regime, g[i].predict, g[i].fit.n, seedL, fitL));
    }
    return ra_report_printf(rep, "\n");
}

/* Why a group's fit is missing or off: too little growth above the
   floor, non-finite errors (fp32 overflow of the recovered states). */
ra_status ra_reversal_notes(ra_study_report *rep, const ra_points *p, const ra_reversal_group *g,
                            size_t n)
{
    int cm = ra_points_col(p, "max_rel"), cl = ra_points_col(p, "L"),
        cb = ra_points_col(p, "backward");
    for (size_t i = 0; i < n; i++) {
        double Lnan = 0, Lmax = 0, e1 = NAN, e2 = NAN, L1 = 0, L2 = 0;
        for (size_t r = g[i].first; r < g[i].last; r++) {
            double e, L;
            if (strcmp(ra_points_text(p, r, cb), "reversal") != 0 || !ra_points_num(&e, p, r, cm) ||
                !ra_points_num(&L, p, r, cl))
                continue;
            if (L > Lmax)
                Lmax = L;
            if (!isfinite(e)) {
                if (!Lnan)
                    Lnan = L;
            } else {
                e1 = e2, L1 = L2;
                e2 = e, L2 = L;
            }
        }
        if (Lnan)
            RA_TRY(ra_report_printf(rep,
                                    "- %s %s: from L = %g the error is not finite: the "
                                    "recovered states overflow fp32 (an error of floor * "
                                    "10^(%.3g (L-1)) times the state's size passes 3.4e38), "
                                    "and inf - inf gives NaN; those points are outside the fit.\n",
                                    g[i].op, g[i].regime, Lnan, g[i].predict));
        if (!g[i].fitted) {
            RA_TRY(ra_report_printf(
                rep,
                "- %s %s: no fit: the model's amplification over the longest span, "
                "10^(%.3g x %g) = %.3g, leaves fewer than two points 10x above the floor "
                "(the forward's own roundoff, %.2e), so the growth is not clean",
                g[i].op, g[i].regime, g[i].predict, Lmax - 1, pow(10, g[i].predict * (Lmax - 1)),
                g[i].floor));
            if (isfinite(e1) && isfinite(e2) && e1 > 0 && e2 > e1)
                RA_TRY(ra_report_printf(rep,
                                        "; the slope between the two longest spans (L = %g, "
                                        "%g) is %.4f against %.4f (ratio %.2f), indicative only",
                                        L1, L2, (log10(e2) - log10(e1)) / (L2 - L1), g[i].predict,
                                        (log10(e2) - log10(e1)) / (L2 - L1) / g[i].predict));
            RA_TRY(ra_report_printf(rep, ".\n"));
        } else if (isfinite(g[i].gamma) && fabs(g[i].fit.slope / g[i].predict - 1) > 0.1) {
            RA_TRY(ra_report_printf(rep,
                                    "- %s %s: the fitted slope is %.0f%% off the model's: see "
                                    "the table of every span.\n",
                                    g[i].op, g[i].regime,
                                    100 * fabs(g[i].fit.slope / g[i].predict - 1)));
        }
    }
    return ra_report_printf(rep, "\n");
}

ra_status ra_reversal_scan(ra_study_ctx *ctx, ra_study_report *rep, ra_points *p,
                           ra_reversal_group *groups, size_t *ngroups)
{
    const double *gammas = ctx->quick ? quick_gammas : full_gammas;
    const size_t ng = ctx->quick ? sizeof quick_gammas / sizeof *quick_gammas
                                 : sizeof full_gammas / sizeof *full_gammas;
    const int *spans = ctx->quick ? quick_spans : full_spans;
    const size_t nl = ctx->quick ? sizeof quick_spans / sizeof *quick_spans
                                 : sizeof full_spans / sizeof *full_spans;
    const char *shape = ctx->quick ? "B=1,T=64,N=2,k=2,v=1" : "B=1,T=1024,N=8,k=2,v=1";
    ra_report_seed(rep, 1);
    for (size_t i = 0; i < ng; i++) {
        ra_reversal_group *g = &groups[*ngroups];
        memset(g, 0, sizeof *g);
        snprintf(g->op, sizeof g->op, "scan.affine");
        snprintf(g->regime, sizeof g->regime, "rotation:%g", gammas[i]);
        g->gamma = gammas[i];
        g->predict = -log10(gammas[i]);
        RA_TRY(scan_gamma(ctx, p, g, shape, spans, nl));
        (*ngroups)++;
    }
    RA_TRY(ra_report_printf(
        rep,
        "## scan.affine under rotation:GAMMA\n\n"
        "Case `%s`, f32 inputs, seed 1, one case (and one certified reference) per gamma; "
        "CPU rows scan.cpu.affine.ieee.{store,recompute,reversal} with the span L set on copies "
        "of the registered rows (the registered reversal row uses L = 8).  `max_rel` = max|err| "
        "/ max|ref| of dA, which reads the recovered states; dBm never reads a state and is the "
        "control.  The store backward has no span (the same value on every row).  model = the "
        "store error times gamma^-(L-1).\n\n"
        "### Fitted growth against -log10(gamma)\n\n"
        "log10(max_rel of dA) = a + slope L, fitted (gsl_fit_linear) over the reversal points "
        "with a finite error at least 10x the store backward's.\n",
        shape));
    RA_TRY(fit_table(rep, groups + *ngroups - ng, ng, "-log10(gamma)"));
    RA_TRY(ra_reversal_notes(rep, p, groups + *ngroups - ng, ng));
    RA_TRY(ra_report_printf(rep, "### Every span\n"));
    for (size_t i = *ngroups - ng; i < *ngroups; i++)
        RA_TRY(group_table(rep, p, &groups[i], "dA", "dBm"));
    return ra_report_printf(rep, "\n");
}

ra_status ra_study_reversal(ra_study_ctx *ctx, ra_study_report *rep)
{
    ra_points *p;
    RA_TRY(ra_points_new(&p, ra_reversal_cols));
    ra_reversal_group groups[16];
    size_t ng = 0;
    ra_status st = ra_reversal_scan(ctx, rep, p, groups, &ng);
    if (st == RA_OK)
        st = ra_reversal_gdn(ctx, rep, p, groups, &ng);
    if (st != RA_OK) {
        ra_points_free(p);
        return st;
    }
    /* headline: the scan fits, the seed's figure */
    char fits[512] = "";
    size_t used = 0;
    const ra_reversal_group *seed = NULL; /* the scan group reaching 9.3e19 at the smallest L */
    for (size_t i = 0; i < ng; i++) {
        const ra_reversal_group *g = &groups[i];
        if (strcmp(g->op, "scan.affine") != 0)
            continue;
        if (g->seed_L && (!seed || g->seed_L < seed->seed_L))
            seed = g;
        int w = g->fitted
                    ? snprintf(fits + used, sizeof fits - used, "%sgamma %g: %.4f vs %.4f",
                               used ? "; " : "", g->gamma, g->fit.slope, g->predict)
                    : snprintf(fits + used, sizeof fits - used,
                               "%sgamma %g: growth too small to fit", used ? "; " : "", g->gamma);
        if (w > 0 && (size_t)w < sizeof fits - used)
            used += (size_t)w;
    }
    char seedtxt[200];
    if (seed && seed->fitted)
        snprintf(seedtxt, sizeof seedtxt,
                 "the seed's 9.3e19 is reproduced: passed at gamma %g by L = %g (the fit "
                 "crosses it at L = %.0f)",
                 seed->gamma, seed->seed_L,
                 (log10(RA_REVERSAL_SEED_FIGURE) - seed->fit.intercept) / seed->fit.slope);
    else if (seed)
        snprintf(seedtxt, sizeof seedtxt, "the seed's 9.3e19 is passed at gamma %g by L = %g",
                 seed->gamma, seed->seed_L);
    else
        snprintf(seedtxt, sizeof seedtxt, "the seed's 9.3e19 is not reached on this grid");
    /* the gdn groups: slope against the bound */
    char gdn[512] = "";
    used = 0;
    for (size_t i = 0; i < ng; i++) {
        const ra_reversal_group *g = &groups[i];
        if (strcmp(g->op, "gdn") != 0)
            continue;
        int w = g->fitted ? snprintf(gdn + used, sizeof gdn - used, "%s%s %.3g (bound %.3g)",
                                     used ? ", " : "", g->regime, g->fit.slope, g->predict)
                          : snprintf(gdn + used, sizeof gdn - used, "%s%s too few clean points",
                                     used ? ", " : "", g->regime);
        if (w > 0 && (size_t)w < sizeof gdn - used)
            used += (size_t)w;
    }
    st = ra_report_headline(rep,
                            "The reversal backward's error grows as gamma^-L, as seed 002 "
                            "says: fitted log10 slope per step against -log10(gamma): %s; %s, "
                            "while store and recompute stay at fp32 roundoff.  gdn's reversal "
                            "backward (gdn.cpu.f32.reversal) also grows exponentially in L, "
                            "at or below the bound of its mean per-token gain (fitted log10 "
                            "slope per token: %s).",
                            fits, seedtxt, gdn[0] ? gdn : "not measured");
    ra_plot plot = {.title = "reversal: backward error against the span L",
                    .x = "L",
                    .xlabel = "reversal span L (steps walked back <= L-1)",
                    .y = {"max_rel"},
                    .ylabel = "max_rel of the state-reading gradient",
                    .model = {"model"},
                    .series = "backward",
                    .panel = "panel",
                    .logx = 1,
                    .logy = 1};
    ra_report_set_points(rep, p, &plot);
    return st;
}
