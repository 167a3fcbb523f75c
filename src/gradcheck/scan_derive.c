/* The scan family's formula sets: seed 002's reversed-scan backward and the suite's log-space one.
 */
#include <stdlib.h>
#include <string.h>

#include "core/scan_case.h"
#include "gradcheck/derive.h"
#include "gradcheck/scan_gc.h"

/*
 * Seed 002 ("Triton scan kernels", section "Autograd integration and the
 * reversed-scan backward") publishes the backward of the generic affine
 * core in words: "it reverse-scans the incoming output gradients with
 * A_{t+1}^T, then forms dL/dA_t from the forward outputs Abar_{t-1},
 * Bbar_{t-1} (seeded with I/0 at t = 1) and dL/dB_t directly".  SPEC.md
 * section 3 writes that as formulas, with G^A_t = dL/dAbar_t and
 * G^B_t = dL/dBbar_t:
 *
 *     Gh^A_t = G^A_t + A_{t+1}^T Gh^A_{t+1},  Gh^B_t = G^B_t + A_{t+1}^T Gh^B_{t+1}
 *     dA_t = Gh^A_t Abar_{t-1}^T + Gh^B_t Bbar_{t-1}^T,   dB_t = Gh^B_t
 *
 * and the seed says linear_scan is the same core at k = 1 (P = Abar,
 * h = Bbar, a = A, x = B).  Its parallel_scan_log backward is autograd
 * through recomputation: the seed publishes no formula for it, so the
 * only scan.log set is the suite's own (docs/scan.md): the same reversed
 * scan with A_t = exp(lc_t), B_t = exp(lv_t), Bbar_0 = h_0 = exp(lv_0),
 * no Abar output, and the chain rule through exp:
 * dlc_t = A_t (Gh_t h_{t-1}), dlv_t = B_t Gh_t, dlv_0 = h_0 A_1 Gh_1.
 *
 * ra_scan_derive_eval implements these lines literally on every lane:
 * all states Abar_0..Abar_T, Bbar_0..Bbar_T stored, Gh by the recursion
 * as written (Gh_{T+1} = 0), each gradient from its line, every matrix
 * product an explicit index sum.  It shares nothing with the reference
 * backward (src/ref/scan.c), which the finite differences check
 * separately.  Its `alter` flags write two plausible slips instead (the
 * reversed scan with A_{t+1} untransposed; dA from Abar_t, Bbar_t instead
 * of the previous states) so tests/t-derive.c shows the check tells them
 * apart.
 */

static const ra_derive_formula linear_formulas[] = {
    {"x", "dx_t = Gh^h_t,  Gh^h_t = dh_t + a_{t+1} Gh^h_{t+1}", NULL},
    {"a", "da_t = Gh^P_t P_{t-1} + Gh^h_t h_{t-1}  (P_0 = 1, h_0 = 0)", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_formula affine_formulas[] = {
    {"Bm", "dB_t = Gh^B_t,  Gh^B_t = G^B_t + A_{t+1}^T Gh^B_{t+1}", NULL},
    {"A", "dA_t = Gh^A_t Abar_{t-1}^T + Gh^B_t Bbar_{t-1}^T  (Abar_0 = I, Bbar_0 = 0)", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_formula log_formulas[] = {
    {"log_values", "dlv_t = exp(lv_t) Gh_t (t >= 1),  dlv_0 = h_0 exp(lc_1) Gh_1", NULL},
    {"log_coeffs", "dlc_t = exp(lc_t) Gh_t h_{t-1}  (h_0 = exp(lv_0))", NULL},
    {NULL, NULL, NULL},
};

static const ra_derive_case linear_cases[] = {
    {"k=1 (linear_scan), a ~ U(-0.9, 0.9)", "B=2,T=7,D=2", "default", NULL},
    {NULL, NULL, NULL, NULL},
};

static const ra_derive_case affine_cases[] = {
    {"k=2, v=1 (matrix_scan)", "B=1,T=6,N=2,k=2,v=1", "default", NULL},
    {"k=2, v=1, rotations", "B=1,T=8,N=1,k=2,v=1", "rotation", NULL},
    {"k=4, v=2", "B=1,T=5,N=1,k=4,v=2", "default", NULL},
    {NULL, NULL, NULL, NULL},
};

static const ra_derive_case log_cases[] = {
    {"log-space, lc = logsigmoid(N(0,1))", "B=1,T=6,D=2", "default", NULL},
    {NULL, NULL, NULL, NULL},
};

/* x (+)= an element of tensor t (0 when t is absent: an optional cotangent) */
static void get(mpfr_ptr x, const ra_tensor *t, int64_t i)
{
    if (t)
        ra_tensor_get_mpfr(x, t, i);
    else
        mpfr_set_zero(x, 1);
}

/* One lane (b, n).  St: Abar_0..T then Bbar_0..T; G: Gh^A_1..T+1 then
   Gh^B_0..T+1 (index t); At: A_t for t = 0..T+1 (A_0, A_{T+1} unused). */
typedef struct lane {
    const ra_scan_problem *p;
    int64_t b, n, k, v, kk, kv, T;
    mpfr_ptr Ab, Bb, GA, GB, A, x, y;
} lane;

#define ABAR(L, t) ((L)->Ab + (t) * (L)->kk)
#define BBAR(L, t) ((L)->Bb + (t) * (L)->kv)
#define GHA(L, t) ((L)->GA + (t) * (L)->kk)
#define GHB(L, t) ((L)->GB + (t) * (L)->kv)
#define AT(L, t) ((L)->A + (t) * (L)->kk)

static void lane_run(lane *L, ra_mparr *grads, unsigned alter)
{
    const ra_scan_problem *p = L->p;
    const ra_scan_shape *s = &p->s;
    const int log = s->kind == RA_SCAN_LOG;
    const int64_t k = L->k, v = L->v, T = L->T;
    mpfr_ptr x = L->x, y = L->y;
    /* A_t (t = 1..T) as the forward uses it */
    for (int64_t t = 1; t <= T; t++) {
        const int64_t st = ra_scan_lane_step(s, L->b, t - 1, L->n);
        for (int64_t i = 0; i < L->kk; i++) {
            get(AT(L, t) + i, p->in[0], st * L->kk + i);
            if (log)
                mpfr_exp(AT(L, t) + i, AT(L, t) + i, MPFR_RNDN);
        }
    }
    /* forward: Abar_0 = I, Bbar_0 = 0 (h_0 = exp(lv_0) for log);
       Abar_t = A_t Abar_{t-1}, Bbar_t = A_t Bbar_{t-1} + B_t */
    ra_mp_zero(L->Ab, (size_t)((T + 1) * L->kk));
    ra_mp_zero(L->Bb, (size_t)((T + 1) * L->kv));
    for (int64_t i = 0; i < k; i++)
        mpfr_set_ui(ABAR(L, 0) + i * k + i, 1, MPFR_RNDN);
    if (log) {
        get(BBAR(L, 0), p->in[1], ra_scan_log_slot(s, L->b, 0, L->n));
        mpfr_exp(BBAR(L, 0), BBAR(L, 0), MPFR_RNDN);
    }
    for (int64_t t = 1; t <= T; t++) {
        const int64_t st = ra_scan_lane_step(s, L->b, t - 1, L->n);
        for (int64_t i = 0; i < k; i++) {
            for (int64_t j = 0; j < k; j++)
                for (int64_t l = 0; l < k; l++)
                    mpfr_fma(ABAR(L, t) + i * k + j, AT(L, t) + i * k + l,
                             ABAR(L, t - 1) + l * k + j, ABAR(L, t) + i * k + j, MPFR_RNDN);
            for (int64_t j = 0; j < v; j++) {
                mpfr_ptr o = BBAR(L, t) + i * v + j;
                if (log) {
                    get(o, p->in[1], ra_scan_log_slot(s, L->b, t, L->n));
                    mpfr_exp(o, o, MPFR_RNDN);
                } else {
                    get(o, p->in[1], st * L->kv + i * v + j);
                }
                for (int64_t l = 0; l < k; l++)
                    mpfr_fma(o, AT(L, t) + i * k + l, BBAR(L, t - 1) + l * v + j, o, MPFR_RNDN);
            }
        }
    }
    /* reversed scan: Gh_t = G_t + A_{t+1}^T Gh_{t+1}, Gh_{T+1} = 0 (G_0 = 0:
       Gh_0 = A_1^T Gh_1 is what the log scan's h_0 receives) */
    ra_mp_zero(L->GA, (size_t)((T + 2) * L->kk));
    ra_mp_zero(L->GB, (size_t)((T + 2) * L->kv));
    const int notr = (alter & RA_SCAN_DERIVE_NO_TRANSPOSE) != 0;
    for (int64_t t = T; t >= 0; t--) {
        const int64_t st = ra_scan_lane_step(s, L->b, t - 1, L->n);
        for (int64_t i = 0; i < k; i++) {
            for (int64_t j = 0; j < k && !log && t >= 1; j++) {
                mpfr_ptr o = GHA(L, t) + i * k + j;
                get(o, p->cot[0], st * L->kk + i * k + j);
                for (int64_t l = 0; l < k && t < T; l++)
                    mpfr_fma(o, AT(L, t + 1) + (notr ? i * k + l : l * k + i),
                             GHA(L, t + 1) + l * k + j, o, MPFR_RNDN);
            }
            for (int64_t j = 0; j < v; j++) {
                mpfr_ptr o = GHB(L, t) + i * v + j;
                if (t >= 1)
                    get(o, p->cot[1], st * L->kv + i * v + j);
                for (int64_t l = 0; l < k && t < T; l++)
                    mpfr_fma(o, AT(L, t + 1) + (notr ? i * k + l : l * k + i),
                             GHB(L, t + 1) + l * v + j, o, MPFR_RNDN);
            }
        }
    }
    /* dA_t = Gh^A_t Abar_{t-1}^T + Gh^B_t Bbar_{t-1}^T, dB_t = Gh^B_t */
    const int64_t lag = (alter & RA_SCAN_DERIVE_STATE_AT_T) ? 0 : 1;
    for (int64_t t = 1; t <= T; t++) {
        const int64_t st = ra_scan_lane_step(s, L->b, t - 1, L->n);
        for (int64_t i = 0; i < k; i++) {
            for (int64_t j = 0; j < k; j++) {
                mpfr_set_zero(x, 1);
                for (int64_t l = 0; l < k && !log; l++)
                    mpfr_fma(x, GHA(L, t) + i * k + l, ABAR(L, t - lag) + j * k + l, x, MPFR_RNDN);
                for (int64_t l = 0; l < v; l++)
                    mpfr_fma(x, GHB(L, t) + i * v + l, BBAR(L, t - lag) + j * v + l, x, MPFR_RNDN);
                if (log) /* dlc_t = exp(lc_t) dA_t */
                    mpfr_mul(x, x, AT(L, t), MPFR_RNDN);
                mpfr_set(grads[0].x + st * L->kk + i * k + j, x, MPFR_RNDN);
            }
            for (int64_t j = 0; j < v; j++) {
                mpfr_ptr o = log ? grads[1].x + ra_scan_log_slot(s, L->b, t, L->n)
                                 : grads[1].x + st * L->kv + i * v + j;
                mpfr_set(o, GHB(L, t) + i * v + j, MPFR_RNDN);
                if (log) { /* dlv_t = exp(lv_t) Gh_t */
                    get(y, p->in[1], ra_scan_log_slot(s, L->b, t, L->n));
                    mpfr_exp(y, y, MPFR_RNDN);
                    mpfr_mul(o, o, y, MPFR_RNDN);
                }
            }
        }
    }
    if (log) /* dlv_0 = h_0 Gh_0 */
        mpfr_mul(grads[1].x + ra_scan_log_slot(s, L->b, 0, L->n), BBAR(L, 0), GHB(L, 0), MPFR_RNDN);
}

ra_status ra_scan_derive_eval(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c,
                              unsigned alter, mpfr_prec_t prec)
{
    ra_scan_problem p;
    RA_TRY(ra_scan_problem_init(&p, c, RA_SCAN_NEED_COTANGENTS, "derive"));
    const ra_scan_shape *s = &p.s;
    if (io->nin != 2)
        RA_ERRORF(RA_EINTERNAL, "derive %s: %d inputs, expected 2", ra_scan_op_name(s->kind),
                  io->nin);
    for (int a = 0; a < 2; a++) {
        if (io->in[a].n != ra_scan_in_numel(s, a))
            RA_ERRORF(RA_EINTERNAL, "derive %s: input %d has %lld elements, the case %lld",
                      ra_scan_op_name(s->kind), a, (long long)io->in[a].n,
                      (long long)ra_scan_in_numel(s, a));
        RA_TRY(ra_mparr_init(&grads[a], (size_t)io->in[a].n, prec));
    }
    lane L = {.p = &p, .k = s->k, .v = s->v, .kk = s->k * s->k, .kv = s->k * s->v, .T = s->T};
    const int64_t T = s->T;
    ra_mparr w = {0};
    const size_t need =
        (size_t)((T + 1) * (L.kk + L.kv) + (T + 2) * (L.kk + L.kv) + (T + 2) * L.kk + 2);
    RA_TRY(ra_mparr_init(&w, need, prec));
    mpfr_ptr q = w.x;
    L.Ab = q, q += (T + 1) * L.kk;
    L.Bb = q, q += (T + 1) * L.kv;
    L.GA = q, q += (T + 2) * L.kk;
    L.GB = q, q += (T + 2) * L.kv;
    L.A = q, q += (T + 2) * L.kk;
    L.x = q++;
    L.y = q;
    ra_mp_range range;
    ra_mp_range_widen(&range);
    mpfr_clear_flags();
    for (L.b = 0; L.b < s->B; L.b++)
        for (L.n = 0; L.n < s->N; L.n++)
            lane_run(&L, grads, alter);
    ra_status st = RA_OK;
    if (mpfr_overflow_p() || mpfr_underflow_p() || mpfr_nanflag_p())
        RA_REPORTF(st = RA_ENUMERIC, "derive %s at %ld bits: left MPFR's exponent range",
                   ra_scan_op_name(s->kind), (long)prec);
    ra_mp_range_restore(&range);
    ra_mparr_free(&w);
    return st;
}

static ra_status eval_as_written(ra_mparr *grads, const ra_gc_layout *io, const ra_case *c,
                                 int corrected, mpfr_prec_t prec)
{
    (void)corrected; /* every formula here has no corrected form */
    return ra_scan_derive_eval(grads, io, c, 0, prec);
}

#define SEED002                                                                                    \
    "seed 002 (seeds/002_9747eba605eb1a52.txt) line 37, \"reversed-scan backward\"; SPEC.md §3"

static const ra_derive_set linear_seed = {
    .name = "scan.linear, seed 002",
    .source = SEED002 ", at k = 1 (line 17)",
    .shipped = 0,
    .gc = &ra_gc_op_scan_linear,
    .formulas = linear_formulas,
    .cases = linear_cases,
    .eval = eval_as_written,
};

static const ra_derive_set affine_seed = {
    .name = "scan.affine, seed 002",
    .source = SEED002,
    .shipped = 0,
    .gc = &ra_gc_op_scan_affine,
    .formulas = affine_formulas,
    .cases = affine_cases,
    .eval = eval_as_written,
};

static const ra_derive_set log_suite = {
    .name = "scan.log, docs/scan.md",
    .source = "docs/scan.md \"Reference\" (seed 002 line 37 publishes none: autograd through "
              "recomputation)",
    .shipped = 1,
    .gc = &ra_gc_op_scan_log,
    .formulas = log_formulas,
    .cases = log_cases,
    .eval = eval_as_written,
};

const ra_derive_set *const ra_scan_linear_derive_sets[] = {&linear_seed, NULL};
const ra_derive_set *const ra_scan_affine_derive_sets[] = {&affine_seed, NULL};
const ra_derive_set *const ra_scan_log_derive_sets[] = {&log_suite, NULL};
