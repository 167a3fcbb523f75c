/* Example recaudit plugin: a sequential double-precision gated delta rule. */

/*
 * This is the file a team copies to put its own kernel under
 * `recaudit validate --plugin ./libmine.so`.  It uses nothing but the
 * installed headers recaudit/plugin.h and recaudit/gdn.h (the gdn
 * capability bits); the ra_* functions it calls are
 * resolved from the recaudit executable when the plugin is loaded, so it
 * is linked against nothing (build it as a shared object with undefined
 * symbols allowed, the default):
 *
 *     cc -O2 -fPIC -shared -I$(prefix)/include gdn_example.c -o libgdnexample.so -lm
 *     recaudit validate --variant 'gdn.example.*' --suite quick --plugin ./libgdnexample.so
 *
 * The kernel is docs/gdn.md written out literally, per (batch, value
 * head): S_t = a_t S_{t-1} + k_t u_t^T with u_t = beta_t (v_t - a_t S_{t-1}^T
 * k_t), o_t = scale S_t^T q_t; the backward is the reverse-time adjoint with
 * every state S_0..S_T kept (O(T K V) doubles per head: simple, not
 * frugal).  Inputs are read exactly as doubles, outputs stored as f64.
 * The variant's envelope excludes in-kernel L2 normalisation: it does not
 * claim RA_GDN_CAP_L2NORM, validate skips the suite rows that ask for it, and a
 * case with l2norm=true given directly is refused with RA_EUNSUPPORTED.
 * Parameters are read with the host's readers (ra_case_param_bool,
 * ra_case_param_double): a malformed text is RA_EINVAL, as in the host.
 *
 * Built with -DPLANT_DEFECT it carries one deliberate bug, a sign error in
 * the dk term that flows through the state (dk = lambda u + beta S~ du),
 * so that the suite's tests can show validate rejecting it.
 * Built with -DPLANT_MISNAMED it writes ht and dk under other names, as a
 * kernel that forgets a tensor does: check must fail it for the missing ones.
 * Built with -DEXAMPLE_NAME='"gdn.x"' it registers under that name: the gates
 * follow its declared class (f64), whatever the name spells.
 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "recaudit/gdn.h"
#include "recaudit/plugin.h"

const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION;

#ifdef PLANT_DEFECT
#define DK_STATE_SIGN (+1.0) /* the planted bug */
#else
#define DK_STATE_SIGN (-1.0)
#endif

#ifndef EXAMPLE_NAME
#define EXAMPLE_NAME "gdn.example.f64"
#endif

#ifdef PLANT_MISNAMED
#define HT_NAME "h_final" /* the planted bugs: ht and dk under names no one reads */
#define DK_NAME "dkey"
#else
#define HT_NAME "ht"
#define DK_NAME "dk"
#endif

typedef struct gdn {
    int64_t B, T, Hk, Hv, K, V;
    double scale;
    const ra_tensor *q, *k, *v, *g, *beta, *h0, *do_, *dht;
} gdn;

#define FAIL(code, msg)                                                                            \
    do {                                                                                           \
        ra_error((msg), __FILE__, __LINE__, (code));                                               \
        return (code);                                                                             \
    } while (0)

static int dims_are(const ra_tensor *t, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    const int64_t d[4] = {d0, d1, d2, d3};
    if (!t || t->ndim != ndim)
        return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != d[i])
            return 0;
    return 1;
}

/* Finds the tensors and checks their shapes: a plugin reads foreign files. */
static ra_status load(gdn *p, const ra_case *c, int need_do)
{
    const ra_tensors *ts = &c->tensors;
    p->q = ra_tensors_find(ts, "q"), p->k = ra_tensors_find(ts, "k");
    p->v = ra_tensors_find(ts, "v"), p->g = ra_tensors_find(ts, "g");
    p->beta = ra_tensors_find(ts, "beta"), p->h0 = ra_tensors_find(ts, "h0");
    p->do_ = ra_tensors_find(ts, "do"), p->dht = ra_tensors_find(ts, "dht");
    if (!p->q || !p->v || p->q->ndim != 4 || p->v->ndim != 4)
        FAIL(RA_EINVAL, "gdn.example: q [B,T,Hk,K] and v [B,T,Hv,V] are required");
    p->B = p->q->shape[0], p->T = p->q->shape[1], p->Hk = p->q->shape[2], p->K = p->q->shape[3];
    p->Hv = p->v->shape[2], p->V = p->v->shape[3];
    if (p->Hv % p->Hk || !dims_are(p->k, 4, p->B, p->T, p->Hk, p->K) ||
        !dims_are(p->v, 4, p->B, p->T, p->Hv, p->V) || !dims_are(p->g, 3, p->B, p->T, p->Hv, 0) ||
        !dims_are(p->beta, 3, p->B, p->T, p->Hv, 0) ||
        (p->h0 && !dims_are(p->h0, 4, p->B, p->Hv, p->K, p->V)) ||
        (p->dht && !dims_are(p->dht, 4, p->B, p->Hv, p->K, p->V)))
        FAIL(RA_EINVAL, "gdn.example: inconsistent shapes of q, k, v, g, beta, h0, dht");
    if (need_do && !dims_are(p->do_, 4, p->B, p->T, p->Hv, p->V))
        FAIL(RA_EINVAL, "gdn.example: the backward needs do [B,T,Hv,V]");
    /* The parameters through the host's own readers (recaudit/plugin.h),
       so that this variant takes and refuses the texts the built-in ones
       do: l2norm=off is false, l2norm=maybe is an error, not a request. */
    int l2norm;
    double l2eps;
    ra_status st = ra_case_param_bool(&l2norm, c, "l2norm", 0);
    if (st != RA_OK)
        return st;
    if ((st = ra_case_param_double(&p->scale, c, "scale", 1.0 / sqrt((double)p->K))) != RA_OK)
        return st;
    /* l2eps only enters the normalisation this variant does not do, but a
       case the host refuses is refused here too. */
    if ((st = ra_case_param_double(&l2eps, c, "l2eps", 1e-6)) != RA_OK)
        return st;
    if (l2eps < 0)
        FAIL(RA_EINVAL, "gdn.example: parameter 'l2eps' must be >= 0");
    if (l2norm)
        FAIL(RA_EUNSUPPORTED, "gdn.example: l2norm=true is outside this variant's envelope "
                              "(no RA_GDN_CAP_L2NORM capability)");
    return RA_OK;
}

/* Flat offsets of the row-major layouts. */
static int64_t qk_at(const gdn *p, int64_t b, int64_t t, int64_t h)
{
    return ((b * p->T + t) * p->Hk + h) * p->K;
}
static int64_t v_at(const gdn *p, int64_t b, int64_t t, int64_t h)
{
    return ((b * p->T + t) * p->Hv + h) * p->V;
}
static int64_t gate_at(const gdn *p, int64_t b, int64_t t, int64_t h)
{
    return (b * p->T + t) * p->Hv + h;
}

/* Runs the forward of head (b, h), storing S_0..S_T in S[(T+1)*K*V] and
   the outputs in o (when not NULL). */
static void forward_head(const gdn *p, int64_t b, int64_t h, double *S, ra_tensor *o)
{
    const int64_t K = p->K, V = p->V, hk = h / (p->Hv / p->Hk), KV = K * V;
    for (int64_t i = 0; i < KV; i++)
        S[i] = p->h0 ? ra_tensor_get(p->h0, (b * p->Hv + h) * KV + i) : 0.0;
    for (int64_t t = 0; t < p->T; t++) {
        const double *prev = S + t * KV;
        double *cur = S + (t + 1) * KV;
        const double a = exp(ra_tensor_get(p->g, gate_at(p, b, t, h)));
        const double beta = ra_tensor_get(p->beta, gate_at(p, b, t, h));
        for (int64_t j = 0; j < V; j++) {
            double sk = 0; /* (a S_{t-1})^T k_t, column j */
            for (int64_t i = 0; i < K; i++)
                sk += a * prev[i * V + j] * ra_tensor_get(p->k, qk_at(p, b, t, hk) + i);
            const double u = beta * (ra_tensor_get(p->v, v_at(p, b, t, h) + j) - sk);
            double out = 0;
            for (int64_t i = 0; i < K; i++) {
                double s = a * prev[i * V + j] + ra_tensor_get(p->k, qk_at(p, b, t, hk) + i) * u;
                cur[i * V + j] = s;
                out += s * ra_tensor_get(p->q, qk_at(p, b, t, hk) + i);
            }
            if (o)
                ra_tensor_set(o, v_at(p, b, t, h) + j, p->scale * out);
        }
    }
}

static ra_status forward(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)run;
    gdn p;
    ra_status st = load(&p, c, 0);
    if (st != RA_OK)
        return st;
    const int64_t oshape[4] = {p.B, p.T, p.Hv, p.V}, hshape[4] = {p.B, p.Hv, p.K, p.V};
    ra_tensor *o, *ht;
    if ((st = ra_tensors_new(out, &o, "o", RA_F64, 4, oshape)) != RA_OK ||
        (st = ra_tensors_new(out, &ht, HT_NAME, RA_F64, 4, hshape)) != RA_OK)
        return st;
    const int64_t KV = p.K * p.V;
    double *S = malloc((size_t)((p.T + 1) * KV) * sizeof *S);
    if (!S)
        FAIL(RA_ENOMEM, "gdn.example: out of memory");
    for (int64_t b = 0; b < p.B; b++)
        for (int64_t h = 0; h < p.Hv; h++) {
            forward_head(&p, b, h, S, o);
            for (int64_t i = 0; i < KV; i++)
                ra_tensor_set(ht, (b * p.Hv + h) * KV + i, S[p.T * KV + i]);
        }
    free(S);
    return RA_OK;
}

static void add(ra_tensor *t, int64_t i, double x) { ra_tensor_set(t, i, ra_tensor_get(t, i) + x); }

/* Reverse-time adjoint of head (b, h) (docs/gdn.md); dq and dk are
   summed over the value heads of a key head. */
static void backward_head(const gdn *p, int64_t b, int64_t h, const double *S, double *lam,
                          double *du, ra_tensor **d)
{
    enum { DQ, DK, DV, DG, DBETA, DH0 };
    const int64_t K = p->K, V = p->V, hk = h / (p->Hv / p->Hk), KV = K * V;
    for (int64_t i = 0; i < KV; i++)
        lam[i] = p->dht ? ra_tensor_get(p->dht, (b * p->Hv + h) * KV + i) : 0.0;
    for (int64_t t = p->T - 1; t >= 0; t--) {
        const double *prev = S + t * KV, *cur = S + (t + 1) * KV;
        const double a = exp(ra_tensor_get(p->g, gate_at(p, b, t, h)));
        const double beta = ra_tensor_get(p->beta, gate_at(p, b, t, h));
        const int64_t qk = qk_at(p, b, t, hk), vo = v_at(p, b, t, h);
        for (int64_t i = 0; i < K; i++) { /* lambda += scale q do^T; dq = scale S_t do */
            double dq = 0;
            for (int64_t j = 0; j < V; j++) {
                const double dO = ra_tensor_get(p->do_, vo + j);
                lam[i * V + j] += p->scale * ra_tensor_get(p->q, qk + i) * dO;
                dq += cur[i * V + j] * dO;
            }
            add(d[DQ], qk + i, p->scale * dq);
        }
        double dbeta = 0;
        for (int64_t j = 0; j < V; j++) { /* du = lambda^T k; r = v - S~^T k */
            double sk = 0, l = 0;
            for (int64_t i = 0; i < K; i++) {
                sk += a * prev[i * V + j] * ra_tensor_get(p->k, qk + i);
                l += lam[i * V + j] * ra_tensor_get(p->k, qk + i);
            }
            const double r = ra_tensor_get(p->v, vo + j) - sk;
            du[j] = l;
            dbeta += l * r;
            add(d[DV], vo + j, beta * l);
            for (int64_t i = 0; i < K; i++) /* dk: lambda u part */
                add(d[DK], qk + i, lam[i * V + j] * beta * r);
        }
        ra_tensor_set(d[DBETA], gate_at(p, b, t, h), dbeta);
        double dg = 0;
        for (int64_t i = 0; i < K; i++) {
            double sdu = 0; /* (S~ du)_i */
            for (int64_t j = 0; j < V; j++) {
                const double st = a * prev[i * V + j];
                const double ds = lam[i * V + j] - beta * ra_tensor_get(p->k, qk + i) * du[j];
                sdu += st * du[j];
                dg += ds * st;
                lam[i * V + j] = a * ds;
            }
            add(d[DK], qk + i, DK_STATE_SIGN * beta * sdu);
        }
        ra_tensor_set(d[DG], gate_at(p, b, t, h), dg);
    }
    if (d[DH0])
        for (int64_t i = 0; i < KV; i++)
            ra_tensor_set(d[DH0], (b * p->Hv + h) * KV + i, lam[i]);
}

static ra_status backward(const ra_variant *self, const ra_case *c, ra_tensors *grads,
                          ra_run *run)
{
    (void)self, (void)run;
    gdn p;
    ra_status st = load(&p, c, 1);
    if (st != RA_OK)
        return st;
    const int64_t qs[4] = {p.B, p.T, p.Hk, p.K}, vs[4] = {p.B, p.T, p.Hv, p.V};
    const int64_t gs[3] = {p.B, p.T, p.Hv}, hs[4] = {p.B, p.Hv, p.K, p.V};
    ra_tensor *d[6] = {NULL};
    if ((st = ra_tensors_new(grads, &d[0], "dq", RA_F64, 4, qs)) != RA_OK ||
        (st = ra_tensors_new(grads, &d[1], DK_NAME, RA_F64, 4, qs)) != RA_OK ||
        (st = ra_tensors_new(grads, &d[2], "dv", RA_F64, 4, vs)) != RA_OK ||
        (st = ra_tensors_new(grads, &d[3], "dg", RA_F64, 3, gs)) != RA_OK ||
        (st = ra_tensors_new(grads, &d[4], "dbeta", RA_F64, 3, gs)) != RA_OK ||
        (p.h0 && (st = ra_tensors_new(grads, &d[5], "dh0", RA_F64, 4, hs)) != RA_OK))
        return st;
    const int64_t KV = p.K * p.V;
    double *S = malloc((size_t)((p.T + 1) * KV) * sizeof *S);
    double *lam = malloc((size_t)KV * sizeof *lam), *du = malloc((size_t)p.V * sizeof *du);
    if (!S || !lam || !du) {
        free(S), free(lam), free(du);
        FAIL(RA_ENOMEM, "gdn.example: out of memory");
    }
    for (int64_t b = 0; b < p.B; b++)
        for (int64_t h = 0; h < p.Hv; h++) {
            forward_head(&p, b, h, S, NULL);
            backward_head(&p, b, h, S, lam, du, d);
        }
    free(S), free(lam), free(du);
    return RA_OK;
}

ra_status ra_plugin_register(ra_registry *r)
{
    static const ra_variant v = {
        .name = EXAMPLE_NAME,
        .op = "gdn",
        .doc = "example plugin: sequential recurrence and reverse-time adjoint in double",
        .device = RA_CPU,
        .pclass = "f64",
        .caps = RA_FWD | RA_BWD | RA_GDN_CAP_H0 | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL,
        .forward = forward,
        .backward = backward,
    };
    return ra_registry_add(r, &v);
}
