/* Case generation for the gated linear recurrence: shapes, decay and input regimes. */
#include "core/gen_glr.h"

#include <string.h>

#include "core/gen_fill.h"
#include "core/glr_case.h"

/*
 * The decay of channel s at step t is alpha = exp(-g exp(A_log)) (expneg,
 * HyMo's kernel: Mamba's dt/A parameterisation) or alpha = exp(g A_log)
 * (linear, the seed document's formula).  A regime fixes the distribution
 * of g and of the per-channel rate a = exp(A_log) > 0; under `linear` the
 * generator stores A_log = -a, so that both parameterisations of one seed
 * and regime decay alike (alpha = exp(-g a)) and a case never explodes
 * because of the parameterisation it is written in.
 *
 * hymo: the seed names no test distribution; its kernel is the Mamba-2
 * recurrence, so the recipe is Mamba's: g = softplus(N(0,1)) (dt after
 * softplus), a ~ Uniform(1, 16) (A = -exp(A_log) initialised uniform in
 * [1, 16]), v, b, c, do ~ N(0,1).  -log alpha has mean about 6: fast
 * forgetting, the state holds a few steps.
 * long-memory: g ~ Exponential(mean 1e-3), a ~ Uniform(1, 2): -log alpha
 * about 1.5e-3, memory of several hundred steps; the state grows like the
 * square root of the window, and chunked kernels carry it across many
 * chunks.
 * zero-gate: g = 0, alpha = 1 exactly under both parameterisations: a pure
 * running sum.
 */

const ra_op_item ra_glr_regimes[] = {
    {"hymo", "v, b, c, do ~ N(0,1); g = softplus(N(0,1)); rate a = exp(A_log) ~ U(1,16) "
             "(Mamba's dt/A recipe of HyMo's kernel; linear decay stores A_log = -a)"},
    {"long-memory", "as hymo, but g ~ Exponential(mean 1e-3), a ~ U(1,2): decay about "
                    "1 - 1.5e-3 per step"},
    {"zero-gate", "as hymo, but g = 0: alpha = 1, the state is a running sum"},
    {NULL, NULL},
};

typedef struct regime {
    ra_draw g;
    double a_lo, a_hi;
} regime;

static const regime regimes[] = {
    {{RA_DRAW_SOFTPLUS_NORMAL, 1.0, 0, 0}, 1.0, 16.0},
    {{RA_DRAW_EXP, 1e-3, 0, 0}, 1.0, 2.0},
    {{RA_DRAW_ZERO, 0, 0, 0}, 1.0, 16.0},
};

_Static_assert(sizeof regimes / sizeof regimes[0] + 1 ==
                   sizeof ra_glr_regimes / sizeof ra_glr_regimes[0],
               "regime tables out of step");

const ra_op_item ra_glr_flags[] = {
    {"linear", "set decay=linear: alpha = exp(g A_log) (the seed document's formula)"},
    {NULL, NULL},
};

ra_status ra_glr_generate(ra_case *c, const ra_case_spec *spec)
{
    if (c->op || c->tensors.n || c->params.n)
        RA_ERROR("gen glr: the case to fill is not empty", RA_EINVAL);
    const char *name =
        spec->regime[0] && strcmp(spec->regime, "-") != 0 ? spec->regime : ra_glr_regimes[0].name;
    const regime *rg = NULL;
    for (size_t i = 0; ra_glr_regimes[i].name; i++)
        if (strcmp(ra_glr_regimes[i].name, name) == 0)
            rg = &regimes[i];
    if (!rg)
        RA_ERRORF(RA_EINVAL,
                  "gen glr: unknown regime '%s' (recaudit list regimes shows the known ones)",
                  name);
    ra_glr_shape s;
    RA_TRY(ra_glr_shape_parse(&s, spec->shape));
    ra_dtype dt;
    RA_TRY(ra_dtype_parse(&dt, spec->dtype));
    const int linear = (spec->flags & RA_GLR_FLAG_LINEAR) != 0;
    char text[160];
    ra_glr_shape_format(text, sizeof text, &s);
    RA_TRY(ra_case_set_op(c, "glr"));
    RA_TRY(ra_kv_set(&c->params, "shape", text));
    RA_TRY(ra_kv_set(&c->params, "dtype", ra_dtype_name(dt)));
    RA_TRY(ra_kv_set(&c->params, "regime", name));
    RA_TRY(ra_kv_setf(&c->params, "seed", "%llu", spec->seed));
    RA_TRY(ra_kv_set(&c->params, "decay", linear ? "linear" : "expneg"));

    const ra_dtype st = dt == RA_F64 ? RA_F64 : RA_F32;
    const int64_t vd[4] = {s.B, s.T, s.H, s.D}, bs[4] = {s.B, s.T, s.H, s.S},
                  gate[3] = {s.B, s.T, s.H}, aa[2] = {s.H, s.S};
    const ra_draw normal = {RA_DRAW_NORMAL, 1.0, 0, 0};
    const ra_draw a = {linear ? RA_DRAW_NEG_UNIFORM : RA_DRAW_LOG_UNIFORM, rg->a_lo, 0, rg->a_hi};
    const uint64_t seed = spec->seed;
    RA_TRY(ra_gen_add_tensor(c, "v", dt, 4, vd, seed, normal));
    RA_TRY(ra_gen_add_tensor(c, "b", dt, 4, bs, seed, normal));
    RA_TRY(ra_gen_add_tensor(c, "c", dt, 4, bs, seed, normal));
    RA_TRY(ra_gen_add_tensor(c, "g", st, 3, gate, seed, rg->g));
    RA_TRY(ra_gen_add_tensor(c, "A_log", st, 2, aa, seed, a));
    RA_TRY(ra_gen_add_tensor(c, "do", dt, 4, vd, seed, normal));
    return RA_OK;
}
