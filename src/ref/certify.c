/* Certified references: the Ziv loop over precisions, the certificate, dispatch. */
#include "ref/ref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "core/metrics.h"
#include "core/op.h"
#include "ref/pool.h"
#include "ref/refop.h"

/*
 * ra_ref_compute: prepare the op (validation), look the key up in the
 * cache, else run at (p, c), compare every element of every output with
 * ra_mp_agree_bits, and while a tensor has fewer than min_bits make c the
 * new working precision (its run is kept) and run again at 2c.  The f64
 * tensors come from the last check run.  The certificate is the classic
 * two-precision test: it is a measurement of the computed values, not a
 * proof, and it is exactly as strong as the assumption that the error at
 * 2p is much smaller than at p (true for the fixed sequence of correctly
 * rounded MPFR operations of these references, whose error bounds scale as
 * 2^-p).
 *
 * A reference whose f64 tensors hold a non-finite value (an overflow of
 * the f64 range, e.g. gdn with gates g = 200, whose state grows as
 * e^(200 t)) is "not representable": certified=not-representable whatever
 * the bits say, with nonfinite.<tensor> (count) and nonfinite_at.<tensor>
 * (first index), since no finite kernel output can be measured against an
 * infinite truth.  Every reference records its input_hash (XXH3-64 of the
 * case's tensors) and ref_code_version, and a content_hash over its
 * metadata and tensors (src/ref/cache.c).
 *
 * The comparison and the f64 rounding run in parallel over fixed chunks;
 * the minimum and the first worst index are combined so that the result
 * does not depend on the thread count.
 */

const ra_ref_op *ra_ref_op_find(const char *op)
{
    const ra_op *row = ra_op_find(op);
    return row ? row->ref : NULL;
}

void ra_ref_outs_clear(ra_ref_outs *o)
{
    for (size_t i = 0; i < o->n; i++)
        ra_mparr_free(&o->t[i].a);
}

void ra_ref_opts_init(ra_ref_opts *o)
{
    memset(o, 0, sizeof *o);
    o->prec = 128;
    o->check_prec = 0;
    o->prec_cap = 1024;
    o->min_bits = 60;
    o->certify = 1;
    o->grads = 1;
    o->threads = 0;
    o->use_cache = 1;
    o->cache_dir = NULL;
    o->progress = 1;
}

/* Minimum agreeing bits over lo vs hi and the first element attaining it. */
static long min_agree(int64_t *worst, const ra_mparr *lo, const ra_mparr *hi, long cap, int threads)
{
    const int64_t n = (int64_t)hi->n, chunk = 4096, nchunks = (n + chunk - 1) / chunk;
    long best = cap;
    int64_t best_i = -1;
#pragma omp parallel num_threads(ra_pool_threads(threads))
    {
        ra_mp_range range;
        ra_mp_range_widen(&range);
        long mb = cap;
        int64_t mi = -1;
#pragma omp for schedule(static)
        for (int64_t c = 0; c < nchunks; c++)
            for (int64_t i = c * chunk; i < n && i < (c + 1) * chunk; i++) {
                long b = ra_mp_agree_bits(lo->x + i, hi->x + i, cap);
                if (b < mb) { /* indices rise within a thread: keeps the first */
                    mb = b;
                    mi = i;
                }
            }
#pragma omp critical(ra_ref_min_agree)
        if (mi >= 0 && (mb < best || (mb == best && (best_i < 0 || mi < best_i)))) {
            best = mb;
            best_i = mi;
        }
        ra_mp_range_restore(&range);
    }
    *worst = best_i;
    return best;
}

static void to_f64(double *dst, const ra_mparr *a, int threads)
{
    const int64_t n = (int64_t)a->n;
#pragma omp parallel num_threads(ra_pool_threads(threads))
    {
        ra_mp_range range;
        ra_mp_range_widen(&range);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
            dst[i] = mpfr_get_d(a->x + i, MPFR_RNDN);
        ra_mp_range_restore(&range);
    }
}

static ra_status check_opts(const ra_ref_opts *o, mpfr_prec_t c)
{
    if (o->prec < 53 || o->prec > MPFR_PREC_MAX / 4)
        RA_ERRORF(RA_EINVAL, "reference precision %ld bits: must be at least 53", (long)o->prec);
    if (o->prec_cap < o->prec || o->prec_cap > MPFR_PREC_MAX / 4)
        RA_ERRORF(RA_EINVAL, "reference precision cap %ld is below the working precision %ld",
                  (long)o->prec_cap, (long)o->prec);
    if (o->certify && (c <= o->prec || c > MPFR_PREC_MAX / 4))
        RA_ERRORF(RA_EINVAL, "check precision %ld must exceed the working precision %ld", (long)c,
                  (long)o->prec);
    if (o->certify && o->min_bits < 1)
        RA_ERRORF(RA_EINVAL, "minimum certified bits %d: must be at least 1", o->min_bits);
    return RA_OK;
}

typedef struct certificate {
    long bits[RA_REF_MAX_OUTS];
    int64_t worst[RA_REF_MAX_OUTS];
    int ok;
    mpfr_prec_t p, c;
    char rounds[256];
} certificate;

/* Runs the op at nprec precisions into outs (one pool of work). */
static ra_status run_precs(ra_ref_outs *outs, const mpfr_prec_t *precs, int nprec,
                           const ra_ref_op *op, const void *state, const ra_ref_opts *o)
{
    ra_progress *prog = NULL;
    if (o->progress) {
        char label[96];
        if (nprec == 2)
            snprintf(label, sizeof label, "reference %s, %ld+%ld bits", op->name, (long)precs[0],
                     (long)precs[1]);
        else
            snprintf(label, sizeof label, "reference %s, %ld bits", op->name, (long)precs[0]);
        prog = ra_progress_start(label, op->units(state) * nprec, "heads");
    }
    ra_status st = op->run(outs, precs, nprec, state, o->threads, prog);
    ra_progress_finish(prog);
    return st;
}

/* The Ziv loop; on success *final holds the outputs to round.  The first
   round runs p and c together; a later round reuses the last check run as
   its working run and computes only the new check. */
static ra_status certify_loop(ra_ref_outs *final, certificate *cert, const ra_ref_op *op,
                              const void *state, const ra_ref_opts *o)
{
    mpfr_prec_t p = o->prec, c = o->check_prec ? o->check_prec : 2 * o->prec;
    ra_ref_outs runs[2];
    memset(runs, 0, sizeof runs);
    ra_ref_outs *lo = &runs[0], *hi = &runs[1];
    cert->rounds[0] = '\0';
    cert->p = p;
    if (!o->certify) {
        RA_TRY(run_precs(lo, &p, 1, op, state, o));
        *final = *lo;
        return RA_OK;
    }
    const mpfr_prec_t both[2] = {p, c};
    RA_TRY(run_precs(runs, both, 2, op, state, o));
    for (;;) {
        cert->ok = 1;
        long least = (long)p;
        for (size_t i = 0; i < hi->n; i++) {
            cert->bits[i] =
                min_agree(&cert->worst[i], &lo->t[i].a, &hi->t[i].a, (long)p, o->threads);
            if (cert->bits[i] < o->min_bits)
                cert->ok = 0;
            if (cert->bits[i] < least)
                least = cert->bits[i];
        }
        size_t used = strlen(cert->rounds);
        snprintf(cert->rounds + used, sizeof cert->rounds - used, "%s%ld/%ld:%ld", used ? "," : "",
                 (long)p, (long)c, least);
        cert->p = p;
        cert->c = c;
        ra_ref_outs_clear(lo);
        if (cert->ok || c > o->prec_cap || c > MPFR_PREC_MAX / 4) {
            *final = *hi;
            return RA_OK;
        }
        ra_ref_outs *t = lo; /* the check run becomes the working run */
        lo = hi, hi = t;
        p = c;
        c = 2 * c;
        ra_status st = run_precs(hi, &c, 1, op, state, o);
        if (st != RA_OK) {
            ra_ref_outs_clear(lo);
            return st;
        }
    }
}

/* Records the non-finite f64 values of x (count and first index) in kv;
   0 when there are some. */
static int representable(ra_kv *kv, const ra_tensor *x, ra_status *st)
{
    const double *d = x->data;
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < x->numel; i++)
        if (!isfinite(d[i]) && bad++ == 0)
            first = i;
    if (!bad)
        return 1;
    char k[64], idx[160];
    snprintf(k, sizeof k, "nonfinite.%s", x->name);
    *st = ra_kv_setf(kv, k, "%lld", (long long)bad);
    ra_index_format(idx, sizeof idx, first, x->ndim, x->shape);
    snprintf(k, sizeof k, "nonfinite_at.%s", x->name);
    if (*st == RA_OK)
        *st = ra_kv_set(kv, k, idx);
    return 0;
}

static ra_status build_result(ra_case *ref, const ra_case *c, const ra_ref_outs *final,
                              const certificate *cert, const ra_ref_opts *o, const char *key)
{
    ra_case_init(ref);
    RA_TRY(ra_case_set_op(ref, c->op));
    RA_TRY(ra_kv_copy(&ref->params, &c->params));
    ra_kv *kv = &ref->params;
    int finite = 1;
    for (size_t i = 0; i < final->n; i++) {
        const ra_ref_out *t = &final->t[i];
        ra_tensor *x;
        ra_status st = RA_OK;
        RA_TRY(ra_tensors_new(&ref->tensors, &x, t->name, RA_F64, t->ndim, t->shape));
        to_f64(x->data, &t->a, o->threads);
        finite &= representable(kv, x, &st);
        RA_TRY(st);
    }
    RA_TRY(ra_kv_setf(kv, "ref_prec", "%ld", (long)cert->p));
    if (o->certify) {
        RA_TRY(ra_kv_setf(kv, "ref_check_prec", "%ld", (long)cert->c));
        RA_TRY(ra_kv_set(kv, "ref_rounds", cert->rounds));
        for (size_t i = 0; i < final->n; i++) {
            char k[64];
            snprintf(k, sizeof k, "certified_bits.%s", final->t[i].name);
            RA_TRY(ra_kv_setf(kv, k, "%ld", cert->bits[i]));
            if (cert->bits[i] < o->min_bits && cert->worst[i] >= 0) {
                char idx[160];
                ra_index_format(idx, sizeof idx, cert->worst[i], final->t[i].ndim,
                                final->t[i].shape);
                snprintf(k, sizeof k, "certified_worst.%s", final->t[i].name);
                RA_TRY(ra_kv_set(kv, k, idx));
            }
        }
        RA_TRY(ra_kv_set(kv, "certified", !finite ? "not-representable" : cert->ok ? "yes" : "no"));
    } else
        RA_TRY(ra_kv_set(kv, "certified", finite ? "unchecked" : "not-representable"));
    RA_TRY(ra_kv_setf(kv, "ref_min_bits", "%d", o->min_bits));
    RA_TRY(ra_kv_setf(kv, "ref_prec_cap", "%ld", (long)o->prec_cap));
    RA_TRY(ra_kv_set(kv, "mpfr_version", mpfr_get_version()));
    RA_TRY(ra_kv_set(kv, "ref_code_version", ra_ref_code_version()));
    char input[17], hash[33];
    RA_TRY(ra_ref_input_hash(input, c));
    RA_TRY(ra_kv_set(kv, "input_hash", input));
    RA_TRY(ra_kv_set(kv, "cache_key", key));
    RA_TRY(ra_ref_content_hash(hash, ref));
    RA_TRY(ra_kv_set(kv, "content_hash", hash));
    return RA_OK;
}

static ra_status compute(ra_case *ref, const ra_case *c, const ra_ref_opts *o, const char *what,
                         const ra_ref_op *op)
{
    void *state;
    ra_ref_outs layout;
    RA_TRY(op->prepare(&state, &layout, c, o->grads, what));
    char key[33];
    ra_ref_cache_key(key, c, o);
    char *dir = NULL;
    int hit = 0, stale = 0;
    ra_status st = RA_OK;
    int use_cache = o->use_cache;
    if (use_cache && ra_ref_cache_dir(&dir, o) != RA_OK) {
        /* no cache directory to be had: say so and compute anyway */
        RA_REPORTF(RA_EINVAL, "warning: reference cache off (see above)");
        use_cache = 0;
    }
    if (use_cache)
        st = ra_ref_cache_lookup(ref, &hit, &stale, dir, key, c->op, &layout);
    if (st == RA_OK && hit)
        st = ra_kv_set(&ref->params, "cache", "hit");
    else if (st == RA_OK) {
        ra_ref_outs final;
        certificate cert;
        memset(&cert, 0, sizeof cert);
        st = certify_loop(&final, &cert, op, state, o);
        if (st == RA_OK) {
            st = build_result(ref, c, &final, &cert, o, key);
            ra_ref_outs_clear(&final);
        }
        if (st == RA_OK && use_cache && ra_ref_cache_store(ref, dir, key) != RA_OK)
            RA_REPORTF(RA_EIO, "warning: reference not cached (see above); continuing");
        if (st == RA_OK)
            st = ra_kv_set(&ref->params, "cache",
                           !use_cache ? "off"
                           : stale    ? "refreshed"
                                      : "miss");
    }
    free(dir);
    op->release(state);
    return st;
}

ra_status ra_ref_compute(ra_case *ref, const ra_case *c, const ra_ref_opts *o, const char *what)
{
    ra_case_init(ref);
    if (!what)
        what = "case";
    mpfr_prec_t check = o->check_prec ? o->check_prec : 2 * o->prec;
    RA_TRY(check_opts(o, check));
    const ra_ref_op *op = ra_ref_op_find(c->op);
    if (!op) {
        char names[256] = "";
        for (const ra_op *const *row = ra_ops(); *row; row++)
            if ((*row)->ref)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         *names ? ", " : "", (*row)->name);
        RA_ERRORF(RA_EUNSUPPORTED, "%s: op '%s' has no MPFR reference (references exist for: %s)",
                  what, c->op ? c->op : "(none)", names);
    }
    ra_status st = compute(ref, c, o, what, op);
    if (st != RA_OK)
        ra_case_clear(ref);
    return st;
}
