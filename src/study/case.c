/* What the studies share with the audit: generated cases, cached references, variant runs, metrics.
 */

/*
 * A study point is "variant v on case c, metric m of tensor t against the
 * certified reference".  These helpers are the audit's own steps
 * (ra_case_spec_generate, ra_ref_compute through the cache,
 * ra_variant_execute, ra_metrics_compute) without gates or verdict rows,
 * so a study measures exactly what `recaudit audit` would, and a reference
 * is computed once per case over every study that asks for it.  Variants
 * run in process: studies run the suite's own rows (or rows a study makes
 * from a registered row's configuration), not plugins.
 */

#include "study/study.h"

#include <string.h>

#include "audit/audit.h"

void ra_study_case_clear(ra_study_case *sc)
{
    ra_case_clear(&sc->c);
    ra_case_clear(&sc->ref);
}

static ra_status set_list(ra_case_spec *s, const ra_op *op, const char *list, int flags)
{
    while (list && *list) {
        size_t n = strcspn(list, ",");
        char item[RA_SPEC_PARAMS_MAX];
        if (n >= sizeof item)
            RA_ERRORF(RA_EINVAL, "study: %s list item too long", flags ? "flag" : "parameter");
        memcpy(item, list, n);
        item[n] = '\0';
        if (n)
            RA_TRY(flags ? ra_case_spec_set_flag(s, op, item)
                         : ra_case_spec_set_param(s, op, item));
        list += n;
        if (*list == ',')
            list++;
    }
    return RA_OK;
}

ra_status ra_study_case_make(ra_study_case *sc, ra_study_ctx *ctx, const char *op_name,
                             const char *shape, const char *regime, const char *dtype,
                             unsigned long long seed, const char *flags, const char *params,
                             int bwd)
{
    memset(sc, 0, sizeof *sc);
    ra_case_init(&sc->c);
    ra_case_init(&sc->ref);
    const ra_op *op = ra_op_find(op_name);
    if (!op)
        RA_ERRORF(RA_ENOTFOUND, "study: unknown operation '%s'", op_name ? op_name : "(null)");
    ra_case_spec *s = &sc->spec;
    ra_case_spec_init(s);
    snprintf(s->op, sizeof s->op, "%s", op->name);
    if ((size_t)snprintf(s->shape, sizeof s->shape, "%s", shape) >= sizeof s->shape ||
        (size_t)snprintf(s->regime, sizeof s->regime, "%s",
                         regime ? regime : op->regimes[0].name) >= sizeof s->regime ||
        (size_t)snprintf(s->dtype, sizeof s->dtype, "%s", dtype ? dtype : "f32") >= sizeof s->dtype)
        RA_ERRORF(RA_EINVAL, "study: shape, regime or dtype too long (%s, %s, %s)", shape,
                  regime ? regime : "-", dtype ? dtype : "-");
    s->seed = seed;
    s->has_seed = 1;
    s->bwd = bwd;
    RA_TRY(set_list(s, op, flags, 1));
    RA_TRY(set_list(s, op, params, 0));
    RA_TRY(ra_case_spec_check(s, "study"));
    ra_status st = ra_case_spec_generate(&sc->c, s);
    if (st == RA_OK && !bwd)
        ra_case_drop_role(&sc->c, op, RA_ROLE_COTANGENT);
    if (st == RA_OK)
        st = ra_study_case_reference(sc, ctx);
    if (st != RA_OK)
        ra_study_case_clear(sc);
    return st;
}

ra_status ra_study_case_reference(ra_study_case *sc, ra_study_ctx *ctx)
{
    const ra_case_spec *s = &sc->spec;
    ra_ref_opts ro = ctx->ref;
    ro.grads = s->bwd;
    if (ctx->threads > 0)
        ro.threads = ctx->threads;
    char what[RA_SPEC_SHAPE_MAX + RA_SPEC_REGIME_MAX + 64];
    snprintf(what, sizeof what, "%s %s %s seed %llu", s->op, s->shape, s->regime, s->seed);
    ra_case_clear(&sc->ref);
    ra_case_init(&sc->ref);
    ra_status st = ra_ref_compute(&sc->ref, &sc->c, &ro, what);
    if (st == RA_OK) {
        const char *cache = ra_case_param(&sc->ref, "cache");
        if (cache && strcmp(cache, "hit") == 0)
            ctx->ref_hits++;
        else
            ctx->ref_computed++;
        char why[512];
        if (!ra_ref_usable(&sc->ref, 0, why, sizeof why)) {
            RA_REPORTF(RA_ENUMERIC, "study: reference of %s: %s", what, why);
            st = RA_ENUMERIC;
        }
    }
    return st;
}

ra_status ra_study_run(ra_case *result, const ra_study_ctx *ctx, const ra_variant *v,
                       const ra_study_case *sc)
{
    ra_run run = {.threads = ctx->threads, .device = 0, .elapsed_ms = -1, .user = NULL};
    return ra_variant_execute(result, v, &sc->c, sc->spec.bwd, &run);
}

ra_status ra_study_measure(ra_metrics *m, const ra_case *result, const ra_study_case *sc,
                           const char *tensor)
{
    const ra_tensor *y = ra_tensors_find(&result->tensors, tensor);
    const ra_tensor *z = ra_tensors_find(&sc->ref.tensors, tensor);
    if (!y || !z)
        RA_ERRORF(RA_ENOTFOUND, "study: tensor '%s' missing from the %s", tensor,
                  !y ? "variant's result" : "reference");
    return ra_metrics_compute(m, y, z, y->dtype);
}

ra_status ra_study_variant(const ra_variant **out, const ra_study_ctx *ctx, const char *name)
{
    *out = ra_registry_find(ctx->registry, name);
    if (!*out)
        RA_ERRORF(RA_ENOTFOUND, "study: no variant '%s' registered", name);
    return RA_OK;
}
