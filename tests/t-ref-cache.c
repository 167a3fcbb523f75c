/* Tests of the reference cache: keys, hits, tampered and stale entries. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/io.h"
#include "ref-testutil.h"
#include "ref/ref.h"
#include "ref/refop.h"

/*
 * A hit is recognised by the result's "cache" parameter, which only a
 * verified load from the cache sets to "hit" (a computed result says
 * "miss", "refreshed" or "off"): no timing is involved.  Tampering is done
 * on the file's bytes directly, or through a load and save that keeps or
 * forges the content hash.  The XXH3-64 input hash is checked against
 * xxHash's published vectors (upstream XXH3_64bits, seed 0, over the bytes
 * 0, 1, 2, ... of each length) and against a byte stream built by hand.
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

/* A one-tensor case x of dtype dt and shape, data bytes 0, 1, 2, ... */
static void raw_case(ra_case *c, ra_dtype dt, int ndim, const int64_t *shape)
{
    tu_case_init(c, "gdn");
    ra_tensor *t = tu_add(&c->tensors, "x", dt, ndim, shape, NULL);
    for (size_t i = 0; i < t->nbytes; i++)
        ((unsigned char *)t->data)[i] = (unsigned char)i;
}

/* Two cases that differ only in a tensor's dtype (f16 and bf16: the same
   bytes), or only in its shape, must not share a cache entry. */
START_TEST(regress_cache_key_dtype)
{
    const int64_t shape[1] = {4};
    ra_case a, b;
    raw_case(&a, RA_F16, 1, shape);
    raw_case(&b, RA_BF16, 1, shape);
    ck_assert_uint_eq(tu_t(&a, "x")->nbytes, tu_t(&b, "x")->nbytes);
    ck_assert_mem_eq(tu_t(&a, "x")->data, tu_t(&b, "x")->data, tu_t(&a, "x")->nbytes);
    ra_ref_opts o = opts(NULL);
    char ka[33], kb[33];
    ra_ref_cache_key(ka, &a, &o);
    ra_ref_cache_key(kb, &b, &o);
    ck_assert_str_ne(ka, kb);
    ra_case_clear(&a), ra_case_clear(&b);
}
END_TEST

START_TEST(regress_cache_key_shape)
{
    /* [2, 2] vs [4]: the rank differs; [1, 4] vs [4, 1]: only the dims. */
    const int64_t s22[2] = {2, 2}, s4[1] = {4}, s14[2] = {1, 4}, s41[2] = {4, 1};
    const struct {
        int na;
        const int64_t *a;
        int nb;
        const int64_t *b;
    } pairs[] = {{2, s22, 1, s4}, {2, s14, 2, s41}};
    ra_ref_opts o = opts(NULL);
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        ra_case a, b;
        raw_case(&a, RA_F32, pairs[i].na, pairs[i].a);
        raw_case(&b, RA_F32, pairs[i].nb, pairs[i].b);
        ck_assert_mem_eq(tu_t(&a, "x")->data, tu_t(&b, "x")->data, tu_t(&a, "x")->nbytes);
        char ka[33], kb[33];
        ra_ref_cache_key(ka, &a, &o);
        ra_ref_cache_key(kb, &b, &o);
        ck_assert_msg(strcmp(ka, kb) != 0, "pair %zu shares a key", i);
        ra_case_clear(&a), ra_case_clear(&b);
    }
}
END_TEST

/* The key depends on the reference code's version, which the build takes
   from the reference sources: an entry computed by other reference code is
   not served, even when it is otherwise a perfect entry. */
START_TEST(regress_cache_code_version)
{
    const char *v = ra_ref_code_version();
    unsigned long crc, len;
    char end;
    ck_assert_msg(sscanf(v, "%lu-%lu%c", &crc, &len, &end) == 2 && len > 10000, "version '%s'", v);
    ra_case c, r1, r2;
    small_case(&c, 4);
    ra_ref_opts o = opts(NULL);
    char k0[33], k1[33], k2[33];
    ra_ref_cache_key(k0, &c, &o);
    ra_ref_cache_key_for(k1, &c, &o, v);
    ck_assert_str_eq(k0, k1);
    ra_ref_cache_key_for(k2, &c, &o, "0-0");
    ck_assert_str_ne(k0, k2);

    /* An entry of "old code" (other numbers, its own key, a valid content
       hash) placed where the old code would have stored it. */
    tu_scratch_setup();
    o = opts(tu_scratch_dir);
    ck_assert_int_eq(ra_ref_compute(&r1, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r1, "ref_code_version"), v);
    char path[1024];
    entry_path(path, sizeof path, tu_scratch_dir, &c, &o);
    ck_assert_int_eq(unlink(path), 0);
    ra_case old;
    ra_case_init(&old);
    ra_ref_cache_key_for(k2, &c, &o, "0-0");
    ck_assert_int_eq(ra_case_set_op(&old, "gdn"), RA_OK);
    ck_assert_int_eq(ra_kv_copy(&old.params, &r1.params), RA_OK);
    ra_kv_remove(&old.params, "cache");
    for (size_t i = 0; i < r1.tensors.n; i++) {
        ra_tensor *t;
        ck_assert_int_eq(ra_tensor_clone(&t, r1.tensors.items[i], NULL), RA_OK);
        ck_assert_int_eq(ra_tensors_add(&old.tensors, t), RA_OK);
    }
    ra_tensor *ot = tu_t(&old, "o");
    ra_tensor_set(ot, 0, ra_tensor_get(ot, 0) + 1.0);
    ck_assert_int_eq(ra_kv_set(&old.params, "ref_code_version", "0-0"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&old.params, "cache_key", k2), RA_OK);
    char h[33];
    ck_assert_int_eq(ra_ref_content_hash(h, &old), RA_OK);
    ck_assert_int_eq(ra_kv_set(&old.params, "content_hash", h), RA_OK);
    ck_assert_int_eq(ra_ref_cache_store(&old, tu_scratch_dir, k2), RA_OK);
    ck_assert_int_eq(ra_ref_compute(&r2, &c, &o, "c"), RA_OK);
    ck_assert_str_eq(ra_case_param(&r2, "cache"), "miss");
    same_tensors(&r1, &r2);
    ra_case_clear(&old), ra_case_clear(&c), ra_case_clear(&r1), ra_case_clear(&r2);
    tu_scratch_teardown();
}
END_TEST

/* --- the input hash ------------------------------------------------------------------------------
 */

static void le64(unsigned char **p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        *(*p)++ = (unsigned char)(v >> (8 * i));
}

START_TEST(special_input_hash)
{
    /* xxHash's published XXH3-64 vectors (seed 0, input bytes i mod 256):
       each length band of the algorithm (0, 1-3, 4-8, 9-16, 17-128,
       129-240, > 240). */
    static const struct {
        size_t len;
        int64_t h;
    } vec[] = {{0, INT64_C(3244421341483603138)},    {1, INT64_C(-4302098779834749733)},
               {3, INT64_C(6864218090047839419)},    {8, INT64_C(4187271766389786872)},
               {16, INT64_C(-8983023575487778597)},  {17, INT64_C(-6993173599622040792)},
               {129, INT64_C(-1407864491810865574)}, {256, INT64_C(-7779787747613135503)}};
    unsigned char buf[256];
    for (int i = 0; i < 256; i++)
        buf[i] = (unsigned char)i;
    for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
        ck_assert_msg(XXH3_64bits(buf, vec[i].len) == (uint64_t)vec[i].h, "length %zu", vec[i].len);

    /* One tensor x, F32 [2, 3]: count, name, dtype, rank, dims, bytes. */
    const int64_t shape[2] = {2, 3};
    ra_case c;
    raw_case(&c, RA_F32, 2, shape);
    unsigned char stream[256], *p = stream;
    le64(&p, 1);
    le64(&p, 1), *p++ = 'x';
    le64(&p, 3), memcpy(p, "F32", 3), p += 3;
    le64(&p, 2), le64(&p, 2), le64(&p, 3);
    le64(&p, 24);
    for (int i = 0; i < 24; i++)
        *p++ = (unsigned char)i;
    char want[17], got[17];
    snprintf(want, sizeof want, "%016llx",
             (unsigned long long)XXH3_64bits(stream, (size_t)(p - stream)));
    ck_assert_int_eq(ra_ref_input_hash(got, &c), RA_OK);
    ck_assert_str_eq(got, want);
    ra_case_clear(&c);

    /* Tensor order does not matter; one bit of one input does. */
    ra_case a, b;
    small_case(&a, 5);
    tu_case_init(&b, "gdn");
    for (size_t i = a.tensors.n; i-- > 0;) {
        ra_tensor *t;
        ck_assert_int_eq(ra_tensor_clone(&t, a.tensors.items[i], NULL), RA_OK);
        ck_assert_int_eq(ra_tensors_add(&b.tensors, t), RA_OK);
    }
    char ha[17], hb[17];
    ck_assert_int_eq(ra_ref_input_hash(ha, &a), RA_OK);
    ck_assert_int_eq(ra_ref_input_hash(hb, &b), RA_OK);
    ck_assert_str_eq(ha, hb);
    ((unsigned char *)tu_t(&b, "beta")->data)[0] ^= 1;
    ck_assert_int_eq(ra_ref_input_hash(hb, &b), RA_OK);
    ck_assert_str_ne(ha, hb);
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

/* The certificate edited, data and content_hash kept. */
static void edit_certificate(const char *path, const ra_case *c)
{
    (void)c;
    ra_case e;
    ra_case_init(&e);
    ck_assert_int_eq(ra_case_load(&e, path), RA_OK);
    ck_assert_int_eq(ra_kv_set(&e.params, "certified_bits.o", "999"), RA_OK);
    ck_assert_int_eq(ra_case_save(&e, path), RA_OK);
    ra_case_clear(&e);
}

/* The data edited and the content_hash recomputed over the tensors alone
   (XXH3-128 of each tensor's name, dtype, shape and bytes, in file order:
   a hash that leaves the certificate out). */
static void edit_data_rehash_tensors(const char *path, const ra_case *c)
{
    (void)c;
    ra_case e;
    ra_case_init(&e);
    ck_assert_int_eq(ra_case_load(&e, path), RA_OK);
    ra_tensor *o = tu_t(&e, "o");
    ra_tensor_set(o, 0, ra_tensor_get(o, 0) * 2);
    XXH3_state_t *h = XXH3_createState();
    XXH3_128bits_reset(h);
    for (size_t i = 0; i < e.tensors.n; i++) {
        const ra_tensor *t = e.tensors.items[i];
        XXH3_128bits_update(h, t->name, strlen(t->name));
        XXH3_128bits_update(h, ra_dtype_st_name(t->dtype), strlen(ra_dtype_st_name(t->dtype)));
        XXH3_128bits_update(h, t->shape, (size_t)t->ndim * sizeof t->shape[0]);
        XXH3_128bits_update(h, t->data, t->nbytes);
    }
    XXH128_hash_t d = XXH3_128bits_digest(h);
    XXH3_freeState(h);
    char hex[33];
    snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)d.high64,
             (unsigned long long)d.low64);
    ck_assert_int_eq(ra_kv_set(&e.params, "content_hash", hex), RA_OK);
    ck_assert_int_eq(ra_case_save(&e, path), RA_OK);
    ra_case_clear(&e);
}

START_TEST(regress_cache_tamper_certificate)
{
    tamper_and_check(edit_certificate, "edited certificate");
    tamper_and_check(edit_data_rehash_tensors, "edited value, tensor-only hash");
}
END_TEST

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
    tu_tcase(s, "special", tu_capture, NULL, special_key, special_input_hash);
    tu_tcase(s, "data", tu_capture, NULL, data_hit);
    tu_tcase(s, "regress", tu_capture, NULL, regress_tampered, regress_cache_key_dtype,
             regress_cache_key_shape, regress_cache_code_version, regress_cache_tamper_certificate);
    return s;
}

int main(void) { return tu_run(suite()); }
