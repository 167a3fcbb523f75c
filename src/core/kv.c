/* Ordered string maps (case parameters, file metadata). */
#include "core/kv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A small ordered map: keys keep their insertion position (metadata is
 * written back in the order it was read), lookups are linear, which is
 * what a few dozen parameters need.  Filling a map from a source whose
 * keys are already distinct (a parsed header, another map) must not pay a
 * lookup per key, which would make reading a file with n metadata keys
 * O(n^2): ra_kv_append skips the lookup, and ra_kv_copy into an empty map
 * uses it.
 */

void ra_kv_init(ra_kv *kv)
{
    kv->n = kv->cap = 0;
    kv->keys = kv->vals = NULL;
}

void ra_kv_clear(ra_kv *kv)
{
    for (size_t i = 0; i < kv->n; i++) {
        free(kv->keys[i]);
        free(kv->vals[i]);
    }
    free(kv->keys);
    free(kv->vals);
    ra_kv_init(kv);
}

static ptrdiff_t kv_index(const ra_kv *kv, const char *key)
{
    for (size_t i = 0; i < kv->n; i++)
        if (strcmp(kv->keys[i], key) == 0)
            return (ptrdiff_t)i;
    return -1;
}

static ra_status kv_add(ra_kv *kv, const char *key, char *v);

ra_status ra_kv_set(ra_kv *kv, const char *key, const char *val)
{
    char *v = strdup(val);
    if (!v)
        RA_ERROR("out of memory", RA_ENOMEM);
    ptrdiff_t at = kv_index(kv, key);
    if (at >= 0) {
        free(kv->vals[at]);
        kv->vals[at] = v;
        return RA_OK;
    }
    return kv_add(kv, key, v);
}

ra_status ra_kv_append(ra_kv *kv, const char *key, const char *val)
{
    char *v = strdup(val);
    if (!v)
        RA_ERROR("out of memory", RA_ENOMEM);
    return kv_add(kv, key, v);
}

/* Adds key (absent) with the value v (taken, freed on failure). */
static ra_status kv_add(ra_kv *kv, const char *key, char *v)
{
    if (kv->n == kv->cap) {
        size_t cap = kv->cap ? 2 * kv->cap : 8;
        char **k = realloc(kv->keys, cap * sizeof *k);
        if (k)
            kv->keys = k;
        char **vv = k ? realloc(kv->vals, cap * sizeof *vv) : NULL;
        if (!vv) {
            free(v);
            RA_ERROR("out of memory", RA_ENOMEM);
        }
        kv->vals = vv;
        kv->cap = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(v);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    kv->keys[kv->n] = k;
    kv->vals[kv->n] = v;
    kv->n++;
    return RA_OK;
}

ra_status ra_kv_setf(ra_kv *kv, const char *key, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        RA_ERRORF(RA_EINVAL, "metadata value for '%s' too long", key);
    return ra_kv_set(kv, key, buf);
}

const char *ra_kv_get(const ra_kv *kv, const char *key)
{
    ptrdiff_t at = kv_index(kv, key);
    return at >= 0 ? kv->vals[at] : NULL;
}

int ra_kv_remove(ra_kv *kv, const char *key)
{
    ptrdiff_t at = kv_index(kv, key);
    if (at < 0)
        return 0;
    free(kv->keys[at]);
    free(kv->vals[at]);
    size_t tail = kv->n - (size_t)at - 1;
    memmove(kv->keys + at, kv->keys + at + 1, tail * sizeof *kv->keys);
    memmove(kv->vals + at, kv->vals + at + 1, tail * sizeof *kv->vals);
    kv->n--;
    return 1;
}

ra_status ra_kv_copy(ra_kv *dst, const ra_kv *src)
{
    if (dst->n == 0) {
        for (size_t i = 0; i < src->n; i++)
            RA_TRY(ra_kv_append(dst, src->keys[i], src->vals[i]));
        return RA_OK;
    }
    for (size_t i = 0; i < src->n; i++)
        RA_TRY(ra_kv_set(dst, src->keys[i], src->vals[i]));
    return RA_OK;
}
