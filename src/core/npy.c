/* NumPy .npy reader and writer (versions 1.0, 2.0, 3.0; C-order floats). */
#include "core/io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Layout: "\x93NUMPY", major, minor, the header length (2 bytes LE for 1.0,
 * 4 bytes for 2.0 and 3.0), the header, then the raw C-order data.  The
 * header is the text of a Python dict literal with the keys 'descr',
 * 'fortran_order' and 'shape', padded with spaces and a newline (3.0 only
 * allows UTF-8 text where 2.0 is latin-1; both are plain ASCII for every
 * dtype we accept).
 *
 * The header is parsed as a Python literal, not matched against fixed
 * offsets: a small recursive-descent parser for the subset NumPy writes
 * (strings in either quote, integers with Python 2's optional L suffix,
 * True/False/None, tuples with Python's rule that "(5)" is 5 and "(5,)" a
 * tuple, lists), any key order, any whitespace, a trailing comma.  Nesting
 * is capped (so a hostile header cannot exhaust the stack) and the header
 * length is checked against the bytes that follow it and capped at 1 MiB
 * before it is allocated.  Keys must be exactly the three above, each once.
 * dtypes '<f8' '<f4' '<f2' (also '=', '|' or no byte-order mark, native on
 * the little-endian hosts we require); big-endian, Fortran order, structured
 * and other dtypes are refused naming the field and value.  The data must
 * be exactly numel * itemsize bytes: a short file is truncated, extra bytes
 * are refused too (NumPy would ignore them; here they mean the file is not
 * what its header says).  As with safetensors, the tensor is allocated only
 * once its size has been checked against the file, and filled by one read.
 *
 * Writing produces what numpy.save writes for the same array, byte for
 * byte: version 1.0, keys sorted, "'shape': (2, 3), }", NumPy's spare
 * spaces for growing the first axis, then spaces and '\n' so that the data
 * starts at a multiple of 64 bytes (a full 64 spaces when it already would;
 * NumPy does the same).  bf16 has no NumPy dtype and is refused.
 */

#define NPY_MAX_HEADER (1u << 20)
#define NPY_MAX_DEPTH 16
#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21 /* NumPy's GROWTH_AXIS_MAX_DIGITS */

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* --- Python literal subset ------------------------------------------------------ */

typedef enum { PV_STR, PV_INT, PV_BOOL, PV_NONE, PV_TUPLE, PV_LIST } pv_kind;

typedef struct pyval {
    pv_kind kind;
    const char *s; /* PV_STR: the text between the quotes */
    size_t len;
    int64_t i;                  /* PV_INT */
    int b;                      /* PV_BOOL */
    size_t n;                   /* PV_TUPLE / PV_LIST: item count */
    int all_int;                /* every item a PV_INT */
    int64_t items[RA_MAX_DIMS]; /* the first RA_MAX_DIMS integer items */
} pyval;

typedef struct pyparser {
    const char *p, *start, *end;
    const char *err; /* static text of the first syntax error */
} pyparser;

static void skip_ws(pyparser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
                               *ps->p == '\r' || *ps->p == '\f' || *ps->p == '\v'))
        ps->p++;
}

static int fail(pyparser *ps, const char *msg)
{
    if (!ps->err)
        ps->err = msg;
    return 0;
}

static int match_word(pyparser *ps, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0)
        return 0;
    const char *after = ps->p + n;
    if (after < ps->end && (*after == '_' || (*after >= 'a' && *after <= 'z') ||
                            (*after >= 'A' && *after <= 'Z') || (*after >= '0' && *after <= '9')))
        return 0;
    ps->p = after;
    return 1;
}

static int parse_value(pyparser *ps, pyval *v, int depth);

static int parse_string(pyparser *ps, pyval *v)
{
    char q = *ps->p++;
    const char *s = ps->p;
    while (ps->p < ps->end && *ps->p != q) {
        if (*ps->p == '\n')
            return fail(ps, "unterminated string");
        if (*ps->p == '\\' && ps->p + 1 < ps->end)
            ps->p++;
        ps->p++;
    }
    if (ps->p >= ps->end)
        return fail(ps, "unterminated string");
    v->kind = PV_STR;
    v->s = s;
    v->len = (size_t)(ps->p - s);
    ps->p++;
    return 1;
}

static int parse_int(pyparser *ps, pyval *v)
{
    int neg = 0;
    if (*ps->p == '-') {
        neg = 1;
        ps->p++;
        skip_ws(ps);
    }
    if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
        return fail(ps, "expected a digit");
    /* Accumulate the magnitude as a negative number: -2^63 fits. */
    int64_t acc = 0;
    for (; ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9'; ps->p++) {
        int d = *ps->p - '0';
        if (acc < (INT64_MIN + d) / 10)
            return fail(ps, "integer out of range");
        acc = acc * 10 - d;
    }
    if (ps->p < ps->end && (*ps->p == 'L' || *ps->p == 'l')) /* Python 2 long */
        ps->p++;
    if (!neg && acc == INT64_MIN)
        return fail(ps, "integer out of range");
    v->kind = PV_INT;
    v->i = neg ? acc : -acc;
    return 1;
}

/* Items up to `close`; "(x)" without a comma is x itself. */
static int parse_seq(pyparser *ps, pyval *v, char close, int depth)
{
    ps->p++;
    pyval item;
    int comma = 0;
    v->n = 0;
    v->all_int = 1;
    for (;;) {
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == close)
            break;
        if (v->n > 0 && !comma)
            return fail(ps, "expected ',' between items");
        if (!parse_value(ps, &item, depth + 1))
            return 0;
        if (item.kind == PV_INT && v->n < RA_MAX_DIMS)
            v->items[v->n] = item.i;
        if (item.kind != PV_INT)
            v->all_int = 0;
        v->n++;
        skip_ws(ps);
        comma = ps->p < ps->end && *ps->p == ',';
        if (comma)
            ps->p++;
        else if (ps->p >= ps->end || *ps->p != close)
            return fail(ps, close == ')' ? "expected ',' or ')'" : "expected ',' or ']'");
    }
    ps->p++;
    if (close == ')' && v->n == 1 && !comma) {
        *v = item; /* parenthesised expression, not a tuple */
        return 1;
    }
    v->kind = close == ')' ? PV_TUPLE : PV_LIST;
    return 1;
}

static int parse_value(pyparser *ps, pyval *v, int depth)
{
    if (depth > NPY_MAX_DEPTH)
        return fail(ps, "nesting too deep");
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of header");
    memset(v, 0, sizeof *v);
    char c = *ps->p;
    if (c == '\'' || c == '"')
        return parse_string(ps, v);
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_int(ps, v);
    if (c == '(')
        return parse_seq(ps, v, ')', depth);
    if (c == '[')
        return parse_seq(ps, v, ']', depth);
    if (match_word(ps, "True") || match_word(ps, "False")) {
        v->kind = PV_BOOL;
        v->b = c == 'T';
        return 1;
    }
    if (match_word(ps, "None")) {
        v->kind = PV_NONE;
        return 1;
    }
    return fail(ps, "unsupported value");
}

/* --- header ------------------------------------------------------------------------ */

typedef struct npy_header {
    ra_dtype dtype;
    int ndim;
    int64_t shape[RA_MAX_DIMS];
} npy_header;

static int str_is(const pyval *v, const char *s)
{
    return v->kind == PV_STR && v->len == strlen(s) && memcmp(v->s, s, v->len) == 0;
}

static ra_status check_descr(ra_dtype *dt, const pyval *v, const char *what)
{
    if (v->kind != PV_STR)
        RA_ERRORF(RA_EFORMAT,
                  "%s: npy field 'descr' is not a dtype string (structured dtypes not supported)",
                  what);
    const char *s = v->s;
    size_t n = v->len;
    int big = 0;
    if (n > 0 && (s[0] == '<' || s[0] == '=' || s[0] == '|' || s[0] == '>')) {
        big = s[0] == '>';
        s++;
        n--;
    }
    static const struct {
        const char *code;
        ra_dtype dt;
    } ok[] = {{"f8", RA_F64}, {"f4", RA_F32}, {"f2", RA_F16}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (n == 2 && memcmp(s, ok[i].code, 2) == 0) {
            if (big)
                RA_ERRORF(RA_EFORMAT,
                          "%s: npy field 'descr': '%.*s' is big-endian, not supported "
                          "(little-endian '<f8', '<f4', '<f2')",
                          what, (int)v->len, v->s);
            *dt = ok[i].dt;
            return RA_OK;
        }
    RA_ERRORF(RA_EFORMAT, "%s: npy field 'descr': '%.*s' not supported ('<f8', '<f4', '<f2')", what,
              v->len > 40 ? 40 : (int)v->len, v->s);
}

static ra_status check_shape(npy_header *h, const pyval *v, const char *what)
{
    if (v->kind != PV_TUPLE || !v->all_int)
        RA_ERRORF(RA_EFORMAT, "%s: npy field 'shape' is not a tuple of integers", what);
    if (v->n > RA_MAX_DIMS)
        RA_ERRORF(RA_EFORMAT, "%s: npy field 'shape' has %zu dimensions (at most %d)", what, v->n,
                  RA_MAX_DIMS);
    h->ndim = (int)v->n;
    for (size_t i = 0; i < v->n; i++) {
        if (v->items[i] < 0)
            RA_ERRORF(RA_EFORMAT, "%s: npy field 'shape': negative dimension %lld", what,
                      (long long)v->items[i]);
        h->shape[i] = v->items[i];
    }
    return RA_OK;
}

/* The header dict: exactly descr, fortran_order and shape, in any order. */
static ra_status parse_header(npy_header *h, const char *text, size_t len, const char *what)
{
    static const char *keys[3] = {"descr", "fortran_order", "shape"};
    pyval vals[3];
    int seen[3] = {0, 0, 0};
    pyparser ps = {text, text, text + len, NULL};
    skip_ws(&ps);
    if (ps.p >= ps.end || *ps.p != '{')
        RA_ERRORF(RA_EFORMAT, "%s: npy header is not a dict (no '{')", what);
    ps.p++;
    int comma = 1;
    for (;;) {
        skip_ws(&ps);
        if (ps.p < ps.end && *ps.p == '}')
            break;
        if (!comma) {
            fail(&ps, "expected ',' or '}'");
            goto syntax;
        }
        pyval key;
        if (ps.p >= ps.end || (*ps.p != '\'' && *ps.p != '"')) {
            fail(&ps, "expected a quoted key");
            goto syntax;
        }
        if (!parse_string(&ps, &key))
            goto syntax;
        skip_ws(&ps);
        if (ps.p >= ps.end || *ps.p != ':') {
            fail(&ps, "expected ':'");
            goto syntax;
        }
        ps.p++;
        int k = 0;
        while (k < 3 && !str_is(&key, keys[k]))
            k++;
        if (k == 3)
            RA_ERRORF(RA_EFORMAT, "%s: npy header has unknown key '%.*s'", what,
                      key.len > 40 ? 40 : (int)key.len, key.s);
        if (seen[k])
            RA_ERRORF(RA_EFORMAT, "%s: npy header has key '%s' twice", what, keys[k]);
        if (!parse_value(&ps, &vals[k], 0))
            goto syntax;
        seen[k] = 1;
        skip_ws(&ps);
        comma = ps.p < ps.end && *ps.p == ',';
        if (comma)
            ps.p++;
    }
    ps.p++;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        fail(&ps, "text after the closing '}'");
        goto syntax;
    }
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            RA_ERRORF(RA_EFORMAT, "%s: npy header has no '%s'", what, keys[k]);
    RA_TRY(check_descr(&h->dtype, &vals[0], what));
    if (vals[1].kind != PV_BOOL)
        RA_ERRORF(RA_EFORMAT, "%s: npy field 'fortran_order' is not True or False", what);
    if (vals[1].b)
        RA_ERRORF(RA_EFORMAT, "%s: npy header: fortran_order True not supported (C order only)",
                  what);
    return check_shape(h, &vals[2], what);
syntax:
    RA_ERRORF(RA_EFORMAT, "%s: npy header is not a valid dict literal: %s at byte %zu", what,
              ps.err, (size_t)(ps.p - ps.start));
}

/* --- reading ------------------------------------------------------------------------ */

static ra_status load(ra_tensor **out, ra_reader *r, const char *name)
{
    const char *what = r->what;
    uint8_t pre[8];
    if (r->size < sizeof pre)
        RA_ERRORF(RA_EFORMAT, "%s: not a .npy file (%llu bytes, no room for the preamble)", what,
                  (unsigned long long)r->size);
    RA_TRY(ra_reader_read(r, pre, sizeof pre, "the npy magic"));
    if (memcmp(pre, npy_magic, sizeof npy_magic) != 0)
        RA_ERRORF(RA_EFORMAT, "%s: not a .npy file (no \\x93NUMPY magic)", what);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        RA_ERRORF(RA_EFORMAT, "%s: npy version %d.%d not supported (1.0, 2.0, 3.0)", what, major,
                  minor);
    uint8_t lb[4] = {0, 0, 0, 0};
    RA_TRY(ra_reader_read(r, lb, major == 1 ? 2 : 4, "the npy header length"));
    uint64_t hlen = lb[0] | (uint64_t)lb[1] << 8 | (uint64_t)lb[2] << 16 | (uint64_t)lb[3] << 24;
    uint64_t rest = r->size - r->pos;
    if (hlen > rest)
        RA_ERRORF(RA_EFORMAT, "%s: npy header length %llu exceeds the %llu bytes that follow it",
                  what, (unsigned long long)hlen, (unsigned long long)rest);
    if (hlen > NPY_MAX_HEADER)
        RA_ERRORF(RA_EFORMAT, "%s: npy header length %llu exceeds the %u-byte limit", what,
                  (unsigned long long)hlen, NPY_MAX_HEADER);
    char *text = malloc(hlen ? (size_t)hlen : 1);
    if (!text)
        RA_ERROR("out of memory", RA_ENOMEM);
    npy_header h;
    ra_status st = ra_reader_read(r, text, (size_t)hlen, "the npy header");
    if (st == RA_OK)
        st = parse_header(&h, text, (size_t)hlen, what);
    free(text);
    RA_TRY(st);

    uint64_t numel = 1;
    for (int i = 0; i < h.ndim; i++) {
        uint64_t d = (uint64_t)h.shape[i];
        if (d != 0 && numel > (uint64_t)INT64_MAX / d)
            RA_ERRORF(RA_EOVERFLOW, "%s: npy field 'shape': element count overflows", what);
        numel *= d;
    }
    uint64_t esz = ra_dtype_size(h.dtype);
    if (numel > SIZE_MAX / esz)
        RA_ERRORF(RA_EOVERFLOW, "%s: npy field 'shape': byte size overflows", what);
    uint64_t nbytes = numel * esz;
    rest = r->size - r->pos;
    if (nbytes > rest) {
        char sb[160];
        ra_shape_format(sb, sizeof sb, h.ndim, h.shape);
        RA_ERRORF(RA_EFORMAT, "%s: truncated: shape %s of %s needs %llu data bytes, %llu present",
                  what, sb, ra_dtype_name(h.dtype), (unsigned long long)nbytes,
                  (unsigned long long)rest);
    }
    if (nbytes < rest)
        RA_ERRORF(RA_EFORMAT, "%s: %llu bytes after the data the header describes", what,
                  (unsigned long long)(rest - nbytes));
    ra_tensor *t;
    RA_TRY(ra_tensor_new(&t, name, h.dtype, h.ndim, h.shape));
    st = ra_reader_read(r, t->data, t->nbytes, "the npy data");
    if (st != RA_OK) {
        ra_tensor_free(t);
        return st;
    }
    *out = t;
    return RA_OK;
}

ra_status ra_npy_parse(ra_tensor **out, const uint8_t *buf, size_t len, const char *name,
                       const char *what)
{
    *out = NULL;
    ra_reader r;
    ra_reader_init_mem(&r, buf, len, what ? what : "npy buffer");
    return load(out, &r, name ? name : "");
}

ra_status ra_npy_read(ra_tensor **out, const char *path, const char *name)
{
    *out = NULL;
    ra_reader r;
    RA_TRY(ra_reader_open_file(&r, path));
    ra_status st = load(out, &r, name ? name : "");
    ra_reader_close(&r);
    return st;
}

/* --- writing ------------------------------------------------------------------------ */

/* Room for the fixed text, 8 dims of up to 19 digits (with ", "), NumPy's
   21 growth spaces, up to 64 bytes of padding and the newline: under 400. */
#define NPY_HEADER_CAP 512

/* Preamble + header as numpy.save writes it; *len is a multiple of 64.
   Always version 1.0: with at most RA_MAX_DIMS dims the header is far
   below 1.0's 65535-byte limit, so 2.0 is never needed. */
static ra_status build_header(char *buf, size_t *len, const ra_tensor *t)
{
    RA_TRY(ra_io_check_tensor(t));
    const char *descr;
    switch (t->dtype) {
    case RA_F64:
        descr = "<f8";
        break;
    case RA_F32:
        descr = "<f4";
        break;
    case RA_F16:
        descr = "<f2";
        break;
    default:
        RA_ERRORF(RA_EUNSUPPORTED,
                  "tensor '%s': %s has no NumPy dtype, cannot write .npy (use .safetensors)",
                  t->name, ra_dtype_name(t->dtype));
    }
    char *d = buf + 10;
    size_t cap = NPY_HEADER_CAP - 10, n = 0;
    n += (size_t)snprintf(d + n, cap - n, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                          descr);
    for (int i = 0; i < t->ndim; i++)
        n += (size_t)snprintf(d + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    n += (size_t)snprintf(d + n, cap - n, "%s), }", t->ndim == 1 ? "," : "");
    if (t->ndim > 0) {
        int digits = snprintf(NULL, 0, "%lld", (long long)t->shape[0]);
        for (int i = digits; i < NPY_GROWTH_DIGITS; i++)
            d[n++] = ' ';
    }
    size_t pad = NPY_ALIGN - (10 + n + 1) % NPY_ALIGN; /* 1..64, as NumPy */
    size_t hlen = n + pad + 1;
    memcpy(buf, npy_magic, sizeof npy_magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)(hlen & 0xFF);
    buf[9] = (char)(hlen >> 8);
    memset(d + n, ' ', pad);
    d[n + pad] = '\n';
    *len = 10 + hlen;
    return RA_OK;
}

ra_status ra_npy_serialize(uint8_t **buf, size_t *len, const ra_tensor *t)
{
    *buf = NULL;
    *len = 0;
    char hdr[NPY_HEADER_CAP];
    size_t hlen;
    RA_TRY(build_header(hdr, &hlen, t));
    ra_writer w;
    ra_writer_init_mem(&w);
    RA_TRY(ra_writer_write(&w, hdr, hlen));
    RA_TRY(ra_writer_write(&w, t->data, t->nbytes));
    return ra_writer_finish(&w, buf, len);
}

ra_status ra_npy_write(const char *path, const ra_tensor *t)
{
    char hdr[NPY_HEADER_CAP];
    size_t hlen;
    RA_TRY(build_header(hdr, &hlen, t));
    ra_writer w;
    RA_TRY(ra_writer_open_file(&w, path));
    RA_TRY(ra_writer_write(&w, hdr, hlen));
    RA_TRY(ra_writer_write(&w, t->data, t->nbytes));
    return ra_writer_finish(&w, NULL, NULL);
}
