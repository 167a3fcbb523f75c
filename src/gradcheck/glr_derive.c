/* The gated linear recurrence's formula sets: seed 000's published backward and the suite's own. */
#include <stdlib.h>
#include <string.h>

#include "core/glr_case.h"
#include "gradcheck/derive.h"
#include "gradcheck/glr_gc.h"
#include "ref/glr.h"

/*
 * Seed 000 ("Mathematical Derivation of the Reverse-Time Backward Pass")
 * writes, with dh_t = dL/dh_t:
 *
 *     dh_t   = c_t^T grad_out_t + alpha_{t+1} (.) dh_{t+1}
 *     dc_t   = grad_out_t . h_t^T          dv_t = b_t^T . dh_t
 *     db_t   = dh_t . v_t^T
 *     dg_t   = sum_{s,d} dh_t (.) A_log (.) alpha_t (.) h_{t-1}
 *     dA_log = sum_t dh_t (.) g_t (.) alpha_t (.) h_{t-1}
 *
 * eval implements them literally: every state h_0 .. h_T stored, alpha
 * from the case's own decay parameterisation, dh by the recursion as
 * written, each gradient from its line.  The dh line is checked as the
 * gradient of the state perturbation hs (ra_gc_op_glr_state), dA_log's
 * sum over t also runs over the batch (the derivation cases have B = 1,
 * where the two readings agree).  The corrected forms replace the factor
 * A_log of dg by d alpha/d g / alpha and g of dA_log by d alpha/d A_log /
 * alpha (docs/glr.md): under `linear` these are the written factors, under
 * `expneg` -exp(A_log) and -g exp(A_log).  The suite's own set (docs/glr.md)
 * is the same listing with the corrected factors, shipped.
 */

static const ra_derive_formula seed_formulas[] = {
    {"hs", "dh_t = c_t^T grad_out_t + alpha_{t+1} * dh_{t+1}", NULL},
    {"c", "dc_t = grad_out_t . h_t^T", NULL},
    {"v", "dv_t = b_t^T . dh_t", NULL},
    {"b", "db_t = dh_t . v_t^T", NULL},
    {"g", "dg_t = sum_{s,d} dh_t * A_log * alpha_t * h_{t-1}",
     "dg_t = sum_{s,d} dh_t * (-exp(A_log)) * alpha_t * h_{t-1}"},
    {"A_log", "dA_log = sum_t dh_t * g_t * alpha_t * h_{t-1}",
     "dA_log = sum_t dh_t * (-g_t exp(A_log)) * alpha_t * h_{t-1}"},
    {NULL, NULL, NULL},
};

static const ra_derive_formula suite_formulas[] = {
    {"hs", "lambda_t = c_t do_t^T + alpha_{t+1} lambda_{t+1}", NULL},
    {"c", "dc_t[s] = sum_d h_t[s,d] do_t[d]", NULL},
    {"v", "dv_t[d] = sum_s b_t[s] lambda_t[s,d]", NULL},
    {"b", "db_t[s] = sum_d lambda_t[s,d] v_t[d]", NULL},
    {"g", "dg_t = sum_s (sum_d lambda_t h_{t-1}) dalpha_t[s]/dg_t", NULL},
    {"A_log", "dA_log[s] = sum_{b,t} (sum_d lambda_t h_{t-1}) dalpha_t[s]/dA_log[s]", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_case cases[] = {
    {"decay=expneg (HyMo code)", "B=1,T=6,H=2,S=3,D=2", "hymo", NULL},
    {"decay=linear (seed text)", "B=1,T=6,H=2,S=3,D=2", "hymo", "linear"},
    {NULL, NULL, NULL, NULL},
};

/* Input a of the layout (v, b, c, g, A_log, hs) as in ra_glr_arr_names. */
static ra_status eval_any(ra_mparr *grads, const ra_gc_layout *io, const ra_case *cs, int corrected,
                          mpfr_prec_t prec)
{
    ra_glr_problem p;
    RA_TRY(ra_glr_problem_init(&p, cs, RA_GLR_NEED_COTANGENTS, "derive"));
    const ra_glr_shape *s = &p.s;
    const int64_t S = s->S, D = s->D, T = s->T, SD = S * D;
    if (io->nin != RA_GLR_NPERT)
        RA_ERRORF(RA_EINTERNAL, "derive glr: %d inputs, expected %d", io->nin, RA_GLR_NPERT);
    for (int a = 0; a < io->nin; a++)
        RA_TRY(ra_mparr_init(&grads[a], (size_t)io->in[a].n, prec));
    ra_mparr H = {0}, dh = {0}, al = {0}, w = {0};
    ra_status st = ra_mparr_init(&H, (size_t)((T + 1) * SD), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&dh, (size_t)((T + 2) * SD), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&al, (size_t)((T + 2) * S), prec);
    if (st == RA_OK)
        st = ra_mparr_init(&w, 8, prec);
    if (st != RA_OK)
        goto done;
    mpfr_ptr x = w.x, y = w.x + 1, A = w.x + 2, g = w.x + 3, fg = w.x + 4, fa = w.x + 5,
             tmp = w.x + 6, z = w.x + 7;
    ra_mp_range range;
    ra_mp_range_widen(&range);
    mpfr_clear_flags();
#define HH(t, i, d) (H.x + (t)*SD + (i)*D + (d))
#define DH(t, i, d) (dh.x + (t)*SD + (i)*D + (d))
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t h = 0; h < s->H; h++) {
            ra_mp_zero(H.x, H.n);
            ra_mp_zero(dh.x, dh.n);
            ra_mp_zero(al.x, al.n);
            /* forward: h_t = alpha_t h_{t-1} + b_t v_t^T, t = 1..T */
            for (int64_t t = 1; t <= T; t++) {
                ra_tensor_get_mpfr(g, p.g, ra_glr_gate_index(s, b, t - 1, h));
                for (int64_t i = 0; i < S; i++) {
                    ra_tensor_get_mpfr(A, p.A_log, h * S + i);
                    ra_glr_alpha(al.x + t * S + i, NULL, NULL, g, A, p.decay, tmp);
                    for (int64_t d = 0; d < D; d++) {
                        ra_tensor_get_mpfr(x, p.b, ra_glr_bs_index(s, b, t - 1, h, i));
                        ra_tensor_get_mpfr(y, p.v, ra_glr_vd_index(s, b, t - 1, h, d));
                        mpfr_mul(x, x, y, MPFR_RNDN);
                        mpfr_fma(HH(t, i, d), al.x + t * S + i, HH(t - 1, i, d), x, MPFR_RNDN);
                    }
                }
            }
            /* dh_t = c_t^T grad_out_t + alpha_{t+1} * dh_{t+1}  (dh_{T+1} = 0) */
            for (int64_t t = T; t >= 1; t--)
                for (int64_t i = 0; i < S; i++)
                    for (int64_t d = 0; d < D; d++) {
                        ra_tensor_get_mpfr(x, p.c, ra_glr_bs_index(s, b, t - 1, h, i));
                        ra_tensor_get_mpfr(y, p.do_, ra_glr_vd_index(s, b, t - 1, h, d));
                        mpfr_mul(x, x, y, MPFR_RNDN);
                        mpfr_fma(DH(t, i, d), al.x + (t + 1) * S + i, DH(t + 1, i, d), x,
                                 MPFR_RNDN);
                    }
            for (int64_t t = 1; t <= T; t++) {
                const int64_t tt = t - 1;
                ra_tensor_get_mpfr(g, p.g, ra_glr_gate_index(s, b, tt, h));
                mpfr_ptr dg = grads[RA_GLR_G].x + ra_glr_gate_index(s, b, tt, h);
                for (int64_t i = 0; i < S; i++) {
                    ra_tensor_get_mpfr(A, p.A_log, h * S + i);
                    /* the factors of dg and dA_log: as written A_log and g;
                       corrected: the partials of alpha over alpha */
                    if (corrected && p.decay == RA_GLR_EXPNEG) {
                        mpfr_exp(fg, A, MPFR_RNDN);
                        mpfr_neg(fg, fg, MPFR_RNDN);
                        mpfr_mul(fa, fg, g, MPFR_RNDN);
                    } else {
                        mpfr_set(fg, A, MPFR_RNDN);
                        mpfr_set(fa, g, MPFR_RNDN);
                    }
                    mpfr_ptr dc = grads[RA_GLR_C].x + ra_glr_bs_index(s, b, tt, h, i);
                    mpfr_ptr db = grads[RA_GLR_B].x + ra_glr_bs_index(s, b, tt, h, i);
                    ra_tensor_get_mpfr(z, p.b, ra_glr_bs_index(s, b, tt, h, i));
                    for (int64_t d = 0; d < D; d++) {
                        ra_tensor_get_mpfr(y, p.do_, ra_glr_vd_index(s, b, tt, h, d));
                        mpfr_fma(dc, y, HH(t, i, d), dc, MPFR_RNDN); /* grad_out_t . h_t^T */
                        ra_tensor_get_mpfr(y, p.v, ra_glr_vd_index(s, b, tt, h, d));
                        mpfr_fma(db, DH(t, i, d), y, db, MPFR_RNDN); /* dh_t . v_t^T */
                        mpfr_ptr dv = grads[RA_GLR_V].x + ra_glr_vd_index(s, b, tt, h, d);
                        mpfr_fma(dv, z, DH(t, i, d), dv, MPFR_RNDN); /* b_t^T . dh_t */
                        /* dh_t * F * alpha_t * h_{t-1} */
                        mpfr_mul(x, DH(t, i, d), al.x + t * S + i, MPFR_RNDN);
                        mpfr_mul(x, x, HH(t - 1, i, d), MPFR_RNDN);
                        mpfr_fma(dg, x, fg, dg, MPFR_RNDN);
                        mpfr_fma(grads[RA_GLR_ALOG].x + h * S + i, x, fa,
                                 grads[RA_GLR_ALOG].x + h * S + i, MPFR_RNDN);
                        mpfr_set(grads[RA_GLR_HS].x + ((b * T + tt) * s->H + h) * SD + i * D + d,
                                 DH(t, i, d), MPFR_RNDN);
                    }
                }
            }
        }
#undef HH
#undef DH
    if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p())
        RA_REPORTF(st = RA_ENUMERIC, "derive glr at %ld bits: left MPFR's exponent range",
                   (long)prec);
    ra_mp_range_restore(&range);
done:
    ra_mparr_free(&H);
    ra_mparr_free(&dh);
    ra_mparr_free(&al);
    ra_mparr_free(&w);
    return st;
}

static ra_status eval_seed(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c, int corrected,
                           mpfr_prec_t prec)
{
    return eval_any(grads, io, c, corrected, prec);
}

static ra_status eval_suite(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c,
                            int corrected, mpfr_prec_t prec)
{
    (void)corrected;
    return eval_any(grads, io, c, 1, prec);
}

static const ra_derive_set seed000 = {
    .name = "glr, seed 000",
    .source = "seed 000 (seeds/000_8294aa720dbbf5cc.txt, HyMo), \"Mathematical Derivation of "
              "the Reverse-Time Backward Pass\"",
    .shipped = 0,
    .gc = &ra_gc_op_glr_state,
    .formulas = seed_formulas,
    .cases = cases,
    .eval = eval_seed,
};

static const ra_derive_set suite = {
    .name = "glr, docs/glr.md",
    .source = "docs/glr.md \"Backward\" (SPEC.md §2)",
    .shipped = 1,
    .gc = &ra_gc_op_glr_state,
    .formulas = suite_formulas,
    .cases = cases,
    .eval = eval_suite,
};

const ra_derive_set *const ra_glr_derive_sets[] = {&suite, &seed000, NULL};
