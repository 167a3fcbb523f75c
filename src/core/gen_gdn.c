/* Case generation for the gated delta rule: shapes and input regimes. */
#include "core/gen_gdn.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/gen_fill.h"

/*
 * Each regime is a row of one table: how q/k, the gate g and the scales of
 * v and h0 are drawn.  Every tensor is drawn from its own stream
 * ra_rng_new(seed, tensor name), in double, in flat (row-major) order, and
 * rounded once to its storage dtype by ra_tensor_set, so the same seed
 * gives the same q whatever else is generated, on every machine.  Tensors
 * are filled in blocks of whole rows (bounded memory at production sizes);
 * the streams keep the second normal of a pair between blocks, so blocking
 * does not change a single value.
 *
 * large-state: the delta rule keeps S^T k near the recent v, so without
 * h0 the state's entries stay within a few times v's scale (a double
 * sequential forward at B=1, T=64, K=V=16 (f16) peaks at 1.8 to 2.6 times
 * 2^15 over 40 seeds); v is kept at 2^15 so that it stays representable
 * in f16 (about 5% of its entries clip to +-65504 there).  With h0 =
 * 2^17 N(0,1) the state starts far beyond the fp16 range and near-unit
 * gates let it decay only slowly (the suites generate it with h0).
 *
 * raw-keys: q ~ Uniform(0,1) unnormalised; every key row is a
 * Uniform(0,1)^K draw scaled to |k|^2 = RAW_KEY_NORM2 = 1.875.  Positive
 * keys make every k_i . k_j > 0 (cosine about 3/4), so the chunk matrix
 * A = beta k k^T (strictly lower part) is dense and one-signed, its
 * entries up to beta 1.875 cos: (I+A)^-1 alternates and decays slowly, the
 * conditioning issue of fla issue 537.  The norm bound keeps
 * beta |k|^2 < 1.875 (1 + 2^-8) < 2 in every dtype (beta < 1), so each
 * transition I - beta k k^T has eigenvalues in (-1, 1] and spectral norm
 * 1: the state grows at most linearly in T.  Unscaled Uniform(0,1)^K keys
 * have |k|^2 near K/3, beta |k|^2 near K/6 > 2 once K > 12, and the state
 * grows like |1 - beta |k|^2|^T (about 1e203 at K = 64, T = 512): a truth
 * outside every float's range that no model produces (docs/gdn.md).
 *
 * Refusals (RA_EINVAL, with a message): a case that is not empty, an
 * unknown regime, a shape with a non-positive dimension or Hv not a
 * multiple of Hk, an invalid dtype, T a multiple of 64 for `tail`, and a
 * scale parameter that is not a finite number > 0.
 * Sizes that overflow are refused by ra_tensor_new.
 */

typedef enum { KEYS_UNIT_NORMAL, KEYS_UNIFORM, KEYS_ALIGNED } key_kind;
typedef enum { BETA_SIGMOID, BETA_SMALL, BETA_BIG } beta_kind;

/* |k|^2 of raw-keys' keys: beta |k|^2 < 2 with a margin for the rounding
   of k to bf16 (2^-8 relative on |k|^2). */
#define RAW_KEY_NORM2 1.875
typedef enum { GATE_LOGSIGMOID, GATE_ZERO, GATE_NEG_EXP } gate_kind;

typedef struct regime {
    key_kind keys;
    gate_kind gate;
    double gate_mean;  /* GATE_NEG_EXP: g = -Exponential(gate_mean) */
    double v_scale;    /* v = v_scale N(0,1), clipped to the dtype's range */
    double h0_scale;   /* h0 = h0_scale N(0,1) */
    int partial_chunk; /* refuses T % 64 == 0 */
    beta_kind beta;
} regime;

/* The two tables are parallel: row i of one describes row i of the other. */
const ra_op_item ra_gdn_regimes[] = {
    {"default", "q, k ~ N(0,1), each (token, head) row L2-normalised over K; v, do, dht, h0 ~ "
                "N(0,1); g = logsigmoid(N(0,1)); beta = sigmoid(N(0,1))"},
    {"zero-gate", "as default, but g = 0 exactly (no decay: the pure delta rule)"},
    {"strong-decay", "as default, but g = -X, X ~ Exponential(mean 1.8) (NKI test inputs: "
                     "fast forgetting)"},
    {"near-unit", "as default, but g = -X, X ~ Exponential(mean 1e-3) (decay near 1: long "
                  "memory)"},
    {"raw-keys", "as default, but q ~ Uniform(0,1), not normalised, and k ~ Uniform(0,1)^K "
                 "scaled to |k|^2 = 1.875 (positive keys: ill-conditioned (I+A)^-1, fla issue "
                 "537; beta |k|^2 < 2 keeps the state bounded)"},
    {"tail", "default distributions; T must not be a multiple of 64 (a partial last chunk)"},
    {"large-state", "default q, k, beta, do, dht; g = -Exponential(mean 1e-3); v = 2^15 "
                    "N(0,1) clipped to the dtype's finite range; h0 = 2^17 N(0,1): with h0 "
                    "the state starts beyond the fp16 range (65504), without it it peaks "
                    "around it"},
    /* Term-isolating regimes (docs/gdn.md, "Which regime isolates which
       term"): each makes a gradient term that is small in the default
       regime the dominant one. */
    {"small-beta", "as default, but beta ~ Uniform(0.001, 0.02): the state keeps its past "
                   "(h0, decay) and the delta correction is small; isolates the gate terms of "
                   "dg and the state (S~^T k) term of dbeta"},
    {"big-beta",
     "as default, but beta ~ Uniform(0.75, 0.9): each token mostly overwrites its key's "
     "direction; isolates the beta-scaled terms of dk and dg"},
    {"aligned-keys", "as default, but k = q (keys aligned with queries): each output reads the "
                     "direction just written; isolates the rank-1 correction terms of dq and "
                     "dk"},
    {NULL, NULL},
};

static const regime regimes[] = {
    {KEYS_UNIT_NORMAL, GATE_LOGSIGMOID, 0.0, 1.0, 1.0, 0, BETA_SIGMOID},
    {KEYS_UNIT_NORMAL, GATE_ZERO, 0.0, 1.0, 1.0, 0, BETA_SIGMOID},
    {KEYS_UNIT_NORMAL, GATE_NEG_EXP, 1.8, 1.0, 1.0, 0, BETA_SIGMOID},
    {KEYS_UNIT_NORMAL, GATE_NEG_EXP, 1e-3, 1.0, 1.0, 0, BETA_SIGMOID},
    {KEYS_UNIFORM, GATE_LOGSIGMOID, 0.0, 1.0, 1.0, 0, BETA_SIGMOID},
    {KEYS_UNIT_NORMAL, GATE_LOGSIGMOID, 0.0, 1.0, 1.0, 1, BETA_SIGMOID},
    {KEYS_UNIT_NORMAL, GATE_NEG_EXP, 1e-3, 0x1p15, 0x1p17, 0, BETA_SIGMOID},
    {KEYS_UNIT_NORMAL, GATE_LOGSIGMOID, 0.0, 1.0, 1.0, 0, BETA_SMALL},
    {KEYS_UNIT_NORMAL, GATE_LOGSIGMOID, 0.0, 1.0, 1.0, 0, BETA_BIG},
    {KEYS_ALIGNED, GATE_LOGSIGMOID, 0.0, 1.0, 1.0, 0, BETA_SIGMOID},
};

_Static_assert(sizeof regimes / sizeof regimes[0] + 1 ==
                   sizeof ra_gdn_regimes / sizeof ra_gdn_regimes[0],
               "regime tables out of step");

const ra_op_item ra_gdn_flags[] = {
    {"h0", "also draw an initial state h0"},
    {"l2norm", "set l2norm=true: the kernel L2-normalises q and k"},
    {"no-dht", "draw no dht (gradients as with dht = 0, as training has no final-state "
               "cotangent)"},
    {NULL, NULL},
};

/* The axis each regime row sets when it is a component of a composite
   regime A+B+...: the inputs it changes from default's. */
typedef enum { AX_NONE, AX_GATE, AX_KEYS, AX_TAIL, AX_MAG, AX_BETA } axis;
static const axis axes[] = {AX_NONE, AX_GATE, AX_GATE, AX_GATE, AX_KEYS,
                            AX_TAIL, AX_MAG,  AX_BETA, AX_BETA, AX_KEYS};
_Static_assert(sizeof axes / sizeof axes[0] == sizeof regimes / sizeof regimes[0],
               "axis table out of step");

static int regime_index(const char *name, size_t len)
{
    for (int i = 0; ra_gdn_regimes[i].name; i++)
        if (strlen(ra_gdn_regimes[i].name) == len &&
            strncmp(ra_gdn_regimes[i].name, name, len) == 0)
            return i;
    return -1;
}

/*
 * The regime name into *out: one row of the table, or a composite
 * A+B+... of rows that set different axes (gate, keys, tail, magnitude,
 * beta), written in the table's order (one name per set of inputs): it
 * draws default's inputs with each component's axis replaced by that
 * component's.  In a composite large-state sets only the magnitudes of v
 * and h0 (alone it also has near-unit gates), so default+large-state is
 * default's gates at large-state's magnitudes; default may only come
 * first.  Errors (reported, -1): an unknown component, default after the
 * first, two components of one axis, components out of order.
 */
static int find_regime(regime *out, const char *name)
{
    if (!strchr(name, '+')) {
        int i = regime_index(name, strlen(name));
        if (i < 0) {
            RA_REPORTF(RA_EINVAL,
                       "gen gdn: unknown regime '%s' (recaudit list regimes shows the known ones)",
                       name);
            return -1;
        }
        *out = regimes[i];
        return 0;
    }
    *out = regimes[0];
    unsigned used = 0;
    int last = 0;
    for (const char *p = name;;) {
        size_t n = strcspn(p, "+");
        int i = regime_index(p, n);
        if (i == 0 && p == name) { /* default+...: default's inputs, then the rest */
            p += n + 1;
            continue;
        }
        if (i <= 0 || i <= last || (used & (1u << axes[i]))) {
            RA_REPORTF(RA_EINVAL,
                       "gen gdn: regime '%s': component '%.*s' is %s (a composite joins "
                       "regimes other than default that set different inputs, in the order of "
                       "'recaudit list regimes')",
                       name, (int)n, p,
                       i < 0       ? "unknown"
                       : i == 0    ? "default after the first"
                       : i <= last ? "out of order"
                                   : "a second one of its axis");
            return -1;
        }
        used |= 1u << axes[i];
        last = i;
        const regime *c = &regimes[i];
        switch (axes[i]) {
        case AX_GATE:
            out->gate = c->gate, out->gate_mean = c->gate_mean;
            break;
        case AX_KEYS:
            out->keys = c->keys;
            break;
        case AX_TAIL:
            out->partial_chunk = 1;
            break;
        case AX_MAG:
            out->v_scale = c->v_scale, out->h0_scale = c->h0_scale;
            break;
        case AX_BETA:
            out->beta = c->beta;
            break;
        case AX_NONE:
            break;
        }
        if (!p[n])
            break;
        p += n + 1;
    }
    return 0;
}

static const char *regime_name(const ra_case_spec *spec)
{
    return spec->regime[0] && strcmp(spec->regime, "-") != 0 ? spec->regime : "default";
}

static ra_status check_regime(const ra_gdn_shape *s, const char *name, const regime *rg)
{
    if (rg->partial_chunk && s->T % 64 == 0)
        RA_ERRORF(RA_EINVAL,
                  "gen gdn: regime '%s' needs T not a multiple of 64 (a partial last chunk), "
                  "got T=%lld",
                  name, (long long)s->T);
    return RA_OK;
}

/* The scale parameter, when the spec sets one, is a finite number > 0. */
static ra_status check_scale(const ra_case_spec *spec)
{
    char buf[RA_SPEC_PARAMS_MAX];
    const char *text = ra_case_spec_param(buf, sizeof buf, spec, "scale");
    if (!text)
        return RA_OK;
    char *end;
    errno = 0;
    double x = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(x) || !(x > 0))
        RA_ERRORF(RA_EINVAL,
                  "gen gdn: parameter scale='%s' must be a finite number > 0 (the output "
                  "scale; absent: K^-1/2)",
                  text);
    return RA_OK;
}

ra_status ra_gdn_spec_check(const ra_case_spec *spec)
{
    const char *name = regime_name(spec);
    regime r;
    if (find_regime(&r, name) < 0)
        return RA_EINVAL;
    const regime *rg = &r;
    ra_gdn_shape s;
    RA_TRY(ra_gdn_shape_parse(&s, spec->shape));
    RA_TRY(check_regime(&s, name, rg));
    return check_scale(spec);
}

ra_status ra_gdn_generate(ra_case *c, const ra_case_spec *spec)
{
    if (c->op || c->tensors.n || c->params.n)
        RA_ERROR("gen gdn: the case to fill is not empty", RA_EINVAL);
    const char *name = regime_name(spec);
    regime r;
    if (find_regime(&r, name) < 0)
        return RA_EINVAL;
    const regime *rg = &r;
    ra_gdn_shape shape;
    RA_TRY(ra_gdn_shape_parse(&shape, spec->shape));
    RA_TRY(check_regime(&shape, name, rg));
    RA_TRY(check_scale(spec));
    ra_dtype dtype;
    RA_TRY(ra_dtype_parse(&dtype, spec->dtype));

    const ra_gdn_shape *s = &shape;
    char text[160];
    ra_gdn_shape_format(text, sizeof text, s);
    RA_TRY(ra_case_set_op(c, "gdn"));
    RA_TRY(ra_kv_set(&c->params, "shape", text));
    RA_TRY(ra_kv_set(&c->params, "dtype", ra_dtype_name(dtype)));
    RA_TRY(ra_kv_set(&c->params, "regime", name));
    RA_TRY(ra_kv_setf(&c->params, "seed", "%llu", spec->seed));
    if (spec->flags & RA_GDN_FLAG_L2NORM)
        RA_TRY(ra_kv_set(&c->params, "l2norm", "true"));

    const ra_dtype dt = dtype, st = dtype == RA_F64 ? RA_F64 : RA_F32;
    const int64_t qk[4] = {s->B, s->T, s->Hk, s->K}, vv[4] = {s->B, s->T, s->Hv, s->V},
                  gate[3] = {s->B, s->T, s->Hv}, state[4] = {s->B, s->Hv, s->K, s->V};
    /* With l2norm the kernel normalises q and k itself: they are drawn
       unnormalised (N(0,1), |k| near sqrt(K)), or a wrong l2norm backward
       would see n = 1 and pass. */
    const int64_t unit = spec->flags & RA_GDN_FLAG_L2NORM ? 0 : s->K;
    const ra_draw queries = rg->keys == KEYS_UNIFORM ? (ra_draw){RA_DRAW_UNIFORM01, 0.0, 0, 0}
                                                     : (ra_draw){RA_DRAW_NORMAL, 1.0, unit, 0};
    const ra_draw keys = rg->keys == KEYS_UNIFORM
                             ? (ra_draw){RA_DRAW_UNIFORM01, 0.0, s->K, sqrt(RAW_KEY_NORM2)}
                             : queries;
    ra_draw g = {RA_DRAW_LOGSIGMOID, 0.0, 0, 0};
    switch (rg->gate) {
    case GATE_LOGSIGMOID:
        break;
    case GATE_ZERO:
        g = (ra_draw){RA_DRAW_ZERO, 0.0, 0, 0};
        break;
    case GATE_NEG_EXP:
        g = (ra_draw){RA_DRAW_NEG_EXP, rg->gate_mean, 0, 0};
        break;
    }
    const uint64_t seed = spec->seed;
    RA_TRY(ra_gen_add_tensor(c, "q", dt, 4, qk, seed, queries));
    RA_TRY(ra_gen_add_tensor(c, "k", dt, 4, qk, seed, keys));
    if (rg->keys == KEYS_ALIGNED) {
        const ra_tensor *q = ra_tensors_find(&c->tensors, "q");
        ra_tensor *k = ra_tensors_find(&c->tensors, "k");
        for (int64_t i = 0; i < k->numel; i++)
            ra_tensor_set(k, i, ra_tensor_get(q, i));
    }
    RA_TRY(ra_gen_add_tensor(c, "v", dt, 4, vv, seed,
                             (ra_draw){RA_DRAW_NORMAL, rg->v_scale, 0, 0}));
    RA_TRY(ra_gen_add_tensor(c, "g", st, 3, gate, seed, g));
    const ra_draw betas = rg->beta == BETA_SMALL ? (ra_draw){RA_DRAW_UNIFORM, 0.001, 0, 0.02}
                          : rg->beta == BETA_BIG ? (ra_draw){RA_DRAW_UNIFORM, 0.75, 0, 0.9}
                                                 : (ra_draw){RA_DRAW_SIGMOID, 0.0, 0, 0};
    RA_TRY(ra_gen_add_tensor(c, "beta", st, 3, gate, seed, betas));
    if (spec->flags & RA_GDN_FLAG_H0)
        RA_TRY(ra_gen_add_tensor(c, "h0", st, 4, state, seed,
                                 (ra_draw){RA_DRAW_NORMAL, rg->h0_scale, 0, 0}));
    RA_TRY(ra_gen_add_tensor(c, "do", dt, 4, vv, seed, (ra_draw){RA_DRAW_NORMAL, 1.0, 0, 0}));
    if (!(spec->flags & RA_GDN_FLAG_NO_DHT))
        RA_TRY(
            ra_gen_add_tensor(c, "dht", st, 4, state, seed, (ra_draw){RA_DRAW_NORMAL, 1.0, 0, 0}));
    return RA_OK;
}
