/* .safetensors reader and writer (header through jansson, data streamed). */
#include "core/io.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/kv.h"

/*
 * Layout: an 8-byte little-endian header length N, N bytes of JSON, then
 * the data area.  The JSON object maps tensor names to {"dtype", "shape",
 * "data_offsets": [begin, end]} (offsets relative to the data area) and may
 * hold "__metadata__", a map of strings.
 *
 * Reading validates everything before it allocates a tensor: N against the
 * bytes that follow it and against the reference implementation's 100 MB
 * cap (so a forged length cannot make us allocate), the JSON (jansson,
 * duplicate keys refused), each entry's dtype / shape / offsets, and then
 * the regions sorted by offset, which must tile the data area exactly: no
 * overlap, no hole, nothing after the last tensor (the reference
 * implementation's rule; it makes every byte of the file accounted for).
 * Only then are tensors allocated (their sizes are now bounded by the file
 * size) and their bytes read in file order, straight from the file into
 * the tensor buffers.  Every message names the source and the tensor or
 * field.  Extra fields inside a tensor entry are ignored, as the reference
 * implementation does.
 *
 * Writing builds the header with jansson in insertion order ("__metadata__"
 * first, then the tensors in the order given, each {"dtype", "shape",
 * "data_offsets"}), compact, padded with spaces to a multiple of 8 bytes,
 * and lays the data out contiguously in the same order.
 */

#define ST_MAX_HEADER 100000000ull /* the reference implementation's cap */

typedef struct st_entry {
    const char *name; /* owned by the JSON tree */
    ra_dtype dtype;
    int ndim;
    int64_t shape[RA_MAX_DIMS];
    uint64_t begin, end;
    size_t order; /* position in the JSON object, to break ties */
} st_entry;

static uint64_t load_le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void store_le64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

/* --- reading ----------------------------------------------------------------------- */

static ra_status parse_metadata(ra_kv *meta, json_t *m, const char *what)
{
    if (!json_is_object(m))
        RA_ERRORF(RA_EFORMAT, "%s: __metadata__ is not an object", what);
    const char *key;
    json_t *val;
    json_object_foreach(m, key, val)
    {
        if (!json_is_string(val))
            RA_ERRORF(RA_EFORMAT, "%s: __metadata__ key '%s': value is not a string", what, key);
        /* keys are distinct (JSON_REJECT_DUPLICATES): no lookup per key */
        RA_TRY(ra_kv_append(meta, key, json_string_value(val)));
    }
    return RA_OK;
}

/* A JSON integer in [0, 2^63). */
static int get_count(uint64_t *out, json_t *v)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

static ra_status parse_entry(st_entry *e, const char *name, json_t *v, uint64_t data_len,
                             const char *what)
{
    e->name = name;
    if (!json_is_object(v))
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': entry is not an object", what, name);

    json_t *dt = json_object_get(v, "dtype");
    if (!dt)
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': missing field 'dtype'", what, name);
    if (!json_is_string(dt))
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': field 'dtype' is not a string", what, name);
    const char *ds = json_string_value(dt);
    int found = 0;
    for (int t = 0; t < RA_NDTYPES && !found; t++)
        if (strcmp(ds, ra_dtype_st_name((ra_dtype)t)) == 0) {
            e->dtype = (ra_dtype)t;
            found = 1;
        }
    if (!found)
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': dtype %s not supported (F64, F32, BF16, F16)", what,
                  name, ds);

    json_t *sh = json_object_get(v, "shape");
    if (!sh)
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': missing field 'shape'", what, name);
    if (!json_is_array(sh))
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': field 'shape' is not an array", what, name);
    size_t nd = json_array_size(sh);
    if (nd > RA_MAX_DIMS)
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': field 'shape' has %zu dimensions (at most %d)",
                  what, name, nd, RA_MAX_DIMS);
    e->ndim = (int)nd;
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *d = json_array_get(sh, i);
        uint64_t n;
        if (json_is_integer(d) && json_integer_value(d) < 0)
            RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': field 'shape': negative dimension %lld", what,
                      name, (long long)json_integer_value(d));
        if (!get_count(&n, d))
            RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': field 'shape': dimension %zu is not an integer",
                      what, name, i);
        if (n != 0 && numel > (uint64_t)INT64_MAX / n)
            RA_ERRORF(RA_EOVERFLOW, "%s: tensor '%s': field 'shape': element count overflows", what,
                      name);
        numel *= n;
        e->shape[i] = (int64_t)n;
    }
    uint64_t esz = ra_dtype_size(e->dtype);
    if (numel > SIZE_MAX / esz)
        RA_ERRORF(RA_EOVERFLOW, "%s: tensor '%s': field 'shape': byte size overflows", what, name);
    uint64_t nbytes = numel * esz;

    json_t *off = json_object_get(v, "data_offsets");
    if (!off)
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': missing field 'data_offsets'", what, name);
    if (!json_is_array(off) || json_array_size(off) != 2 ||
        !get_count(&e->begin, json_array_get(off, 0)) ||
        !get_count(&e->end, json_array_get(off, 1)))
        RA_ERRORF(RA_EFORMAT,
                  "%s: tensor '%s': field 'data_offsets' is not [begin, end] of non-negative "
                  "integers",
                  what, name);
    if (e->begin > e->end)
        RA_ERRORF(RA_EFORMAT, "%s: tensor '%s': data_offsets [%llu, %llu]: begin > end", what, name,
                  (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->end - e->begin != nbytes) {
        char sb[160];
        ra_shape_format(sb, sizeof sb, e->ndim, e->shape);
        RA_ERRORF(RA_EFORMAT,
                  "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes, shape %s of %s "
                  "needs %llu",
                  what, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                  (unsigned long long)(e->end - e->begin), sb, ds, (unsigned long long)nbytes);
    }
    if (e->end > data_len)
        RA_ERRORF(RA_EFORMAT,
                  "%s: tensor '%s': data_offsets [%llu, %llu] beyond the %llu-byte data area "
                  "(truncated file?)",
                  what, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                  (unsigned long long)data_len);
    return RA_OK;
}

static int entry_cmp(const void *pa, const void *pb)
{
    const st_entry *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Sorted regions must tile [0, data_len) exactly. */
static ra_status check_tiling(const st_entry *e, size_t n, uint64_t data_len, const char *what)
{
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].begin < at)
            RA_ERRORF(RA_EFORMAT,
                      "%s: tensors '%s' and '%s' overlap: '%s' begins at %llu, before '%s' ends "
                      "at %llu",
                      what, e[i - 1].name, e[i].name, e[i].name, (unsigned long long)e[i].begin,
                      e[i - 1].name, (unsigned long long)at);
        if (e[i].begin > at)
            RA_ERRORF(RA_EFORMAT,
                      "%s: tensor '%s': data_offsets begin at %llu, leaving bytes [%llu, %llu) "
                      "of the data area unused",
                      what, e[i].name, (unsigned long long)e[i].begin, (unsigned long long)at,
                      (unsigned long long)e[i].begin);
        at = e[i].end;
    }
    if (at != data_len)
        RA_ERRORF(RA_EFORMAT, "%s: %llu trailing bytes after the last tensor's data", what,
                  (unsigned long long)(data_len - at));
    return RA_OK;
}

/* Reads the header, validates it, then the tensors (into *out, file order)
   and the metadata (into *meta). */
static ra_status load(ra_tensors *out, ra_kv *meta, ra_reader *r)
{
    const char *what = r->what;
    uint8_t lb[8];
    RA_TRY(ra_reader_read(r, lb, 8, "the 8-byte header length"));
    uint64_t n = load_le64(lb), rest = r->size - r->pos;
    if (n > rest)
        RA_ERRORF(RA_EFORMAT, "%s: header length %llu exceeds the %llu bytes that follow it", what,
                  (unsigned long long)n, (unsigned long long)rest);
    if (n > ST_MAX_HEADER)
        RA_ERRORF(RA_EFORMAT, "%s: header length %llu exceeds the %llu-byte limit", what,
                  (unsigned long long)n, ST_MAX_HEADER);
    char *hdr = malloc(n ? (size_t)n : 1);
    if (!hdr)
        RA_ERRORF(RA_ENOMEM, "%s: cannot allocate a %llu-byte header", what, (unsigned long long)n);
    ra_status st = ra_reader_read(r, hdr, (size_t)n, "the header");
    if (st != RA_OK) {
        free(hdr);
        return st;
    }
    json_error_t jerr;
    json_t *root = json_loadb(hdr, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    free(hdr);
    if (!root)
        RA_ERRORF(RA_EFORMAT, "%s: header is not valid JSON: %s (line %d, column %d)", what,
                  jerr.text, jerr.line, jerr.column);
    if (!json_is_object(root)) {
        json_decref(root);
        RA_ERRORF(RA_EFORMAT, "%s: header is not a JSON object", what);
    }
    uint64_t data_len = rest - n;

    size_t cap = json_object_size(root), ne = 0;
    st_entry *ents = calloc(cap ? cap : 1, sizeof *ents);
    if (!ents) {
        json_decref(root);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (strcmp(key, "__metadata__") == 0)
            st = parse_metadata(meta, val, what);
        else {
            ents[ne].order = ne;
            st = parse_entry(&ents[ne], key, val, data_len, what);
            ne++;
        }
        if (st != RA_OK)
            goto done;
    }
    qsort(ents, ne, sizeof *ents, entry_cmp);
    if ((st = check_tiling(ents, ne, data_len, what)) != RA_OK)
        goto done;
    for (size_t i = 0; i < ne; i++) {
        ra_tensor *t;
        if ((st = ra_tensor_new(&t, ents[i].name, ents[i].dtype, ents[i].ndim, ents[i].shape)) !=
            RA_OK)
            goto done;
        if ((st = ra_tensors_append(out, t)) != RA_OK) /* names: distinct JSON keys */
            goto done;
        char part[96];
        snprintf(part, sizeof part, "tensor '%.60s' data", ents[i].name);
        if ((st = ra_reader_read(r, t->data, t->nbytes, part)) != RA_OK)
            goto done;
    }
done:
    free(ents);
    json_decref(root);
    return st;
}

/* Loads into scratch collections and hands them over only on success, so a
   bad file leaves the caller's ts and meta as they were. */
static ra_status load_into(ra_tensors *ts, ra_kv *meta, ra_reader *r)
{
    ra_tensors got;
    ra_kv gotm;
    ra_tensors_init(&got);
    ra_kv_init(&gotm);
    ra_status st = load(&got, &gotm, r); /* metadata validated even if unwanted */
    /* Into an empty collection the names need no lookup (linear time). */
    const int fresh = ts->n == 0;
    size_t i = 0;
    for (; st == RA_OK && i < got.n; i++) {
        /* both free the tensor on failure */
        st = fresh ? ra_tensors_append(ts, got.items[i]) : ra_tensors_add(ts, got.items[i]);
        got.items[i] = NULL;
    }
    for (; i < got.n; i++)
        ra_tensor_free(got.items[i]);
    free(got.items);
    if (st == RA_OK && meta)
        st = ra_kv_copy(meta, &gotm);
    ra_kv_clear(&gotm);
    return st;
}

ra_status ra_safetensors_parse(ra_tensors *ts, ra_kv *meta, const uint8_t *buf, size_t len,
                               const char *what)
{
    ra_reader r;
    ra_reader_init_mem(&r, buf, len, what ? what : "safetensors buffer");
    return load_into(ts, meta, &r);
}

ra_status ra_safetensors_read(ra_tensors *ts, ra_kv *meta, const char *path)
{
    ra_reader r;
    RA_TRY(ra_reader_open_file(&r, path));
    ra_status st = load_into(ts, meta, &r);
    ra_reader_close(&r);
    return st;
}

/* --- writing ------------------------------------------------------------------------ */

/* Sets obj[key] = v (taking v), refusing keys already present. */
static ra_status set_new(json_t *obj, const char *key, json_t *v, const char *kind)
{
    if (!v)
        RA_ERRORF(RA_ENOMEM, "out of memory building the header (%s '%s')", kind, key);
    if (json_object_get(obj, key)) {
        json_decref(v);
        RA_ERRORF(RA_EINVAL, "duplicate %s '%s'", kind, key);
    }
    /* json_string() is NULL for invalid UTF-8, which jansson also refuses as
       a key: probe it so the message can say so. */
    json_t *probe = json_string(key);
    if (!probe) {
        json_decref(v);
        RA_ERRORF(RA_EINVAL, "%s name is not valid UTF-8", kind);
    }
    json_decref(probe);
    if (json_object_set_new(obj, key, v) != 0)
        RA_ERRORF(RA_ENOMEM, "out of memory building the header (%s '%s')", kind, key);
    return RA_OK;
}

static ra_status build_meta(json_t *root, const ra_kv *meta)
{
    json_t *m = json_object();
    if (!m)
        RA_ERROR("out of memory building the header", RA_ENOMEM);
    for (size_t i = 0; i < meta->n; i++) {
        json_t *s = json_string(meta->vals[i]);
        if (!s) {
            json_decref(m);
            RA_ERRORF(RA_EINVAL, "metadata key '%s': value is not valid UTF-8", meta->keys[i]);
        }
        ra_status st = set_new(m, meta->keys[i], s, "metadata key");
        if (st != RA_OK) {
            json_decref(m);
            return st;
        }
    }
    return set_new(root, "__metadata__", m, "header key");
}

static json_t *tensor_entry(const ra_tensor *t, uint64_t begin)
{
    json_t *e = json_object(), *sh = json_array(), *off = json_array();
    int bad = !e || !sh || !off;
    for (int i = 0; !bad && i < t->ndim; i++)
        bad = json_array_append_new(sh, json_integer(t->shape[i])) != 0;
    bad = bad || json_array_append_new(off, json_integer((json_int_t)begin)) != 0 ||
          json_array_append_new(off, json_integer((json_int_t)(begin + t->nbytes))) != 0;
    bad = bad || json_object_set_new(e, "dtype", json_string(ra_dtype_st_name(t->dtype))) != 0;
    bad =
        bad || json_object_set(e, "shape", sh) != 0 || json_object_set(e, "data_offsets", off) != 0;
    json_decref(sh);
    json_decref(off);
    if (bad) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* The padded header text (malloc'ed, not NUL-terminated; *len % 8 == 0). */
static ra_status build_header(char **out, size_t *len, const ra_tensors *ts, const ra_kv *meta)
{
    json_t *root = json_object();
    if (!root)
        RA_ERROR("out of memory building the header", RA_ENOMEM);
    ra_status st = RA_OK;
    if (meta && meta->n)
        st = build_meta(root, meta);
    uint64_t at = 0;
    for (size_t i = 0; st == RA_OK && i < ts->n; i++) {
        const ra_tensor *t = ts->items[i];
        if ((st = ra_io_check_tensor(t)) != RA_OK)
            break;
        if (strcmp(t->name, "__metadata__") == 0) {
            RA_REPORTF(st = RA_EINVAL, "tensor name '__metadata__' is reserved by the format");
            break;
        }
        if (t->nbytes > INT64_MAX - at) {
            RA_REPORTF(st = RA_EOVERFLOW, "tensor '%s': data area size overflows", t->name);
            break;
        }
        st = set_new(root, t->name, tensor_entry(t, at), "tensor");
        at += t->nbytes;
    }
    char *text = st == RA_OK ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (st != RA_OK)
        return st;
    if (!text)
        RA_ERROR("out of memory serializing the header", RA_ENOMEM);
    size_t n = strlen(text), padded = n + (8 - n % 8) % 8;
    char *h = realloc(text, padded ? padded : 1);
    if (!h) {
        free(text);
        RA_ERROR("out of memory serializing the header", RA_ENOMEM);
    }
    memset(h + n, ' ', padded - n);
    *out = h;
    *len = padded;
    return RA_OK;
}

/* Writes the length, the header and the data; a failure aborts w. */
static ra_status emit(ra_writer *w, const char *hdr, size_t hlen, const ra_tensors *ts)
{
    uint8_t lb[8];
    store_le64(lb, hlen);
    RA_TRY(ra_writer_write(w, lb, 8));
    RA_TRY(ra_writer_write(w, hdr, hlen));
    for (size_t i = 0; i < ts->n; i++)
        RA_TRY(ra_writer_write(w, ts->items[i]->data, ts->items[i]->nbytes));
    return RA_OK;
}

ra_status ra_safetensors_serialize(uint8_t **buf, size_t *len, const ra_tensors *ts,
                                   const ra_kv *meta)
{
    *buf = NULL;
    *len = 0;
    char *hdr;
    size_t hlen;
    RA_TRY(build_header(&hdr, &hlen, ts, meta));
    ra_writer w;
    ra_writer_init_mem(&w);
    ra_status st = emit(&w, hdr, hlen, ts);
    free(hdr);
    RA_TRY(st);
    return ra_writer_finish(&w, buf, len);
}

ra_status ra_safetensors_write(const char *path, const ra_tensors *ts, const ra_kv *meta)
{
    /* The header is built (and every tensor validated) before anything is
       created on disk. */
    char *hdr;
    size_t hlen;
    RA_TRY(build_header(&hdr, &hlen, ts, meta));
    ra_writer w;
    ra_status st = ra_writer_open_file(&w, path);
    if (st == RA_OK)
        st = emit(&w, hdr, hlen, ts);
    free(hdr);
    RA_TRY(st);
    return ra_writer_finish(&w, NULL, NULL);
}
