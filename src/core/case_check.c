/* Checks every operation's case validator shares: shapes by axis, finiteness by index, KEY=VALUE
 * shapes. */
#include "core/case_check.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"

/* One messages' wording for every operation: a user who met one
   validator's message can read any other's. */

#define SHAPE_MAX_DIM ((int64_t)1 << 31)

ra_status ra_case_check_shape(const ra_tensor *t, int ndim, const int64_t *want,
                              const char *const *axes, const char *what)
{
    char have[128], exp[128];
    ra_shape_format(have, sizeof have, t->ndim, t->shape);
    ra_shape_format(exp, sizeof exp, ndim, want);
    if (t->ndim != ndim)
        RA_ERRORF(RA_EINVAL, "%s: tensor '%s' has shape %s, expected %d dims %s", what, t->name,
                  have, ndim, exp);
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != want[i])
            RA_ERRORF(RA_EINVAL,
                      "%s: tensor '%s' axis %d (%s) is %lld, expected %lld (shape %s, expected %s)",
                      what, t->name, i, axes[i], (long long)t->shape[i], (long long)want[i], have,
                      exp);
    return RA_OK;
}

ra_status ra_case_check_finite(const ra_tensor *t, const char *what)
{
    int64_t i = ra_tensor_find_nonfinite(t);
    if (i < 0)
        return RA_OK;
    char idx[128];
    ra_index_format(idx, sizeof idx, i, t->ndim, t->shape);
    double v = ra_tensor_get(t, i);
    RA_ERRORF(RA_EINVAL, "%s: tensor '%s' element %s is %s", what, t->name, idx,
              isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"));
}

ra_status ra_shape_kv_parse(int64_t *val, int *seen, const char *text, const char *const *keys,
                            int nkeys, const char *expect)
{
    for (int i = 0; i < nkeys; i++)
        val[i] = 0, seen[i] = 0;
    if (!text || !*text)
        RA_ERRORF(RA_EINVAL, "--shape: empty (expected e.g. %s)", expect);
    const char *p = text;
    while (*p) {
        const char *eq = strchr(p, '=');
        const char *comma = strchr(p, ',');
        if (!comma)
            comma = p + strlen(p);
        if (!eq || eq > comma)
            RA_ERRORF(RA_EINVAL, "--shape '%s': field '%.*s' is not KEY=VALUE", text,
                      (int)(comma - p), p);
        int k = -1;
        for (int i = 0; i < nkeys; i++)
            if ((size_t)(eq - p) == strlen(keys[i]) && strncmp(p, keys[i], (size_t)(eq - p)) == 0)
                k = i;
        if (k < 0) {
            char known[128] = "";
            for (int i = 0; i < nkeys; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                         keys[i]);
            RA_ERRORF(RA_EINVAL, "--shape '%s': unknown key '%.*s' (%s)", text, (int)(eq - p), p,
                      known);
        }
        if (seen[k])
            RA_ERRORF(RA_EINVAL, "--shape '%s': key '%s' given twice", text, keys[k]);
        seen[k] = 1;
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || end != comma || errno == ERANGE || v <= 0 || v > SHAPE_MAX_DIM)
            RA_ERRORF(RA_EINVAL, "--shape '%s': %s must be a positive integer, got '%.*s'", text,
                      keys[k], (int)(comma - eq - 1), eq + 1);
        val[k] = v;
        p = *comma ? comma + 1 : comma;
        if (*comma && !*p)
            RA_ERRORF(RA_EINVAL, "--shape '%s': trailing comma", text);
    }
    return RA_OK;
}
