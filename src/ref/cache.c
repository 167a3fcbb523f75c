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
#include "ref_code_version.h"
#include "ref/refop.h"

/*
 * A reference is a pure function of (reference code, op, parameters, input
 * tensors, precision options), so its key hashes exactly those: a format
 * tag, the reference code's version (RA_REF_CODE_VERSION, a checksum of
 * the reference sources generated at build time, so a fix to a reference
 * retires every entry it computed without anyone bumping a number), the
 * op, the parameters sorted by key, the tensors sorted by name (name,
 * dtype, shape, raw bytes) and the options prec, effective check_prec,
 * prec_cap, min_bits, certify and grads.  Each field enters as a byte
 * string prefixed by its length (8 bytes, little-endian), so no two
 * different inputs concatenate to the same stream.  threads, progress and
 * the cache settings do not change a result and are not hashed.
 *
 * The input hash written into every reference (input_hash) is XXH3-64,
 * seed 0, of the case's tensors in that same encoding (their count, then
 * each sorted by name): `check --ref` recomputes it from the case file to
 * tie a reference to the exact inputs it was computed from.
 *
 * Entries are <dir>/<key>.safetensors.  A file found there is trusted only
 * after it parses, has the op, cache_key equal to the key, exactly the
 * expected tensors (f64, expected shapes), and a content_hash that matches
 * its data and its metadata (the certificate included), so a truncated,
 * tampered (tensor or certificate), or colliding file is recomputed and
 * overwritten (the caller stores over it), with a note through the error
 * handler.  Stores go through ra_case_save, which writes path.tmp.<pid>
 * and renames it: readers never see a partial entry, and two processes
 * storing the same key at once both leave a complete file.
 */

#define CACHE_FORMAT "recaudit-ref-cache/2"

/* One XXH3 stream, 64 bits (the input hash) or 128 (keys, content). */
typedef struct hasher {
    XXH3_state_t *s;
    int wide;
} hasher;

static int hasher_start(hasher *h, int wide)
{
    h->wide = wide;
    if (!(h->s = XXH3_createState()))
        return 0;
    if (wide)
        XXH3_128bits_reset(h->s);
    else
        XXH3_64bits_reset(h->s);
    return 1;
}

static void update(hasher *h, const void *p, size_t n)
{
    if (h->wide)
        XXH3_128bits_update(h->s, p, n);
    else
        XXH3_64bits_update(h->s, p, n);
}

/* v as 8 little-endian bytes: the same stream on every host. */
static void hash_u64(hasher *h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    update(h, b, sizeof b);
}

static void hash_bytes(hasher *h, const void *p, size_t n)
{
    hash_u64(h, n);
    update(h, p, n);
}

static void hash_str(hasher *h, const char *s) { hash_bytes(h, s, strlen(s)); }

static void hash_num(hasher *h, const char *name, long v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s=%ld", name, v);
    hash_str(h, buf);
}

static void digest_hex(char hex[33], hasher *h)
{
    XXH128_hash_t d = XXH3_128bits_digest(h->s);
    snprintf(hex, 33, "%016llx%016llx", (unsigned long long)d.high64, (unsigned long long)d.low64);
    XXH3_freeState(h->s);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* name, dtype, ndim, dims, bytes (the data as stored: little-endian). */
static void hash_tensor(hasher *h, const ra_tensor *t)
{
    hash_str(h, t->name);
    hash_str(h, ra_dtype_st_name(t->dtype));
    hash_u64(h, (uint64_t)t->ndim);
    for (int i = 0; i < t->ndim; i++)
        hash_u64(h, (uint64_t)t->shape[i]);
    hash_bytes(h, t->data, t->nbytes);
}

/* The tensors sorted by name.  Without memory for the sorted view they go
   in file order after a tag (still deterministic per input) and the
   status is RA_ENOMEM, for callers that need the canonical order. */
static ra_status hash_tensors_sorted(hasher *h, const ra_tensors *ts)
{
    const char **names = malloc((ts->n + 1) * sizeof *names);
    if (!names) {
        hash_str(h, "(out of memory: unordered)");
        for (size_t i = 0; i < ts->n; i++)
            hash_tensor(h, ts->items[i]);
        return RA_ENOMEM;
    }
    for (size_t i = 0; i < ts->n; i++)
        names[i] = ts->items[i]->name;
    qsort(names, ts->n, sizeof *names, cmp_str_ptr);
    hash_u64(h, ts->n);
    for (size_t i = 0; i < ts->n; i++)
        hash_tensor(h, ra_tensors_find(ts, names[i]));
    free(names);
    return RA_OK;
}

static int skipped(const char *key, const char *const *skip)
{
    for (const char *const *s = skip; s && *s; s++)
        if (strcmp(key, *s) == 0)
            return 1;
    return 0;
}

/* The parameters sorted by key, leaving out the keys in skip (NULL-ended);
   without memory as hash_tensors_sorted. */
static ra_status hash_params_sorted(hasher *h, const ra_kv *kv, const char *const *skip)
{
    const char **keys = malloc((kv->n + 1) * sizeof *keys);
    if (!keys) {
        hash_str(h, "(out of memory: unordered)");
        for (size_t i = 0; i < kv->n; i++)
            if (!skipped(kv->keys[i], skip)) {
                hash_str(h, kv->keys[i]);
                hash_str(h, kv->vals[i]);
            }
        return RA_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < kv->n; i++)
        if (!skipped(kv->keys[i], skip))
            keys[n++] = kv->keys[i];
    qsort(keys, n, sizeof *keys, cmp_str_ptr);
    hash_u64(h, n);
    for (size_t i = 0; i < n; i++) {
        hash_str(h, keys[i]);
        hash_str(h, ra_kv_get(kv, keys[i]));
    }
    free(keys);
    return RA_OK;
}

const char *ra_ref_code_version(void) { return RA_REF_CODE_VERSION; }

void ra_ref_cache_key_for(char hex[33], const ra_case *c, const ra_ref_opts *o,
                          const char *code_version)
{
    hasher h;
    if (!hasher_start(&h, 1)) { /* no memory for 600 bytes: a key nothing can match */
        snprintf(hex, 33, "%032d", 0);
        return;
    }
    hash_str(&h, CACHE_FORMAT);
    hash_str(&h, code_version);
    hash_str(&h, c->op ? c->op : "");
    (void)hash_params_sorted(&h, &c->params, NULL); /* unordered without memory: still a key */
    (void)hash_tensors_sorted(&h, &c->tensors);
    hash_num(&h, "prec", (long)o->prec);
    hash_num(&h, "check_prec", (long)(o->check_prec ? o->check_prec : 2 * o->prec));
    hash_num(&h, "prec_cap", (long)o->prec_cap);
    hash_num(&h, "min_bits", o->min_bits);
    hash_num(&h, "certify", o->certify != 0);
    hash_num(&h, "grads", o->grads != 0);
    digest_hex(hex, &h);
}

void ra_ref_cache_key(char hex[33], const ra_case *c, const ra_ref_opts *o)
{
    ra_ref_cache_key_for(hex, c, o, ra_ref_code_version());
}

ra_status ra_ref_input_hash(char hex[17], const ra_case *c)
{
    hasher h;
    if (!hasher_start(&h, 0))
        RA_ERROR("out of memory", RA_ENOMEM);
    ra_status st = hash_tensors_sorted(&h, &c->tensors);
    if (st == RA_OK)
        snprintf(hex, 17, "%016llx", (unsigned long long)XXH3_64bits_digest(h.s));
    XXH3_freeState(h.s);
    if (st != RA_OK)
        RA_ERROR("out of memory", st);
    return RA_OK;
}

ra_status ra_ref_content_hash(char hex[33], const ra_case *ref)
{
    static const char *const skip[] = {"content_hash", "cache", NULL};
    hasher h;
    if (!hasher_start(&h, 1))
        RA_ERROR("out of memory", RA_ENOMEM);
    hash_str(&h, CACHE_FORMAT);
    hash_str(&h, ref->op ? ref->op : "");
    ra_status st = hash_params_sorted(&h, &ref->params, skip);
    if (hash_tensors_sorted(&h, &ref->tensors) != RA_OK || st != RA_OK) {
        XXH3_freeState(h.s);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    digest_hex(hex, &h);
    return RA_OK;
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
        if (ra_ref_content_hash(h, e) != RA_OK)
            snprintf(why, len, "its content_hash could not be computed (see above)");
        else if (stored && strcmp(stored, h) == 0)
            return NULL;
        else
            snprintf(why, len, "its data or certificate does not match its content_hash");
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
