/* Template: three ways to form (I + A)^-1 for a strictly lower A (float or double). */

/*
 * All three are exact in exact arithmetic (I + A is unit lower triangular)
 * and differ in floating point, which is what the suite measures:
 *
 *  fwdsubst  row by row, T_ij = -sum_{m=j}^{i-1} A_im T_mj, one fma chain
 *            per entry in increasing m; scalar code, no operand rounding
 *            (fla's forward substitution is not a tensor-core matmul).
 *  neumann   (NKI) the n x n matrix is cut into 16x16 blocks.  A diagonal
 *            block I + A_bb = I - N with N = -A_bb strictly lower, so
 *            N^16 = 0 and (I - N)^-1 = sum_{k<16} N^k = (I+N)(I+N^2)(I+N^4)(I+N^8):
 *            three squarings and three products, all matmuls subject to the
 *            operand rounding.  Off-diagonal blocks by block forward
 *            substitution, T_ij = -T_ii (sum_{m=j}^{i-1} A_im T_mj), the sum
 *            one accumulating matmul chain over m, then one more matmul.
 *            n not a multiple of 16 is zero-padded (padding rows of A are
 *            zero, so the leading n x n block is unchanged).
 *  schur     (NKI) recursive 2x2 block merge: for M = [[P,0],[R,Q]],
 *            M^-1 = [[P^-1,0],[-Q^-1 (R P^-1), Q^-1]], halves of
 *            floor(n/2) and ceil(n/2), down to 1x1 blocks (whose inverse is
 *            1); every merge is two rounded matmuls.
 *
 * Scratch: RN(inv_scratch_len)(n) elements, plus the matmul scratch ws
 * (sides up to the padded n).
 */

static int64_t RN(inv_pad16)(int64_t n) { return (n + 15) / 16 * 16; }

static int64_t RN(inv_scratch_len)(int64_t n)
{
    int64_t np = RN(inv_pad16)(n);
    return 2 * np * np + 8 * 256;
}

static void RN(inv_fwdsubst)(R *t, const R *a, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        R *ti = t + i * n;
        for (int64_t j = 0; j < n; j++)
            ti[j] = 0;
        ti[i] = 1;
        for (int64_t j = 0; j < i; j++) {
            R s = 0;
            for (int64_t m = j; m < i; m++)
                s = R_FMA(a[i * n + m], t[m * n + j], s);
            ti[j] = -s;
        }
    }
}

/* (I + X) for a 16x16 block X, into e. */
static void RN(inv_eye_plus)(R *e, const R *x)
{
    for (int r = 0; r < 256; r++)
        e[r] = x[r] + (r % 17 == 0 ? 1 : 0);
}

static void RN(inv_neumann)(R *t, const R *a, int64_t n, int mode, R *scr, const RN(mmws) *ws)
{
    const int64_t np = RN(inv_pad16)(n), nb = np / 16;
    R *ap = scr, *tp = scr + np * np, *blk = tp + np * np;
    R *nn = blk, *n2 = blk + 256, *n4 = blk + 512, *n8 = blk + 768, *e = blk + 1024,
      *p1 = blk + 1280, *p2 = blk + 1536, *acc = blk + 1792;
    for (int64_t i = 0; i < np; i++)
        for (int64_t j = 0; j < np; j++) {
            ap[i * np + j] = (i < n && j < i) ? a[i * n + j] : 0;
            tp[i * np + j] = 0;
        }
    for (int64_t bi = 0; bi < nb; bi++) {
        const int64_t o = 16 * bi;
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++)
                nn[r * 16 + c] = c < r ? -ap[(o + r) * np + o + c] : 0;
        RN(mm)(n2, 16, 16, 16, 16, nn, 16, 1, nn, 16, 1, mode, 0, ws);
        RN(mm)(n4, 16, 16, 16, 16, n2, 16, 1, n2, 16, 1, mode, 0, ws);
        RN(mm)(n8, 16, 16, 16, 16, n4, 16, 1, n4, 16, 1, mode, 0, ws);
        RN(inv_eye_plus)(p2, nn); /* p2 = I + N (scratch use) */
        RN(inv_eye_plus)(e, n2);
        RN(mm)(p1, 16, 16, 16, 16, p2, 16, 1, e, 16, 1, mode, 0, ws);
        RN(inv_eye_plus)(e, n4);
        RN(mm)(p2, 16, 16, 16, 16, p1, 16, 1, e, 16, 1, mode, 0, ws);
        RN(inv_eye_plus)(e, n8);
        R *tii = tp + o * np + o;
        RN(mm)(tii, np, 16, 16, 16, p2, 16, 1, e, 16, 1, mode, 0, ws);
        for (int64_t bj = 0; bj < bi; bj++) {
            const int64_t oj = 16 * bj;
            for (int64_t bm = bj; bm < bi; bm++)
                RN(mm)(acc, 16, 16, 16, 16, ap + o * np + 16 * bm, np, 1,
                       tp + 16 * bm * np + oj, np, 1, mode, bm > bj, ws);
            R *tij = tp + o * np + oj;
            RN(mm)(tij, np, 16, 16, 16, tii, np, 1, acc, 16, 1, mode, 0, ws);
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 16; c++)
                    tij[r * np + c] = -tij[r * np + c];
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            t[i * n + j] = tp[i * np + j];
}

/* Inverse of the unit lower triangular n x n block whose strictly lower
   part is a (leading dimension lda), into t (leading dimension ldt). */
static void RN(inv_schur_rec)(R *t, int64_t ldt, const R *a, int64_t lda, int64_t n, int mode,
                              R *x, const RN(mmws) *ws)
{
    if (n == 1) {
        t[0] = 1;
        return;
    }
    const int64_t h = n / 2, rest = n - h;
    RN(inv_schur_rec)(t, ldt, a, lda, h, mode, x, ws);
    RN(inv_schur_rec)(t + h * ldt + h, ldt, a + h * lda + h, lda, rest, mode, x, ws);
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = h; j < n; j++)
            t[i * ldt + j] = 0;
    /* x = R P^-1 (rest x h), then the lower-left block = -Q^-1 x. */
    RN(mm)(x, h, rest, h, h, a + h * lda, lda, 1, t, ldt, 1, mode, 0, ws);
    R *ll = t + h * ldt;
    RN(mm)(ll, ldt, rest, h, rest, t + h * ldt + h, ldt, 1, x, h, 1, mode, 0, ws);
    for (int64_t i = 0; i < rest; i++)
        for (int64_t j = 0; j < h; j++)
            ll[i * ldt + j] = -ll[i * ldt + j];
}

/* t = (I + strictly_lower(a))^-1, both n x n row-major. */
static void RN(inverse)(R *t, const R *a, int64_t n, int inv, int mode, R *scr,
                        const RN(mmws) *ws)
{
    switch (inv) {
    case RA_CPU_INV_NEUMANN: RN(inv_neumann)(t, a, n, mode, scr, ws); break;
    case RA_CPU_INV_SCHUR: {
        /* The recursion reads only the strictly lower part of a. */
        RN(inv_schur_rec)(t, n, a, n, n, mode, scr, ws);
        break;
    }
    default: RN(inv_fwdsubst)(t, a, n); break;
    }
}
