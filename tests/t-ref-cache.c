/* Tests of the reference cache: keys, hits, tampered and stale entries. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/io.h"
#include "ref-testutil.h"
#include "ref/ref.h"

/*
 * A hit is recognised by the result's "cache" parameter, which only a
 * verified load from the cache sets to "hit" (a computed result says
 * "miss", "refreshed" or "off"): no timing is involved.  Tampering is done
 * on the file's bytes directly.
 */

static void small_case(ra_case *c, uint64_t seed)
{
    const ra_gdn_shape s = {1, 5, 1, 2, 3, 3};
    tu_ref_case(c, &s, TU_H0 | TU_DO | TU_DHT, seed);
    ck_assert_int_eq(ra_kv_set(&c->params, "regime", "hand"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&c->params, "seed", "7"), RA_OK);
}

static ra_ref_opts opts(const char *cache_dir)
{
    ra_ref_opts o;
    ra_ref_opts_init(&o);
    o.progress = 0;
    o.cache_dir = cache_dir;
    return o;
}

static void entry_path(char *buf, size_t len, const char *d, const ra_case *c, const ra_ref_opts *o)
{
    char key[33];
    ra_ref_cache_key(key, c, o);
    snprintf(buf, len, "%s/%s.safetensors", d, key);
}

/* The same tensors, bit for bit, matched by name. */
static void same_tensors(const ra_case *a, const ra_case *b)
{
    ck_assert_uint_eq(a->tensors.n, b->tensors.n);
    for (size_t i = 0; i < a->tensors.n; i++)
        tu_assert_same_tensor(a->tensors.items[i], tu_t(b, a->tensors.items[i]->name));
}

/* --- keys --------------------------------------------------------------------------------------
 */

START_TEST(special_key)
{
    ra_case a, b;
    small_case(&a, 1);
    ra_ref_opts o = opts(NULL);
    char k0[33], k1[33];
    ra_ref_cache_key(k0, &a, &o);
    ck_assert_uint_eq(strlen(k0), 32);
    for (int i = 0; i < 32; i++)
        ck_assert(strchr("0123456789abcdef", k0[i]));
    /* parameters and tensors in another order: the same key */
    tu_case_init(&b, "gdn");
    ck_assert_int_eq(ra_kv_set(&b.params, "seed", "7"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&b.params, "regime", "hand"), RA_OK);
    for (size_t i = a.tensors.n; i-- > 0;) {
        ra_tensor *t;
        ck_assert_int_eq(ra_tensor_clone(&t, a.tensors.items[i], NULL), RA_OK);
        ck_assert_int_eq(ra_tensors_add(&b.tensors, t), RA_OK);
    }
    ra_ref_cache_key(k1, &b, &o);
    ck_assert_str_eq(k0, k1);
    /* settings that do not change a result: the same key */
    ra_ref_opts o2 = o;
    o2.threads = 3, o2.progress = 1, o2.use_cache = 0, o2.cache_dir = "/elsewhere";
    ra_ref_cache_key(k1, &a, &o2);
    ck_assert_str_eq(k0, k1);
    o2 = o;
    o2.check_prec = 2 * o.prec; /* the default, spelled out */
    ra_ref_cache_key(k1, &a, &o2);
    ck_assert_str_eq(k0, k1);
    /* each thing that changes a result: another key */
    ra_ref_opts var[6];
    for (int i = 0; i < 6; i++)
        var[i] = o;
    var[0].prec = 192, var[1].check_prec = 384, var[2].prec_cap = 2048, var[3].min_bits = 61;
    var[4].certify = 0, var[5].grads = 0;
    for (int i = 0; i < 6; i++) {
        ra_ref_cache_key(k1, &a, &var[i]);
        ck_assert_msg(strcmp(k0, k1) != 0, "option %d does not change the key", i);
    }
    ra_tensor *v = tu_t(&b, "v");
    ((unsigned char *)v->data)[v->nbytes - 1] ^= 1; /* one bit of one input */
    ra_ref_cache_key(k1, &b, &o);
    ck_assert_str_ne(k0, k1);
    ((unsigned char *)v->data)[v->nbytes - 1] ^= 1;
    ck_assert_int_eq(ra_kv_set(&b.params, "l2eps", "1e-6"), RA_OK); /* one more parameter */
    ra_ref_cache_key(k1, &b, &o);
    ck_assert_str_ne(k0, k1);
    ck_assert_int_eq(ra_kv_remove(&b.params, "l2eps"), 1);
    ck_assert_int_eq(ra_kv_set(&b.params, "seed", "8"), RA_OK); /* a parameter's value */
    ra_ref_cache_key(k1, &b, &o);
    ck_assert_str_ne(k0, k1);
    ra_case_clear(&a), ra_case_clear(&b);
}
END_TEST

/* --- hits and misses ----------------------------------------------------------------------------
 */

START_TEST(data_hit)
{
    tu_scratch_setup();
    const char *sub = tu_scratch("nested/cache"); /* created on the first store */
    ra_case c, r1, r2;
    small_case(&c, 2);
    ra_ref_opts o = opts(sub);
    ck_assert_int_eq(ra_ref_compute(&r1, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r1, "cache"), "miss");
    char path[1024];
    entry_path(path, sizeof path, sub, &c, &o);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(tu_count_entries(sub), 1); /* no temporary left behind */
    o.threads = 1;                              /* not part of the key */
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r2, "cache"), "hit");
    same_tensors(&r1, &r2);
    ck_assert_str_eq(ra_case_param(&r1, "cache_key"), ra_case_param(&r2, "cache_key"));
    ck_assert_str_eq(ra_case_param(&r1, "certified_bits.o"),
                     ra_case_param(&r2, "certified_bits.o"));
    ra_case_clear(&r2);
    /* --no-cache: computed, nothing read or written */
    o.use_cache = 0;
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r2, "cache"), "off");
    ck_assert_int_eq(tu_count_entries(sub), 1);
    ra_case_clear(&r2);
    /* $RECAUDIT_CACHE when no directory is given */
    const char *envdir = tu_scratch("env");
    setenv("RECAUDIT_CACHE", envdir, 1);
    o = opts(NULL);
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r2, "cache"), "miss");
    ck_assert_int_eq(tu_count_entries(envdir), 1);
    unsetenv("RECAUDIT_CACHE");
    ra_case_clear(&c), ra_case_clear(&r1), ra_case_clear(&r2);
    tu_scratch_teardown();
}
END_TEST

/* Replace the entry's bytes, recompute: a note, "refreshed", the right
   values, and a rewritten entry that then hits. */
static void tamper_and_check(void (*tamper)(const char *path, const ra_case *c), const char *why)
{
    tu_scratch_setup();
    ra_case c, r1, r2;
    small_case(&c, 3);
    ra_ref_opts o = opts(tu_scratch_dir);
    ck_assert_int_eq(ra_ref_compute(&r1, &c, &o, "c"), RA_OK);
    char path[1024];
    entry_path(path, sizeof path, tu_scratch_dir, &c, &o);
    tamper(path, &c);
    tu_reset();
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r2, "cache"), "refreshed");
    ck_assert_msg(strstr(tu_msg, "unusable") && strstr(tu_msg, path), "%s: note '%s'", why, tu_msg);
    same_tensors(&r1, &r2);
    ra_case_clear(&r2);
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r2, "cache"), "hit");
    ra_case_clear(&c), ra_case_clear(&r1), ra_case_clear(&r2);
    tu_scratch_teardown();
}

static void flip_last_byte(const char *path, const ra_case *c)
{
    (void)c;
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fseek(f, -1, SEEK_END), 0);
    int b = fgetc(f);
    ck_assert_int_eq(fseek(f, -1, SEEK_END), 0);
    fputc(b ^ 0x40, f); /* a data byte of the last tensor */
    fclose(f);
}

static void truncate_file(const char *path, const ra_case *c)
{
    (void)c;
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(truncate(path, sb.st_size / 2), 0);
}

/* A valid entry of another case under this key. */
static void other_case(const char *path, const ra_case *c)
{
    (void)c;
    ra_case other, r;
    small_case(&other, 99);
    ra_ref_opts o = tu_ref_opts();
    ck_assert_int_eq(ra_ref_compute(&r, &other, &o, "other"), RA_OK);
    ra_kv_remove(&r.params, "cache");
    ck_assert_int_eq(ra_case_save(&r, path), RA_OK);
    ra_case_clear(&other), ra_case_clear(&r);
}

/* The right key, the wrong content: data edited and content_hash kept. */
static void edit_data_keep_metadata(const char *path, const ra_case *c)
{
    (void)c;
    ra_case e;
    ra_case_init(&e);
    ck_assert_int_eq(ra_case_load(&e, path), RA_OK);
    ra_tensor *o = tu_t(&e, "o");
    ra_tensor_set(o, 0, ra_tensor_get(o, 0) * 2);
    ck_assert_int_eq(ra_case_save(&e, path), RA_OK);
    ra_case_clear(&e);
}

START_TEST(regress_tampered)
{
    tamper_and_check(flip_last_byte, "flipped data byte");
    tamper_and_check(truncate_file, "truncated file");
    tamper_and_check(other_case, "another case's entry");
    tamper_and_check(edit_data_keep_metadata, "edited value");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ref-cache");
    tu_tcase(s, "special", tu_capture, NULL, special_key);
    tu_tcase(s, "data", tu_capture, NULL, data_hit);
    tu_tcase(s, "regress", tu_capture, NULL, regress_tampered);
    return s;
}

int main(void) { return tu_run(suite()); }
