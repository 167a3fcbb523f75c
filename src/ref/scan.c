/* The affine scan family in MPFR: one lane's forward and reverse scan, and runs over lanes. */
#include "ref/scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/pool.h"

/*
 * Every member is H_t = A_t H_{t-1} + B_t on independent lanes (SPEC.md
 * section 3).  A lane walks t = 1..T carrying Abar (k x k, from I) and
 * Bbar (k x v, from 0) and writes them out at every step; scan.linear is
 * the k = v = 1 case, scan.log the k = v = 1 case with A_t = exp(lc_t),
 * B_t = exp(lv_t) and Bbar_0 = exp(lv_0) (every term positive, so the
 * linear-space recurrence in MPFR loses nothing; kernels use the
 * max-shifted log-sum-exp form, which the tests check against this one).
 *
 * The backward is the reversed scan of the spec,
 *     Gh^A_t = G^A_t + A_{t+1}^T Gh^A_{t+1},  Gh^B_t = G^B_t + A_{t+1}^T Gh^B_{t+1},
 *     dA_t = Gh^A_t Abar_{t-1}^T + Gh^B_t Bbar_{t-1}^T,   dB_t = Gh^B_t,
 * reading Abar_{t-1}, Bbar_{t-1} from the lane's own outputs (the
 * reference has every state at full precision anyway; it never inverts a
 * step).  For scan.log the chain rule adds dlc_t = dA_t A_t,
 * dlv_t = Gh^B_t B_t and dlv_0 = (A_1 Gh^B_1) exp(lv_0).
 *
 * Each product accumulates with mpfr_fma in a fixed order, so a lane's
 * result depends on the lane alone: one task per (precision, lane) on the
 * task pool, bit-identical for any thread count.
 */

ra_status ra_scan_in_init(ra_scan_in *in, double *buf[4], const ra_scan_problem *p)
{
    memset(in, 0, sizeof *in);
    in->s = p->s;
    in->one_arr = -1;
    const ra_tensor *src[4] = {p->in[0], p->in[1], p->cot[0], p->cot[1]};
    for (int a = 0; a < 4; a++) {
        buf[a] = NULL;
        if (!src[a])
            continue;
        buf[a] = malloc((size_t)src[a]->numel * sizeof(double) + 1);
        if (!buf[a]) {
            ra_scan_in_free(buf);
            RA_ERRORF(RA_ENOMEM, "cannot allocate a copy of tensor '%s'", src[a]->name);
        }
        ra_tensor_to_doubles(buf[a], src[a]);
        in->x[a] = buf[a];
    }
    return RA_OK;
}

void ra_scan_in_free(double *buf[4])
{
    for (int a = 0; a < 4; a++) {
        free(buf[a]);
        buf[a] = NULL;
    }
}

void ra_scan_out_clear(ra_scan_out *out)
{
    for (int j = 0; j < 2; j++) {
        ra_mparr_free(&out->y[j]);
        ra_mparr_free(&out->g[j]);
    }
}

int64_t ra_scan_element_lane(const ra_scan_shape *s, int j, int64_t i)
{
    if (j == 1 && s->kind == RA_SCAN_LOG)
        return i / ((s->T + 1) * s->N) * s->N + i % s->N;
    const int64_t r = i / (j == 0 ? s->k * s->k : s->k * s->v);
    return r / (s->T * s->N) * s->N + r % s->N;
}

void ra_scan_op_count(const ra_scan_shape *s, double *fwd, double *bwd)
{
    const double lanes = (double)s->B * (double)s->N, T = (double)s->T;
    const double k = (double)s->k, v = (double)s->v;
    const double step = (s->kind == RA_SCAN_LOG ? 2 + 2 : k * k * k + k * k * v + k * v);
    *fwd = lanes * T * step;
    *bwd = lanes * T * (2 * step + k * k * (k + v) + k * k + k * v);
}

/* Input j's value at flat index i, moved as in asks. */
static void get(mpfr_ptr dst, mpfr_ptr tmp, const ra_scan_in *in, int j, int64_t i)
{
    mpfr_set_d(dst, in->x[j][i], MPFR_RNDN);
    if (in->dir[j] && in->step) {
        mpfr_mul_d(tmp, in->step, in->dir[j][i], MPFR_RNDN);
        mpfr_add(dst, dst, tmp, MPFR_RNDN);
    }
    if (in->one_arr == j && in->one_idx == i)
        mpfr_add(dst, dst, in->one_delta, MPFR_RNDN);
}

/* c[i][j] (n x m, row-major) = (acc ? c[i][j] : 0) + sum_p a(i,p) b(p,j),
   a(i,p) = a[i*ars + p*acs], b(p,j) = b[p*brs + j*bcs]; c aliases neither. */
static void mm(mpfr_ptr c, mpfr_srcptr a, int64_t ars, int64_t acs, mpfr_srcptr b, int64_t brs,
               int64_t bcs, int64_t n, int64_t kd, int64_t m, int acc)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            mpfr_ptr x = c + i * m + j;
            if (!acc)
                mpfr_set_zero(x, 1);
            for (int64_t p = 0; p < kd; p++)
                mpfr_fma(x, a + i * ars + p * acs, b + p * brs + j * bcs, x, MPFR_RNDN);
        }
}

/* Scratch of one lane: named blocks of one array. */
typedef struct lane_ws {
    ra_mparr m;
    mpfr_ptr At, Bt, Ac, Bc, tA, tB, GA, GB, dA, I, B0, s0, s1;
} lane_ws;

static ra_status lane_ws_init(lane_ws *w, const ra_scan_shape *s, mpfr_prec_t prec)
{
    const int64_t kk = s->k * s->k, kv = s->k * s->v;
    RA_TRY(ra_mparr_init(&w->m, (size_t)(6 * kk + 5 * kv + 2), prec));
    mpfr_ptr p = w->m.x;
    w->At = p, p += kk;
    w->Ac = p, p += kk;
    w->tA = p, p += kk;
    w->GA = p, p += kk;
    w->dA = p, p += kk;
    w->I = p, p += kk;
    w->Bt = p, p += kv;
    w->Bc = p, p += kv;
    w->tB = p, p += kv;
    w->GB = p, p += kv;
    w->B0 = p, p += kv;
    w->s0 = p, w->s1 = p + 1;
    for (int64_t i = 0; i < s->k; i++)
        mpfr_set_ui(w->I + i * s->k + i, 1, MPFR_RNDN);
    return RA_OK;
}

/* A_t and B_t of lane (b, n) into w->At, w->Bt (step t = 0..T-1). */
static void load_step(lane_ws *w, const ra_scan_in *in, int64_t b, int64_t n, int64_t t)
{
    const ra_scan_shape *s = &in->s;
    const int64_t kk = s->k * s->k, kv = s->k * s->v, st = ra_scan_lane_step(s, b, t, n);
    if (s->kind == RA_SCAN_LOG) {
        get(w->At, w->s0, in, 0, st);
        mpfr_exp(w->At, w->At, MPFR_RNDN);
        get(w->Bt, w->s0, in, 1, ra_scan_log_slot(s, b, t + 1, n));
        mpfr_exp(w->Bt, w->Bt, MPFR_RNDN);
        return;
    }
    for (int64_t i = 0; i < kk; i++)
        get(w->At + i, w->s0, in, 0, st * kk + i);
    for (int64_t i = 0; i < kv; i++)
        get(w->Bt + i, w->s0, in, 1, st * kv + i);
}

static void swap(mpfr_ptr *a, mpfr_ptr *b)
{
    mpfr_ptr t = *a;
    *a = *b;
    *b = t;
}

/* The lane's forward (into out->y when out, and/or its share of L into
   loss) and, with grads, its backward into out->g. */
static ra_status lane_run(lane_ws *w, const ra_scan_in *in, int64_t lane, ra_scan_out *out,
                          int grads, mpfr_ptr loss, char *msg, size_t msglen)
{
    const ra_scan_shape *s = &in->s;
    const int64_t k = s->k, v = s->v, kk = k * k, kv = k * v, b = lane / s->N, n = lane % s->N;
    const int log = s->kind == RA_SCAN_LOG, has0 = !log;
    mpfr_clear_flags();
    mpfr_ptr Ac = w->Ac, Bc = w->Bc, tA = w->tA, tB = w->tB;
    ra_mp_zero(w->B0, (size_t)kv);
    if (log) {
        get(w->B0, w->s0, in, 1, ra_scan_log_slot(s, b, 0, n));
        mpfr_exp(w->B0, w->B0, MPFR_RNDN);
    }
    for (int64_t i = 0; i < kk; i++)
        mpfr_set(Ac + i, w->I + i, MPFR_RNDN);
    for (int64_t i = 0; i < kv; i++)
        mpfr_set(Bc + i, w->B0 + i, MPFR_RNDN);
    if (loss)
        mpfr_set_zero(loss, 1);
    for (int64_t t = 0; t < s->T; t++) {
        load_step(w, in, b, n, t);
        const int64_t st = ra_scan_lane_step(s, b, t, n);
        if (has0) {
            mm(tA, w->At, k, 1, Ac, k, 1, k, k, k, 0);
            swap(&Ac, &tA);
        }
        for (int64_t i = 0; i < kv; i++)
            mpfr_set(tB + i, w->Bt + i, MPFR_RNDN);
        mm(tB, w->At, k, 1, Bc, v, 1, k, k, v, 1);
        swap(&Bc, &tB);
        if (out) {
            for (int64_t i = 0; has0 && i < kk; i++)
                mpfr_set(out->y[0].x + st * kk + i, Ac + i, MPFR_RNDN);
            for (int64_t i = 0; i < kv; i++)
                mpfr_set(out->y[1].x + st * kv + i, Bc + i, MPFR_RNDN);
        }
        if (loss) {
            for (int64_t i = 0; has0 && in->x[2] && i < kk; i++) {
                mpfr_set_d(w->s0, in->x[2][st * kk + i], MPFR_RNDN);
                mpfr_fma(loss, w->s0, Ac + i, loss, MPFR_RNDN);
            }
            for (int64_t i = 0; in->x[3] && i < kv; i++) {
                mpfr_set_d(w->s0, in->x[3][st * kv + i], MPFR_RNDN);
                mpfr_fma(loss, w->s0, Bc + i, loss, MPFR_RNDN);
            }
        }
    }
    if (grads) {
        mpfr_ptr GA = w->GA, GB = w->GB;
        ra_mp_zero(GA, (size_t)kk);
        ra_mp_zero(GB, (size_t)kv);
        for (int64_t t = s->T - 1; t >= 0; t--) {
            const int64_t st = ra_scan_lane_step(s, b, t, n);
            for (int64_t i = 0; has0 && in->x[2] && i < kk; i++) {
                mpfr_set_d(w->s0, in->x[2][st * kk + i], MPFR_RNDN);
                mpfr_add(GA + i, GA + i, w->s0, MPFR_RNDN);
            }
            for (int64_t i = 0; in->x[3] && i < kv; i++) {
                mpfr_set_d(w->s0, in->x[3][st * kv + i], MPFR_RNDN);
                mpfr_add(GB + i, GB + i, w->s0, MPFR_RNDN);
            }
            const int64_t sp = t > 0 ? ra_scan_lane_step(s, b, t - 1, n) : 0;
            mpfr_srcptr pA = t > 0 && has0 ? out->y[0].x + sp * kk : w->I;
            mpfr_srcptr pB = t > 0 ? out->y[1].x + sp * kv : w->B0;
            /* dA = GA pA^T + GB pB^T */
            if (has0)
                mm(w->dA, GA, k, 1, pA, 1, k, k, k, k, 0);
            mm(w->dA, GB, v, 1, pB, 1, v, k, v, k, has0);
            load_step(w, in, b, n, t);
            if (log) {
                mpfr_mul(out->g[0].x + st, w->dA, w->At, MPFR_RNDN);
                mpfr_mul(out->g[1].x + ra_scan_log_slot(s, b, t + 1, n), GB, w->Bt, MPFR_RNDN);
            } else {
                for (int64_t i = 0; i < kk; i++)
                    mpfr_set(out->g[0].x + st * kk + i, w->dA + i, MPFR_RNDN);
                for (int64_t i = 0; i < kv; i++)
                    mpfr_set(out->g[1].x + st * kv + i, GB + i, MPFR_RNDN);
            }
            /* to step t-1: G <- A_t^T G */
            if (has0) {
                mm(tA, w->At, 1, k, GA, k, 1, k, k, k, 0);
                swap(&GA, &tA);
            }
            mm(tB, w->At, 1, k, GB, v, 1, k, k, v, 0);
            swap(&GB, &tB);
        }
        if (log)
            mpfr_mul(out->g[1].x + ra_scan_log_slot(s, b, 0, n), GB, w->B0, MPFR_RNDN);
    }
    if (mpfr_overflow_p() || mpfr_nanflag_p()) {
        snprintf(msg, msglen, "%s reference: lane (b=%lld, n=%lld) overflowed or produced NaN",
                 ra_scan_op_name(s->kind), (long long)b, (long long)n);
        return RA_ENUMERIC;
    }
    return RA_OK;
}

ra_status ra_scan_ws_new(ra_scan_ws **ws, const ra_scan_shape *s, mpfr_prec_t prec)
{
    lane_ws *w = calloc(1, sizeof *w);
    if (!w)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = lane_ws_init(w, s, prec);
    if (st != RA_OK) {
        free(w);
        return st;
    }
    *ws = (ra_scan_ws *)w;
    return RA_OK;
}

void ra_scan_ws_free(ra_scan_ws *ws)
{
    lane_ws *w = (lane_ws *)ws;
    if (!w)
        return;
    ra_mparr_free(&w->m);
    free(w);
}

ra_status ra_scan_lane_loss(mpfr_ptr loss, ra_scan_ws *ws, const ra_scan_in *in, int64_t lane,
                            char *msg, size_t msglen)
{
    return lane_run((lane_ws *)ws, in, lane, NULL, 0, loss, msg, msglen);
}

/* Lanes of every precision through ra_pool_run_multi. */
typedef struct run_ctx {
    ra_scan_out *out;
    const ra_scan_in *in;
    int grads;
} run_ctx;

static ra_status run_ws_new(void **ws, void *ctx, mpfr_prec_t prec)
{
    const run_ctx *r = ctx;
    return ra_scan_ws_new((ra_scan_ws **)ws, &r->in->s, prec);
}

static void run_ws_free(void *ws, void *ctx)
{
    (void)ctx;
    ra_scan_ws_free(ws);
}

static ra_status run_lane(void *ws, void *ctx, int k, int64_t lane, char *msg, size_t msglen)
{
    const run_ctx *r = ctx;
    return lane_run(ws, r->in, lane, &r->out[k], r->grads, NULL, msg, msglen);
}

ra_status ra_scan_run_multi(ra_scan_out *out, const mpfr_prec_t *precs, int nprec,
                            const ra_scan_in *in, int grads, int threads, ra_progress *prog)
{
    const ra_scan_shape *s = &in->s;
    if (nprec < 1 || nprec > RA_SCAN_MAX_PRECS)
        RA_ERRORF(RA_EINTERNAL, "scan reference: %d precisions in one run", nprec);
    if (grads && !in->x[3])
        RA_ERRORF(RA_ENOTFOUND, "%s reference: gradients need the cotangent '%s'",
                  ra_scan_op_name(s->kind), ra_scan_cot_name(s->kind, 1));
    run_ctx r = {out, in, grads};
    for (int i = 0; i < nprec; i++)
        if (precs[i] < 53 || precs[i] > MPFR_PREC_MAX)
            RA_ERRORF(RA_EINVAL,
                      "precision %ld bits: the scan reference needs at least 53 (so "
                      "every stored input is exact)",
                      (long)precs[i]);
    memset(out, 0, (size_t)nprec * sizeof *out);
    ra_status st = RA_OK;
    for (int i = 0; i < nprec && st == RA_OK; i++) {
        out[i].prec = precs[i];
        for (int j = 0; j < 2 && st == RA_OK; j++) {
            if (j == 1 || s->kind != RA_SCAN_LOG)
                st = ra_mparr_init(&out[i].y[j], (size_t)ra_scan_out_numel(s, j), precs[i]);
            if (st == RA_OK && grads)
                st = ra_mparr_init(&out[i].g[j], (size_t)ra_scan_in_numel(s, j), precs[i]);
        }
    }
    const ra_pool_multi p = {.nunits = s->B * s->N,
                             .nprec = nprec,
                             .precs = precs,
                             .threads = threads,
                             .widen_range = 1,
                             .prog = prog,
                             .ctx = &r,
                             .ws_new = run_ws_new,
                             .ws_free = run_ws_free,
                             .unit = run_lane};
    if (st == RA_OK)
        st = ra_pool_run_multi(&p);
    if (st != RA_OK)
        for (int i = 0; i < nprec; i++)
            ra_scan_out_clear(&out[i]);
    return st;
}

ra_status ra_scan_run(ra_scan_out *out, const ra_scan_in *in, mpfr_prec_t prec, int grads,
                      int threads, ra_progress *prog)
{
    return ra_scan_run_multi(out, &prec, 1, in, grads, threads, prog);
}
