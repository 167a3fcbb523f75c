/* Template: bigdn CPU backward (division VJP, C-bar, B-bar, A-bar, unrope, ReLU, RMSNorm VJPs). */

/*
 * Included after bigdn_tmpl_fwd.h (same macros).  The backward of a head
 * re-runs phases A, B, C, then, as seed 003 writes them:
 *
 *   division  de = den + eps, dnum = dout / de, dden = -(dout . num) / de^2
 *   C-bar     dQr_f = dnum_f (M_f + M'_f)^T,  dM_C,f = Qr_f^T dnum_f;
 *             dQ_f = dden_f (z_f + z'_f)^T,   dz_C,f = Q_f^T dden_f
 *   B-bar     forward stream, reverse in time:
 *               L_{F-1} = dM_C,F-1,  L_f = dM_C,f + g_{f+1} (I - P_{f+1})^T L_{f+1}
 *             reverse stream, forward in time:
 *               L'_0 = dM_C,0,  L'_{f+1} = dM_C,f+1 + g_{f+1} (I - P_{f+1})^T L'_f
 *             (M_{-1} = 0 is constant, so the seed's dM_init is not needed)
 *   combine   dA_f = L_f + L'_{f-1}
 *             dP_f = -g_f L_f M_{f-1}^T - g_f L'_{f-1} M'_f^T
 *             dg_f = <L_f, (I - P_f) M_{f-1}> + <L'_{f-1}, (I - P_f) M'_f>
 *             (terms with f - 1 < 0 absent); the same for z with Pz, Bz
 *   A-bar KV  dKr = beta (Kr dP + Kr dP^T) + beta V dA^T,  dV = beta Kr dA,
 *             dbeta = rowsum(Kr dP * Kr) + rowsum(Kr dA * V)
 *   A-bar Z   dK = beta (K dPz + K dPz^T) + beta dBz^T,
 *             dbeta += rowsum(K dPz * K) + K dBz
 *
 * and for the full operation, per element, dQ += unrope(dQr), dK +=
 * unrope(dKr) with unrope(y)[d] = y[d] cos[d] + y[d^1] sin[d^1]; the ReLU
 * mask (q_n > 0, k_n > 0 of the normalised values) and k_scale; then the
 * full-channel RMSNorm VJP per token (all heads at once):
 *   gw = dx_n w, dx = inv gw - (inv^3 / C) x sum_c(gw x),
 *   dw_c = sum over (b, n) of dx_n,c x_c inv.
 * The normalised gradients wait in dqkv's q and k slots until that last
 * step rewrites them in place.
 */

/* The division VJP of the head; dnum holds dout on entry. */
static void RN(div_vjp)(RN(bdws) * w, R eps)
{
    const int64_t D = w->D;
    for (int64_t n = 0; n < w->N; n++) {
        R *dn = w->dnum + n * D;
        const R de = w->den[n] + eps;
        const R s = RN(dot)(dn, w->num + n * D, D);
        w->dden[n] = -s / (de * de);
        for (int64_t e = 0; e < D; e++)
            dn[e] = dn[e] / de;
    }
}

/* C-bar: dQr, dM_C (into Lr), dQ (from den), dz_C (into lzr). */
static void RN(phase_c_bar)(RN(bdws) * w)
{
    const int64_t S = w->S, D = w->D, DD = D * D;
    for (int64_t f = 0; f < w->F; f++) {
        const R *dn = w->dnum + f * S * D, *dd = w->dden + f * S;
        for (int64_t i = 0; i < DD; i++)
            w->m1[i] = w->M[f * DD + i] + w->Mr[f * DD + i];
        MM(w->dQr + f * S * D, D, S, D, D, dn, D, 1, w->m1, 1, D, 0);
        MM(w->Lr + f * DD, D, D, D, S, w->Qr + f * S * D, 1, D, dn, D, 1, 0);
        for (int64_t e = 0; e < D; e++)
            w->v1[e] = w->z[f * D + e] + w->zr[f * D + e];
        R *dQ = w->dQ + f * S * D;
        for (int64_t s = 0; s < S; s++)
            for (int64_t e = 0; e < D; e++)
                dQ[s * D + e] = dd[s] * w->v1[e];
        for (int64_t e = 0; e < D; e++)
            w->lzr[f * D + e] = RN(dots)(w->Q + f * S * D + e, D, dd, 1, S);
    }
}

/* B-bar for one state size (n = D for M, 1 for z): L from the injections
   held in Lr, then Lr in place. */
static void RN(phase_b_bar)(RN(bdws) * w, R *L, R *Lr, const R *E, R *tmp, int64_t n)
{
    const int64_t F = w->F, D = w->D, DD = D * D, sz = D * n;
    memcpy(L + (F - 1) * sz, Lr + (F - 1) * sz, (size_t)sz * sizeof(R));
    for (int64_t f = F - 2; f >= 0; f--) {
        MM(tmp, n, D, n, D, E + (f + 1) * DD, 1, D, L + (f + 1) * sz, n, 1, 0);
        RN(gaxpy)(L + f * sz, w->g[f + 1], tmp, Lr + f * sz, sz);
    }
    for (int64_t f = 0; f + 1 < F; f++) {
        MM(tmp, n, D, n, D, E + (f + 1) * DD, 1, D, Lr + f * sz, n, 1, 0);
        RN(gaxpy)(Lr + (f + 1) * sz, w->g[f + 1], tmp, Lr + (f + 1) * sz, sz);
    }
}

/* Frobenius (or vector) inner product, one fp32 reduction in index order. */
#define FROB(a, b, n) RN(dot)((a), (b), (n))

/* Combine and A-bar KV of frame f: dbeta (set), dKr, dV, and dg (set). */
static void RN(frame_kv)(RN(bdws) * w, int64_t f)
{
    const int64_t S = w->S, D = w->D, DD = D * D;
    const R g = w->g[f];
    R *dA = w->m1, *dP = w->m2, *T = w->m3;
    const R *Lf = w->Lf + f * DD, *Lp = f > 0 ? w->Lr + (f - 1) * DD : NULL;
    for (int64_t i = 0; i < DD; i++)
        dA[i] = Lp ? Lf[i] + Lp[i] : Lf[i];
    R dg = 0;
    if (f > 0) {
        const R *Mp = w->M + (f - 1) * DD, *Mr = w->Mr + f * DD, *E = w->E + f * DD;
        MM(dP, D, D, D, D, Lf, D, 1, Mp, 1, D, 0); /* L_f M_{f-1}^T */
        MM(T, D, D, D, D, Lp, D, 1, Mr, 1, D, 0);  /* L'_{f-1} M'_f^T */
        for (int64_t i = 0; i < DD; i++)
            dP[i] = -g * dP[i] + -g * T[i];
        MM(T, D, D, D, D, E, D, 1, Mp, D, 1, 0);
        dg = FROB(Lf, T, DD);
        MM(T, D, D, D, D, E, D, 1, Mr, D, 1, 0);
        dg = dg + FROB(Lp, T, DD);
    } else {
        memset(dP, 0, (size_t)DD * sizeof(R));
    }
    w->dg[f] = dg;
    const R *Kr = w->Kr + f * S * D, *V = w->V + f * S * D, *be = w->beta + f * S;
    R *KdP = w->t1, *KdPT = w->t2, *VdAT = w->t3;
    R *dKr = w->dKr + f * S * D, *dV = w->dV + f * S * D, *db = w->dbeta + f * S;
    MM(KdP, D, S, D, D, Kr, D, 1, dP, D, 1, 0);
    MM(KdPT, D, S, D, D, Kr, D, 1, dP, 1, D, 0);
    MM(VdAT, D, S, D, D, V, D, 1, dA, 1, D, 0);
    for (int64_t s = 0; s < S; s++)
        for (int64_t e = 0; e < D; e++) {
            const int64_t i = s * D + e;
            dKr[i] = be[s] * (KdP[i] + KdPT[i]) + be[s] * VdAT[i];
        }
    R *KdA = w->t2;
    MM(KdA, D, S, D, D, Kr, D, 1, dA, D, 1, 0);
    for (int64_t s = 0; s < S; s++) {
        for (int64_t e = 0; e < D; e++)
            dV[s * D + e] = be[s] * KdA[s * D + e];
        db[s] = FROB(KdP + s * D, Kr + s * D, D) + FROB(KdA + s * D, V + s * D, D);
    }
}

/* Combine and A-bar Z of frame f: dbeta (adds), dK (set), dg (adds). */
static void RN(frame_z)(RN(bdws) * w, int64_t f)
{
    const int64_t S = w->S, D = w->D, DD = D * D;
    const R g = w->g[f];
    R *dBz = w->v1, *t = w->v2, *dPz = w->m2;
    const R *lf = w->lzf + f * D, *lp = f > 0 ? w->lzr + (f - 1) * D : NULL;
    for (int64_t e = 0; e < D; e++)
        dBz[e] = lp ? lf[e] + lp[e] : lf[e];
    R dg = 0;
    if (f > 0) {
        const R *zp = w->z + (f - 1) * D, *zr = w->zr + f * D, *Ez = w->Ez + f * DD;
        for (int64_t i = 0; i < D; i++)
            for (int64_t j = 0; j < D; j++)
                dPz[i * D + j] = -g * (lf[i] * zp[j]) + -g * (lp[i] * zr[j]);
        MM(t, 1, D, 1, D, Ez, D, 1, zp, 1, 0, 0);
        dg = FROB(lf, t, D);
        MM(t, 1, D, 1, D, Ez, D, 1, zr, 1, 0, 0);
        dg = dg + FROB(lp, t, D);
    } else {
        memset(dPz, 0, (size_t)DD * sizeof(R));
    }
    w->dg[f] = w->dg[f] + dg;
    const R *K = w->K + f * S * D, *be = w->beta + f * S;
    R *KdP = w->t1, *KdPT = w->t2;
    R *dK = w->dK + f * S * D, *db = w->dbeta + f * S;
    MM(KdP, D, S, D, D, K, D, 1, dPz, D, 1, 0);
    MM(KdPT, D, S, D, D, K, D, 1, dPz, 1, D, 0);
    for (int64_t s = 0; s < S; s++) {
        for (int64_t e = 0; e < D; e++) {
            const int64_t i = s * D + e;
            dK[i] = be[s] * (KdP[i] + KdPT[i]) + be[s] * dBz[e];
        }
        db[s] = db[s] + (FROB(KdP + s * D, K + s * D, D) + FROB(K + s * D, dBz, D));
    }
}

/* The whole backward of a gathered head (dout already in dnum). */
static void RN(head_bwd)(RN(bdws) * w, R eps)
{
    RN(head_fwd)(w);
    RN(div_vjp)(w, eps);
    RN(phase_c_bar)(w);
    RN(phase_b_bar)(w, w->Lf, w->Lr, w->E, w->m1, w->D);
    RN(phase_b_bar)(w, w->lzf, w->lzr, w->Ez, w->v1, 1);
    for (int64_t f = 0; f < w->F; f++) {
        RN(frame_kv)(w, f);
        RN(frame_z)(w, f);
    }
}

static void RN(bwd_core)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x)
{
    const ra_bigdn_dims *d = x->d;
    RN(load_core)(w, b, h, x);
    RN(gather)(w->dnum, x->dout, d, b, h);
    RN(head_bwd)(w, (R)d->eps);
    RN(scatter)(x->dQ, w->dQ, d, b, h);
    RN(scatter)(x->dK, w->dK, d, b, h);
    RN(scatter)(x->dQr, w->dQr, d, b, h);
    RN(scatter)(x->dKr, w->dKr, d, b, h);
    RN(scatter)(x->dV, w->dV, d, b, h);
    memcpy(x->dbeta + (b * d->H + h) * w->N, w->dbeta, (size_t)w->N * sizeof(R));
    memcpy(x->ddecay + (b * d->H + h) * w->F, w->dg, (size_t)w->F * sizeof(R));
}

/* Full operation: the head's backward, then unrope, the ReLU mask and
   k_scale into the q and k slots of dqkv (gradients of the normalised
   values), dV into the v slot. */
static void RN(bwd_full)(RN(bdws) * w, int64_t b, int64_t h, const RN(bdctx) * x)
{
    const ra_bigdn_dims *d = x->d;
    const int64_t N = w->N, D = w->D, C = d->H * D;
    const R ks = (R)d->k_scale;
    RN(load_full)(w, b, h, x);
    RN(gather)(w->dnum, x->dout, d, b, h);
    RN(head_bwd)(w, (R)d->eps);
    for (int64_t n = 0; n < N; n++) {
        const R *row = x->qkv + (b * N + n) * 3 * C + h * D;
        const R *cs = x->cs + n * D, *sn = x->sn + n * D;
        const R qi = x->qinv[b * N + n], ki = x->kinv[b * N + n];
        R *dq = x->dqkv + (b * N + n) * 3 * C + h * D, *dk = dq + C, *dv = dq + 2 * C;
        const R *dQr = w->dQr + n * D, *dKr = w->dKr + n * D;
        for (int64_t e = 0; e < D; e++) {
            /* The forward's expressions, so the masks are its own. */
            const R qn = row[e] * qi * x->qw[h * D + e], kn = row[C + e] * ki * x->kw[h * D + e];
            const R uq = dQr[e] * cs[e] + dQr[e ^ 1] * sn[e ^ 1];
            const R uk = dKr[e] * cs[e] + dKr[e ^ 1] * sn[e ^ 1];
            dq[e] = qn > 0 ? uq + w->dQ[n * D + e] : 0;
            dk[e] = kn > 0 ? (uk + w->dK[n * D + e]) * ks : 0;
            dv[e] = w->dV[n * D + e];
        }
    }
    memcpy(x->dbeta + (b * d->H + h) * N, w->dbeta, (size_t)N * sizeof(R));
    memcpy(x->ddecay + (b * d->H + h) * w->F, w->dg, (size_t)w->F * sizeof(R));
}

/* RMSNorm VJP of slot `which` (0: q, 1: k) of dqkv in place, and dw. */
static void RN(rmsnorm_vjp)(R *dqkv, R *dw, const ra_bigdn_dims *d, const R *qkv, const R *inv,
                            const R *w, int which)
{
    const int64_t N = d->F * d->S, C = d->H * d->D, BN = d->B * N;
    /* dw first: it reads the normalised gradients the loop below replaces. */
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; c++) {
        R s = 0;
        for (int64_t t = 0; t < BN; t++) {
            const int64_t i = (t * 3 + which) * C + c;
            s = s + dqkv[i] * qkv[i] * inv[t];
        }
        dw[c] = s;
    }
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < BN; t++) {
        R *g = dqkv + (t * 3 + which) * C;
        const R *x = qkv + (t * 3 + which) * C, iv = inv[t];
        R corr = 0;
        for (int64_t c = 0; c < C; c++)
            corr = corr + g[c] * w[c] * x[c];
        const R k3 = iv * iv * iv / (R)C;
        for (int64_t c = 0; c < C; c++)
            g[c] = iv * (g[c] * w[c]) - k3 * x[c] * corr;
    }
}

/* --- backward entry points ------------------------------------------------------------------ */

ra_status API(ra_cpu_bigdn_backward)(const ra_bigdn_dims *d, ra_bigdn_prec p, const R *qkv,
                                     const R *beta, const R *decay, const R *q_norm_w,
                                     const R *k_norm_w, const R *rope_cos, const R *rope_sin,
                                     const R *dout, R *dqkv, R *dbeta, R *ddecay, R *dq_norm_w,
                                     R *dk_norm_w)
{
    const char *op = "bigdn";
    RN(bdctx) x;
    R *inv = NULL;
    RA_TRY(RN(check_out)(op, "dqkv", dqkv));
    RA_TRY(RN(check_out)(op, "dbeta", dbeta));
    RA_TRY(RN(check_out)(op, "ddecay", ddecay));
    RA_TRY(RN(check_out)(op, "dq_norm_w", dq_norm_w));
    RA_TRY(RN(check_out)(op, "dk_norm_w", dk_norm_w));
    RA_TRY(RN(check_dims)(op, d, p, 1)); /* before dout's size is read */
    RA_TRY(RN(check_in)(op, "dout", dout, d->B * d->F * d->S * d->H * d->D));
    RA_TRY(RN(full_setup)(&x, &inv, op, d, p, qkv, beta, decay, q_norm_w, k_norm_w, rope_cos,
                          rope_sin));
    x.dout = dout, x.dqkv = dqkv, x.dbeta = dbeta, x.ddecay = ddecay;
    const ra_status st = RN(run_heads)(op, &x, p, 1, RN(bwd_full));
    if (st == RA_OK) {
        RN(rmsnorm_vjp)(dqkv, dq_norm_w, d, qkv, x.qinv, q_norm_w, 0);
        RN(rmsnorm_vjp)(dqkv, dk_norm_w, d, qkv, x.kinv, k_norm_w, 1);
    }
    free(inv);
    return st;
}

ra_status API(ra_cpu_bigdn_core_backward)(const ra_bigdn_dims *d, ra_bigdn_prec p, const R *Q,
                                          const R *K, const R *Qr, const R *Kr, const R *V,
                                          const R *beta, const R *decay, const R *dout, R *dQ,
                                          R *dK, R *dQr, R *dKr, R *dV, R *dbeta, R *ddecay)
{
    const char *op = "bigdn.core";
    RN(bdctx) x;
    RA_TRY(RN(check_out)(op, "dQ", dQ));
    RA_TRY(RN(check_out)(op, "dK", dK));
    RA_TRY(RN(check_out)(op, "dQr", dQr));
    RA_TRY(RN(check_out)(op, "dKr", dKr));
    RA_TRY(RN(check_out)(op, "dV", dV));
    RA_TRY(RN(check_out)(op, "dbeta", dbeta));
    RA_TRY(RN(check_out)(op, "ddecay", ddecay));
    RA_TRY(RN(core_setup)(&x, op, d, p, Q, K, Qr, Kr, V, beta, decay));
    RA_TRY(RN(check_in)(op, "dout", dout, d->B * d->F * d->S * d->H * d->D));
    x.dout = dout, x.dQ = dQ, x.dK = dK, x.dQr = dQr, x.dKr = dKr, x.dV = dV;
    x.dbeta = dbeta, x.ddecay = ddecay;
    return RN(run_heads)(op, &x, p, 1, RN(bwd_core));
}
