/* Template: the chunked gated delta rule, backward by chunk-state recomputation (float or double). */

/*
 * A forward pass over the chunks stores every chunk-start state as the
 * forward stores it (st(S)); a reverse pass recomputes each chunk's G, D,
 * A, T, W, U, V', P from it with the forward's own functions (the same
 * bits) and carries dS = dL/dS in R, starting from dht.  Every matmul
 * rounds its operands as the forward's do.  The steps (1)..(10) in
 * chunk_backward_one are those of the derivation.
 *
 * Faults: DBETA_TERM drops the Y and A contributions to dbeta (keeping
 * only dX . v, the chunk analogue of du . v); DG_STATE_TERM drops the gC
 * gate term of step (5); TAIL_MASK via chunk_rows; BF16_STATE via
 * chunk_store_state.
 * Errors: the only failure is allocation (returns 1).
 *
 * Derivation: docs/gdn-chunked.md §Backward.
 */

/* Gradients of one chunk; w->Sst holds its start state, w->dS the
   cotangent of its end state, replaced by that of its start state. */
static void RN(chunk_backward_one)(RN(cws) *w, const RN(head) *h, int64_t t0, int64_t L)
{
    const int64_t C = w->C, K = w->K, V = w->V, KV = K * V;
    const int mode = w->mode;
    const RN(mmws) *mw = &w->mw;
    const int dbeta_fault = (h->faults & RA_FAULT_DBETA_TERM) != 0;
    const R s = h->scale;
    const R *q = h->q + t0 * K, *k = h->k + t0 * K, *v = h->v + t0 * V, *beta = h->beta + t0;
    const R *dO = h->do_ + t0 * V;
    R *dq = h->dq + t0 * K, *dk = h->dk + t0 * K, *dv = h->dv + t0 * V;
    R *dgo = h->dg + t0, *dbo = h->dbeta + t0, *dG = w->dG;
    const R gl = w->G[L - 1], gC = R_EXP(gl);

    for (int64_t i = 0; i < L; i++)
        dG[i] = 0, dbo[i] = 0;
    RN(chunk_p)(w, h, t0, L);

    /* (1) dV' = s P^T dO + diag(delta) K dSn */
    RN(mm)(w->dVp, V, L, V, L, w->P, 1, C, dO, V, 1, mode, 0, mw);
    RN(mm)(w->tV, V, L, V, K, k, K, 1, w->dS, V, 1, mode, 0, mw);
    for (int64_t i = 0; i < L; i++) {
        const R d = R_EXP(gl - w->G[i]);
        for (int64_t j = 0; j < V; j++)
            w->dVp[i * V + j] = R_FMA(d, w->tV[i * V + j], s * w->dVp[i * V + j]);
    }
    /* (2) dP = s dO V'^T -> gate terms, then dP <- d(QK^T) = dP . M */
    RN(mm)(w->dP, C, L, L, V, dO, V, 1, w->Vp, 1, V, mode, 0, mw);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++) {
            R *x = &w->dP[i * C + j];
            if (j > i) {
                *x = 0;
                continue;
            }
            *x = s * *x;
            if (j < i) {
                const R c = *x * w->P[i * C + j];
                dG[i] += c;
                dG[j] -= c;
            }
            *x = *x * w->Dm[i * C + j];
        }
    /* (3) dQ = d(QK^T) K + s diag(gamma) dO S^T, with its gamma gate term */
    RN(mm)(dq, K, L, K, L, w->dP, C, 1, k, K, 1, mode, 0, mw);
    RN(mm)(w->dQc, K, L, K, V, dO, V, 1, w->Sst, 1, V, mode, 0, mw);
    for (int64_t i = 0; i < L; i++) {
        const R c = s * w->gam[i];
        R acc = 0;
        for (int64_t j = 0; j < K; j++) {
            const R x = c * w->dQc[i * K + j];
            dq[i * K + j] += x;
            acc = R_FMA(q[i * K + j], x, acc);
        }
        dG[i] += acc;
    }
    /* (4) dK = d(QK^T)^T Q + diag(delta) V' dSn^T, with its delta gate terms */
    RN(mm)(dk, K, L, K, L, w->dP, 1, C, q, K, 1, mode, 0, mw);
    RN(mm)(w->dKc, K, L, K, V, w->Vp, V, 1, w->dS, 1, V, mode, 0, mw);
    for (int64_t i = 0; i < L; i++) {
        const R d = R_EXP(gl - w->G[i]);
        R acc = 0;
        for (int64_t j = 0; j < K; j++) {
            const R x = d * w->dKc[i * K + j];
            dk[i * K + j] += x;
            acc = R_FMA(k[i * K + j], x, acc);
        }
        dG[L - 1] += acc;
        dG[i] -= acc;
    }
    /* (5) dS = s Q^T diag(gamma) dO + gC dSn - W^T dV', and the gC gate */
    if (!(h->faults & RA_FAULT_DG_STATE_TERM))
        dG[L - 1] += gC * RN(dot)(w->dS, w->Sst, KV);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < V; j++)
            w->tV[i * V + j] = w->gam[i] * dO[i * V + j];
    RN(mm)(w->dSn, V, K, V, L, q, 1, K, w->tV, V, 1, mode, 0, mw);
    RN(mm)(w->WtdV, V, K, V, L, w->W, 1, K, w->dVp, V, 1, mode, 0, mw);
    for (int64_t i = 0; i < KV; i++)
        w->dS[i] = (s * w->dSn[i] + gC * w->dS[i]) - w->WtdV[i];
    /* (6) dW = -dV' S^T */
    RN(mm)(w->dW, K, L, K, V, w->dVp, V, 1, w->Sst, 1, V, mode, 0, mw);
    for (int64_t i = 0; i < L * K; i++)
        w->dW[i] = -w->dW[i];
    /* (7) dT = dV' X^T + dW Y^T (strict lower); dX = T^T dV', dY = T^T dW */
    RN(mm)(w->dT, C, L, L, V, w->dVp, V, 1, w->X, 1, V, mode, 0, mw);
    RN(mm)(w->dT, C, L, L, K, w->dW, K, 1, w->Y, 1, K, mode, 1, mw);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = i; j < L; j++)
            w->dT[i * C + j] = 0;
    RN(mm)(w->dX, V, L, V, L, w->T, 1, C, w->dVp, V, 1, mode, 0, mw);
    RN(mm)(w->dY, K, L, K, L, w->T, 1, C, w->dW, K, 1, mode, 0, mw);
    for (int64_t i = 0; i < L; i++) {
        for (int64_t j = 0; j < V; j++)
            dv[i * V + j] = beta[i] * w->dX[i * V + j];
        dbo[i] += RN(dot)(w->dX + i * V, v + i * V, V);
        const R bg = beta[i] * w->gam[i], y = RN(dot)(w->dY + i * K, k + i * K, K);
        for (int64_t j = 0; j < K; j++)
            dk[i * K + j] = R_FMA(bg, w->dY[i * K + j], dk[i * K + j]);
        if (!dbeta_fault)
            dbo[i] += w->gam[i] * y;
        dG[i] += bg * y;
    }
    /* (8) dA = -T^T dT T^T on the strict lower triangle */
    RN(mm)(w->Z, C, L, L, L, w->dT, C, 1, w->T, 1, C, mode, 0, mw);
    RN(mm)(w->dA, C, L, L, L, w->T, 1, C, w->Z, C, 1, mode, 0, mw);
    /* (9) A terms: gates, then dGram = dA . D into dA, dKb, dK, dbeta */
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < L; j++) {
            R *x = &w->dA[i * C + j];
            if (j >= i) {
                *x = 0;
                continue;
            }
            *x = -*x;
            const R c = *x * w->A[i * C + j];
            dG[i] += c;
            dG[j] -= c;
            *x = *x * w->Dm[i * C + j];
        }
    RN(mm)(w->tK, K, L, K, L, w->dA, C, 1, k, K, 1, mode, 0, mw);
    RN(mm)(dk, K, L, K, L, w->dA, 1, C, w->Kb, K, 1, mode, 1, mw);
    for (int64_t i = 0; i < L; i++) {
        for (int64_t j = 0; j < K; j++)
            dk[i * K + j] = R_FMA(beta[i], w->tK[i * K + j], dk[i * K + j]);
        if (!dbeta_fault)
            dbo[i] += RN(dot)(w->tK + i * K, k + i * K, K);
    }
    /* (10) dg = reverse cumulative sum of dG */
    R acc = 0;
    for (int64_t i = L - 1; i >= 0; i--) {
        acc += dG[i];
        dgo[i] = acc;
    }
}

static int RN(chunk_backward)(const RN(head) *h, int64_t C, int mode, int store, int inv)
{
    RN(cws) w;
    const int64_t KV = h->K * h->V, nch = (h->T + C - 1) / C;
    if (RN(cws_init)(&w, C, h->K, h->V, mode, store, inv))
        return 1;
    R *states = malloc((size_t)(nch * KV) * sizeof(R));
    if (!states) {
        RN(cws_free)(&w);
        return 1;
    }
    RN(chunk_init_state)(&w, h);
    for (int64_t c = 0; c < nch; c++) {
        const int64_t t0 = c * C, L = RN(chunk_rows)(h, C, c, nch);
        RN(chunk_store_state)(&w, h->faults);
        memcpy(states + c * KV, w.Sst, (size_t)KV * sizeof(R));
        if (L <= 0)
            continue;
        RN(chunk_prep)(&w, h, t0, L);
        RN(chunk_vprime)(&w, L);
        RN(chunk_update)(&w, h, t0, L);
    }
    for (int64_t i = 0; i < KV; i++)
        w.dS[i] = h->dht ? h->dht[i] : 0;
    for (int64_t c = nch - 1; c >= 0; c--) {
        const int64_t t0 = c * C, L = RN(chunk_rows)(h, C, c, nch);
        if (L <= 0)
            continue;
        memcpy(w.Sst, states + c * KV, (size_t)KV * sizeof(R));
        RN(chunk_prep)(&w, h, t0, L);
        RN(chunk_vprime)(&w, L);
        RN(chunk_backward_one)(&w, h, t0, L);
    }
    if (h->dh0)
        memcpy(h->dh0, w.dS, (size_t)KV * sizeof(R));
    free(states);
    RN(cws_free)(&w);
    return 0;
}
