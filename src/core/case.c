/* Cases: an operation, its string parameters and its named tensors. */
#include "core/case.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/io.h"
#include "core/metrics.h"
#include "recaudit/plugin.h" /* its declarations of the parameter readers must match */

/*
 * Parameters stay strings end to end (they are safetensors metadata); the
 * readers below parse them on use so that a malformed value is reported
 * with its key, never silently replaced by a default.
 */

/* --- cases -------------------------------------------------------------------------- */

void ra_case_init(ra_case *c)
{
    c->op = NULL;
    ra_kv_init(&c->params);
    ra_tensors_init(&c->tensors);
}

void ra_case_clear(ra_case *c)
{
    free(c->op);
    ra_kv_clear(&c->params);
    ra_tensors_clear(&c->tensors);
    ra_case_init(c);
}

ra_status ra_case_set_op(ra_case *c, const char *op)
{
    char *o = strdup(op);
    if (!o)
        RA_ERROR("out of memory", RA_ENOMEM);
    free(c->op);
    c->op = o;
    return RA_OK;
}

const char *ra_case_param(const ra_case *c, const char *key)
{
    return ra_kv_get(&c->params, key);
}

ra_status ra_case_param_double(double *out, const ra_case *c, const char *key, double dflt)
{
    const char *s = ra_case_param(c, key);
    if (!s) {
        *out = dflt;
        return RA_OK;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        RA_ERRORF(RA_EINVAL, "parameter '%s': '%s' is not a finite number", key, s);
    *out = v;
    return RA_OK;
}

ra_status ra_case_param_int(long *out, const ra_case *c, const char *key, long dflt)
{
    const char *s = ra_case_param(c, key);
    if (!s) {
        *out = dflt;
        return RA_OK;
    }
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE)
        RA_ERRORF(RA_EINVAL, "parameter '%s': '%s' is not an integer", key, s);
    *out = v;
    return RA_OK;
}

ra_status ra_case_param_bool(int *out, const ra_case *c, const char *key, int dflt)
{
    const char *s = ra_case_param(c, key);
    if (!s) {
        *out = dflt;
        return RA_OK;
    }
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = 1;
            return RA_OK;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = 0;
            return RA_OK;
        }
    }
    RA_ERRORF(RA_EINVAL, "parameter '%s': '%s' is not a boolean (true/false)", key, s);
}

ra_status ra_case_load(ra_case *c, const char *path)
{
    ra_kv meta;
    ra_kv_init(&meta);
    ra_case_clear(c);
    ra_status st = ra_safetensors_read(&c->tensors, &meta, path);
    if (st != RA_OK)
        goto fail;
    const char *op = ra_kv_get(&meta, "op");
    if (!op) {
        RA_REPORTF(st = RA_EFORMAT, "%s: metadata has no 'op' (not a recaudit case file)", path);
        goto fail;
    }
    const char *fmt = ra_kv_get(&meta, "recaudit_format");
    if (fmt && strcmp(fmt, RA_CASE_FORMAT_VERSION) != 0) {
        RA_REPORTF(st = RA_EFORMAT, "%s: recaudit_format '%s' (this build reads '%s')", path,
                   fmt, RA_CASE_FORMAT_VERSION);
        goto fail;
    }
    if ((st = ra_case_set_op(c, op)) != RA_OK)
        goto fail;
    for (size_t i = 0; i < meta.n; i++) {
        if (strcmp(meta.keys[i], "op") == 0 || strcmp(meta.keys[i], "recaudit_format") == 0)
            continue;
        if ((st = ra_kv_append(&c->params, meta.keys[i], meta.vals[i])) != RA_OK)
            goto fail;
    }
    ra_kv_clear(&meta);
    return RA_OK;
fail:
    ra_kv_clear(&meta);
    ra_case_clear(c);
    return st;
}

ra_status ra_case_save(const ra_case *c, const char *path)
{
    if (!c->op)
        RA_ERRORF(RA_EINVAL, "%s: case has no operation", path);
    /* A parameter under a format key would overwrite it in the metadata. */
    for (size_t i = 0; i < c->params.n; i++)
        if (strcmp(c->params.keys[i], "op") == 0 ||
            strcmp(c->params.keys[i], "recaudit_format") == 0)
            RA_ERRORF(RA_EINVAL, "%s: parameter '%s' is reserved by the case format", path,
                      c->params.keys[i]);
    ra_kv meta;
    ra_kv_init(&meta);
    ra_status st = ra_kv_set(&meta, "op", c->op);
    if (st == RA_OK)
        st = ra_kv_set(&meta, "recaudit_format", RA_CASE_FORMAT_VERSION);
    for (size_t i = 0; st == RA_OK && i < c->params.n; i++)
        st = ra_kv_append(&meta, c->params.keys[i], c->params.vals[i]);
    if (st == RA_OK)
        st = ra_safetensors_write(path, &c->tensors, &meta);
    ra_kv_clear(&meta);
    return st;
}
