/* Case generation for the bidirectional frame GDN family: shapes, tables and input regimes. */
#include "core/gen_bigdn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpfr.h>

#include "core/bigdn_case.h"
#include "core/gen_fill.h"
#include "core/rng.h"

/*
 * sana: seed 003's test recipe: qkv = 0.1 randn rounded to bf16 (whatever
 * the storage dtype: bf16 values are exact in every wider one), norm
 * weights 1 + 0.1 randn, RoPE angles uniform, beta = 0.02 U(0,1), decay
 * U(0.90, 0.99), k_scale = D^-1/2 S^-1/2.
 * default: the same structure at unit scale (qkv, dout ~ N(0,1)), beta
 * U(0, 0.5), decay U(0.5, 1): larger transitions I - P and gradients of
 * order one, for the gradient checks.
 * long-frame: decay U(0.995, 1) and beta U(0, 0.05): the transitions are
 * close to the identity, so both frame streams carry information across
 * many frames (meant for F of tens).
 *
 * The RoPE tables are interleaved: per token n and pair i an angle
 * theta ~ U(-pi, pi) (stream "rope_theta"), rope_cos[n, 2i] =
 * rope_cos[n, 2i+1] = cos theta, rope_sin[n, 2i] = -sin theta,
 * rope_sin[n, 2i+1] = sin theta (the sign carried by the table, so
 * y[d] = x[d] cos[d] + x[d^1] sin[d] is the rotation by theta).  cos and
 * sin are MPFR's, correctly rounded: cases are bit-identical everywhere.
 *
 * beta >= 0 and ReLU'd features keep den = Q . (z + z') positive in every
 * regime (the transitions I - Pz stay close to the identity: Pz's norm is
 * about beta S |K|^2 <= beta / 2 at k_scale^2 = 1/(D S)), far from -eps.
 *
 * bigdn.core draws the same raw tensors and computes its features from
 * them in double (RMSNorm, ReLU, k_scale, RoPE), so the phase kernels see
 * the distribution they see inside the layer.
 */

const ra_op_item ra_bigdn_regimes[] = {
    {"default", "qkv, dout ~ N(0,1); norm weights 1 + 0.1 N(0,1); RoPE angles U(-pi,pi); "
                "beta ~ U(0,0.5); decay ~ U(0.5,1)"},
    {"sana", "seed 003's recipe: qkv = 0.1 randn rounded to bf16; norm weights 1 + 0.1 randn; "
             "RoPE angles U(-pi,pi); beta = 0.02 U(0,1); decay ~ U(0.90,0.99)"},
    {"long-frame", "as default, but decay ~ U(0.995,1) and beta ~ U(0,0.05): streams carry "
                   "across many frames (use F of tens)"},
    {NULL, NULL},
};

const ra_op_item ra_bigdn_flags[] = {{NULL, NULL}};

typedef struct regime {
    double x_sd;    /* qkv and dout */
    int bf16;       /* round qkv to bf16 */
    double beta_hi; /* beta ~ U(0, beta_hi) */
    double g_lo, g_hi;
} regime;

static const regime regimes[] = {
    {1.0, 0, 0.5, 0.5, 1.0},
    {0.1, 1, 0.02, 0.90, 0.99},
    {1.0, 0, 0.05, 0.995, 1.0},
};

_Static_assert(sizeof regimes / sizeof regimes[0] + 1 ==
                   sizeof ra_bigdn_regimes / sizeof ra_bigdn_regimes[0],
               "regime tables out of step");

/* The interleaved tables of docs/bigdn.md into cos_t, sin_t [N, D]. */
static ra_status rope_tables(ra_tensor *cos_t, ra_tensor *sin_t, const ra_bigdn_shape *s,
                             uint64_t seed)
{
    const int64_t N = s->F * s->S, P = s->D / 2;
    double *th = malloc((size_t)(N * P) * sizeof *th + 1);
    if (!th)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_rng *r;
    ra_status st = ra_rng_new(&r, seed, "rope_theta");
    if (st != RA_OK) {
        free(th);
        return st;
    }
    ra_gen_uniform(th, (size_t)(N * P), r, -M_PI, M_PI);
    ra_rng_free(r);
    MPFR_DECL_INIT(a, 53);
    MPFR_DECL_INIT(cs, 53);
    MPFR_DECL_INIT(sn, 53);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < P; i++) {
            mpfr_set_d(a, th[n * P + i], MPFR_RNDN);
            mpfr_sin_cos(sn, cs, a, MPFR_RNDN);
            const double c = mpfr_get_d(cs, MPFR_RNDN), sv = mpfr_get_d(sn, MPFR_RNDN);
            ra_tensor_set(cos_t, n * s->D + 2 * i, c);
            ra_tensor_set(cos_t, n * s->D + 2 * i + 1, c);
            ra_tensor_set(sin_t, n * s->D + 2 * i, -sv);
            ra_tensor_set(sin_t, n * s->D + 2 * i + 1, sv);
        }
    free(th);
    return RA_OK;
}

/* bigdn.core's features from the full case's raw tensors (docs/bigdn.md),
   in double, stored in dtype dt. */
static ra_status core_features(ra_case *c, const ra_case *raw, const ra_bigdn_shape *s, ra_dtype dt,
                               double k_scale)
{
    const ra_tensor *qkv = ra_tensors_find(&raw->tensors, "qkv");
    const ra_tensor *w[2] = {ra_tensors_find(&raw->tensors, "q_norm_w"),
                             ra_tensors_find(&raw->tensors, "k_norm_w")};
    const ra_tensor *cs = ra_tensors_find(&raw->tensors, "rope_cos");
    const ra_tensor *sn = ra_tensors_find(&raw->tensors, "rope_sin");
    const int64_t N = s->F * s->S, C = s->H * s->D, tok[4] = {s->B, N, s->H, s->D};
    ra_tensor *t[5];
    static const char *const nm[5] = {"Q", "K", "Qr", "Kr", "V"};
    for (int j = 0; j < 5; j++)
        RA_TRY(ra_tensors_new(&c->tensors, &t[j], nm[j], dt, 4, tok));
    double *y = malloc((size_t)C * sizeof *y);
    if (!y)
        RA_ERROR("out of memory", RA_ENOMEM);
    for (int64_t b = 0; b < s->B; b++)
        for (int64_t n = 0; n < N; n++) {
            for (int j = 0; j < 2; j++) {
                double ss = 0;
                for (int64_t ch = 0; ch < C; ch++) {
                    const double x = ra_tensor_get(qkv, ra_bigdn_qkv(s, b, n, j, 0, ch));
                    ss += x * x;
                }
                const double inv = 1.0 / sqrt(ss / (double)C + 1e-5);
                for (int64_t ch = 0; ch < C; ch++) {
                    const double x = ra_tensor_get(qkv, ra_bigdn_qkv(s, b, n, j, 0, ch));
                    const double v = x * inv * ra_tensor_get(w[j], ch);
                    y[ch] = (v > 0 ? v : 0) * (j ? k_scale : 1.0);
                }
                for (int64_t h = 0; h < s->H; h++)
                    for (int64_t d = 0; d < s->D; d++) {
                        const int64_t o = ra_bigdn_tok(s, b, n, h, d);
                        const double *yh = y + h * s->D;
                        ra_tensor_set(t[j], o, yh[d]);
                        ra_tensor_set(t[2 + j], o,
                                      yh[d] * ra_tensor_get(cs, n * s->D + d) +
                                          yh[d ^ 1] * ra_tensor_get(sn, n * s->D + d));
                    }
            }
            for (int64_t ch = 0; ch < C; ch++)
                ra_tensor_set(t[4], ra_bigdn_tok(s, b, n, 0, ch),
                              ra_tensor_get(qkv, ra_bigdn_qkv(s, b, n, 2, 0, ch)));
        }
    free(y);
    return RA_OK;
}

ra_status ra_bigdn_generate(ra_case *c, const ra_case_spec *spec)
{
    if (c->op || c->tensors.n || c->params.n)
        RA_ERROR("gen bigdn: the case to fill is not empty", RA_EINVAL);
    const int kind = ra_bigdn_kind_of(spec->op);
    if (kind < 0)
        RA_ERRORF(RA_EINVAL, "gen bigdn: op '%s' is not bigdn or bigdn.core", spec->op);
    const char *name =
        spec->regime[0] && strcmp(spec->regime, "-") != 0 ? spec->regime : ra_bigdn_regimes[0].name;
    const regime *rg = NULL;
    for (size_t i = 0; ra_bigdn_regimes[i].name; i++)
        if (strcmp(ra_bigdn_regimes[i].name, name) == 0)
            rg = &regimes[i];
    if (!rg)
        RA_ERRORF(RA_EINVAL,
                  "gen bigdn: unknown regime '%s' (recaudit list regimes shows the known ones)",
                  name);
    ra_bigdn_shape s;
    /* the core's features need the RoPE pairs too */
    RA_TRY(ra_bigdn_shape_parse(&s, RA_BIGDN_FULL, spec->shape));
    ra_dtype dt;
    RA_TRY(ra_dtype_parse(&dt, spec->dtype));
    const double k_scale = ra_bigdn_default_k_scale(&s);
    char text[160];
    ra_bigdn_shape_format(text, sizeof text, &s);
    RA_TRY(ra_case_set_op(c, ra_bigdn_op_name((ra_bigdn_kind)kind)));
    RA_TRY(ra_kv_set(&c->params, "shape", text));
    RA_TRY(ra_kv_set(&c->params, "dtype", ra_dtype_name(dt)));
    RA_TRY(ra_kv_set(&c->params, "regime", name));
    RA_TRY(ra_kv_setf(&c->params, "seed", "%llu", spec->seed));
    if (kind == RA_BIGDN_FULL)
        RA_TRY(ra_kv_setf(&c->params, "k_scale", "%.17g", k_scale));

    const ra_dtype st = dt == RA_F64 ? RA_F64 : RA_F32;
    const uint64_t seed = spec->seed;
    const int64_t N = s.F * s.S, qkv_sh[5] = {s.B, N, 3, s.H, s.D}, tok[4] = {s.B, N, s.H, s.D},
                  bsh[4] = {s.B, s.H, s.F, s.S}, gsh[3] = {s.B, s.H, s.F}, wsh[1] = {s.H * s.D},
                  tab[2] = {N, s.D};
    /* The raw tensors go into c itself for bigdn, into a scratch case for
       the core (same streams: the same seed gives the same layer). */
    ra_case scratch;
    ra_case_init(&scratch);
    ra_case *raw = kind == RA_BIGDN_FULL ? c : &scratch;
    const ra_dtype raw_dt = kind == RA_BIGDN_FULL ? dt : st;
    const ra_draw xd = {RA_DRAW_NORMAL, rg->x_sd, 0, 0};
    const ra_draw wd = {RA_DRAW_SHIFTED_NORMAL, 0.1, 0, 1.0};
    ra_status e = ra_gen_add_tensor(raw, "qkv", raw_dt, 5, qkv_sh, seed, xd);
    if (e == RA_OK && rg->bf16) {
        ra_tensor *q = ra_tensors_find(&raw->tensors, "qkv");
        for (int64_t i = 0; i < q->numel; i++)
            ra_tensor_set(q, i, ra_round_to_dtype(ra_tensor_get(q, i), RA_BF16));
    }
    if (kind == RA_BIGDN_FULL) {
        if (e == RA_OK)
            e = ra_gen_add_tensor(c, "beta", st, 4, bsh, seed,
                                  (ra_draw){RA_DRAW_UNIFORM, 0, 0, rg->beta_hi});
        if (e == RA_OK)
            e = ra_gen_add_tensor(c, "decay", st, 3, gsh, seed,
                                  (ra_draw){RA_DRAW_UNIFORM, rg->g_lo, 0, rg->g_hi});
    }
    if (e == RA_OK)
        e = ra_gen_add_tensor(raw, "q_norm_w", st, 1, wsh, seed, wd);
    if (e == RA_OK)
        e = ra_gen_add_tensor(raw, "k_norm_w", st, 1, wsh, seed, wd);
    ra_tensor *ct = NULL, *sn = NULL;
    if (e == RA_OK)
        e = ra_tensors_new(&raw->tensors, &ct, "rope_cos", st, 2, tab);
    if (e == RA_OK)
        e = ra_tensors_new(&raw->tensors, &sn, "rope_sin", st, 2, tab);
    if (e == RA_OK)
        e = rope_tables(ct, sn, &s, seed);
    if (e == RA_OK && kind == RA_BIGDN_CORE) {
        e = core_features(c, raw, &s, dt, k_scale);
        if (e == RA_OK)
            e = ra_gen_add_tensor(c, "beta", st, 4, bsh, seed,
                                  (ra_draw){RA_DRAW_UNIFORM, 0, 0, rg->beta_hi});
        if (e == RA_OK)
            e = ra_gen_add_tensor(c, "decay", st, 3, gsh, seed,
                                  (ra_draw){RA_DRAW_UNIFORM, rg->g_lo, 0, rg->g_hi});
    }
    ra_case_clear(&scratch);
    if (e == RA_OK)
        e = ra_gen_add_tensor(c, "dout", dt, 4, tok, seed,
                              (ra_draw){RA_DRAW_NORMAL, rg->x_sd, 0, 0});
    return e;
}
