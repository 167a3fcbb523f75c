/* Reference cache: keys (XXH3-128), verified lookups, atomic stores. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/case.h"
#include "core/io.h"
#include "ref/refop.h"

/*
 * A reference is a pure function of (op, parameters, input tensors,
 * precision options), so its key hashes exactly those: a format tag (bumped
 * whenever a reference algorithm changes its results), the op, the
 * parameters sorted by key, the tensors sorted by name (name, dtype, shape,
 * raw bytes) and the options prec, effective check_prec, prec_cap,
 * min_bits, certify and grads.  Each field enters as a length-prefixed
 * byte string, so no two different inputs concatenate to the same stream.
 * threads, progress and the cache settings do not change a result and are
 * not hashed.
 *
 * Entries are <dir>/<key>.safetensors.  A file found there is trusted only
 * after it parses, has the op, cache_key equal to the key, exactly the
 * expected tensors (f64, expected shapes), and a content_hash that matches
 * its data, so a truncated, tampered, or colliding file is recomputed and
 * overwritten (the caller stores over it), with a note through the error
 * handler.  Stores go through ra_case_save, which writes path.tmp.<pid>
 * and renames it: readers never see a partial entry, and two processes
 * storing the same key at once both leave a complete file.
 */

#define CACHE_FORMAT "recaudit-ref-cache/1"

static void hash_bytes(XXH3_state_t *h, const void *p, size_t n)
{
    uint64_t len = n; /* host order: keys are per-machine */
    XXH3_128bits_update(h, &len, sizeof len);
    XXH3_128bits_update(h, p, n);
}

static void hash_str(XXH3_state_t *h, const char *s) { hash_bytes(h, s, strlen(s)); }

static void hash_num(XXH3_state_t *h, const char *name, long v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s=%ld", name, v);
    hash_str(h, buf);
}

static void digest_hex(char hex[33], XXH3_state_t *h)
{
    XXH128_hash_t d = XXH3_128bits_digest(h);
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)d.high64, (unsigned long long)d.low64);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void hash_tensor(XXH3_state_t *h, const ra_tensor *t)
{
    hash_str(h, t->name);
    hash_str(h, ra_dtype_st_name(t->dtype));
    int64_t dims[RA_MAX_DIMS + 1];
    dims[0] = t->ndim;
    for (int i = 0; i < t->ndim; i++)
        dims[i + 1] = t->shape[i];
    hash_bytes(h, dims, (size_t)(t->ndim + 1) * sizeof dims[0]);
    hash_bytes(h, t->data, t->nbytes);
}

void ra_ref_cache_key(char hex[33], const ra_case *c, const ra_ref_opts *o)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h) { /* no memory for 600 bytes: a key nothing can match */
        snprintf(hex, 33, "%032d", 0);
        return;
    }
    XXH3_128bits_reset(h);
    hash_str(h, CACHE_FORMAT);
    hash_str(h, c->op ? c->op : "");
    /* Sorted views (pointers only) of the parameters and tensors. */
    size_t np = c->params.n, nt = c->tensors.n;
    const char **keys = malloc((np + 1) * sizeof *keys);
    const char **names = malloc((nt + 1) * sizeof *names);
    if (keys && names) {
        for (size_t i = 0; i < np; i++)
            keys[i] = c->params.keys[i];
        qsort(keys, np, sizeof *keys, cmp_str_ptr);
        for (size_t i = 0; i < np; i++) {
            hash_str(h, keys[i]);
            hash_str(h, ra_kv_get(&c->params, keys[i]));
        }
        for (size_t i = 0; i < nt; i++)
            names[i] = c->tensors.items[i]->name;
        qsort(names, nt, sizeof *names, cmp_str_ptr);
        for (size_t i = 0; i < nt; i++)
            hash_tensor(h, ra_tensors_find(&c->tensors, names[i]));
    } else
        hash_str(h, "(out of memory: unordered)"); /* still deterministic per input */
    free(keys);
    free(names);
    hash_num(h, "prec", (long)o->prec);
    hash_num(h, "check_prec", (long)(o->check_prec ? o->check_prec : 2 * o->prec));
    hash_num(h, "prec_cap", (long)o->prec_cap);
    hash_num(h, "min_bits", o->min_bits);
    hash_num(h, "certify", o->certify != 0);
    hash_num(h, "grads", o->grads != 0);
    digest_hex(hex, h);
    XXH3_freeState(h);
}

void ra_ref_content_hash(char hex[33], const ra_tensors *ts)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h) {
        snprintf(hex, 33, "%032d", 0);
        return;
    }
    XXH3_128bits_reset(h);
    hash_str(h, CACHE_FORMAT);
    for (size_t i = 0; i < ts->n; i++)
        hash_tensor(h, ts->items[i]);
    digest_hex(hex, h);
    XXH3_freeState(h);
}

ra_status ra_ref_cache_dir(char **out, const ra_ref_opts *o)
{
    *out = NULL;
    const char *env = getenv("RECAUDIT_CACHE"), *home = getenv("HOME");
    char *d = NULL;
    if (o->cache_dir && *o->cache_dir)
        d = strdup(o->cache_dir);
    else if (env && *env)
        d = strdup(env);
    else if (home && *home) {
        size_t n = strlen(home) + sizeof "/.cache/recaudit";
        if ((d = malloc(n)))
            snprintf(d, n, "%s/.cache/recaudit", home);
    } else
        RA_ERROR("reference cache: neither $RECAUDIT_CACHE nor $HOME is set (use --no-cache)",
                 RA_EINVAL);
    if (!d)
        RA_ERROR("out of memory", RA_ENOMEM);
    *out = d;
    return RA_OK;
}

/* mkdir -p */
static ra_status make_dirs(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        RA_ERROR("out of memory", RA_ENOMEM);
    for (char *s = p + 1;; s++) {
        int end = *s == '\0';
        if (*s == '/' || end) {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                free(p);
                RA_ERRORF(RA_EIO, "reference cache: cannot create directory '%s': %s", dir,
                          strerror(e));
            }
            if (end)
                break;
            *s = '/';
        }
    }
    free(p);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        RA_ERRORF(RA_EIO, "reference cache: '%s' is not a directory", dir);
    return RA_OK;
}

static char *entry_path(const char *dir, const char *key)
{
    size_t n = strlen(dir) + strlen(key) + sizeof "/.safetensors";
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%s.safetensors", dir, key);
    return path;
}

/* Why an entry is unusable, or NULL. */
static const char *verify(const ra_case *e, const char *key, const char *op,
                          const ra_ref_outs *layout, char *why, size_t len)
{
    const char *k = ra_case_param(e, "cache_key");
    if (strcmp(e->op, op) != 0)
        snprintf(why, len, "op is '%s', expected '%s'", e->op, op);
    else if (!k || strcmp(k, key) != 0)
        snprintf(why, len, "its cache_key is '%s'", k ? k : "(absent)");
    else if (e->tensors.n != layout->n)
        snprintf(why, len, "it has %zu tensors, expected %zu", e->tensors.n, layout->n);
    else {
        for (size_t i = 0; i < layout->n; i++) {
            const ra_ref_out *l = &layout->t[i];
            const ra_tensor *t = ra_tensors_find(&e->tensors, l->name);
            if (!t) {
                snprintf(why, len, "tensor '%s' is missing", l->name);
                return why;
            }
            if (t->dtype != RA_F64 || !ra_shape_equal(t->ndim, t->shape, l->ndim, l->shape)) {
                snprintf(why, len, "tensor '%s' has another dtype or shape", l->name);
                return why;
            }
        }
        char h[33];
        const char *stored = ra_case_param(e, "content_hash");
        ra_ref_content_hash(h, &e->tensors);
        if (stored && strcmp(stored, h) == 0)
            return NULL;
        snprintf(why, len, "its data does not match its content_hash");
    }
    return why;
}

ra_status ra_ref_cache_lookup(ra_case *ref, int *hit, int *stale, const char *dir, const char *key,
                              const char *op, const ra_ref_outs *layout)
{
    *hit = *stale = 0;
    ra_case_init(ref);
    char *path = entry_path(dir, key);
    if (!path)
        RA_ERROR("out of memory", RA_ENOMEM);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        free(path);
        return RA_OK;
    }
    char why[256];
    const char *bad = NULL;
    if (ra_case_load(ref, path) != RA_OK)
        bad = "it does not load (see above)";
    else
        bad = verify(ref, key, op, layout, why, sizeof why);
    if (bad) {
        RA_REPORTF(RA_EFORMAT, "note: reference cache entry '%s' is unusable (%s); recomputing it",
                   path, bad);
        ra_case_clear(ref);
        *stale = 1;
    } else
        *hit = 1;
    free(path);
    return RA_OK;
}

ra_status ra_ref_cache_store(const ra_case *ref, const char *dir, const char *key)
{
    const char *k = ra_case_param(ref, "cache_key");
    if (!k || strcmp(k, key) != 0 || !ra_case_param(ref, "content_hash"))
        RA_ERROR("reference cache: result without its cache_key/content_hash", RA_EINTERNAL);
    RA_TRY(make_dirs(dir));
    char *path = entry_path(dir, key);
    if (!path)
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = ra_case_save(ref, path);
    free(path);
    return st;
}
