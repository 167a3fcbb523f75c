/* The isolation wire format: encoding and checked decoding of outcome and fault messages. */
#include <config.h>

#include "audit/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The layout is in wire.h.  Integers are written byte by byte in
 * little-endian order, so the format does not depend on the host's struct
 * layout or endianness (parent and child are the same program, but the
 * decoder is also the unit under test).  The reader is a cursor over the
 * received bytes; every take checks the bytes left first, so a truncated
 * or lying message is refused with the field it broke on, never read past.
 */

static const unsigned char magic[4] = {'R', 'A', 'W', '1'};

/* Reports a malformed message inside an expression; the status. */
#define format_error(...) (RA_REPORTF(RA_EFORMAT, __VA_ARGS__), RA_EFORMAT)

void ra_outcome_init(ra_outcome *o)
{
    memset(o, 0, sizeof *o);
    ra_case_init(&o->result);
}

void ra_outcome_clear(ra_outcome *o)
{
    ra_case_clear(&o->result);
    ra_outcome_init(o);
}

void ra_wire_buf_init(ra_wire_buf *b) { memset(b, 0, sizeof *b); }

void ra_wire_buf_clear(ra_wire_buf *b)
{
    free(b->p);
    ra_wire_buf_init(b);
}

ra_status ra_wire_buf_append(ra_wire_buf *b, const void *p, size_t n)
{
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n < n) {
            if (cap > SIZE_MAX / 2)
                RA_ERROR("wire message too large", RA_EOVERFLOW);
            cap *= 2;
        }
        unsigned char *q = realloc(b->p, cap);
        if (!q)
            RA_ERROR("out of memory for a wire message", RA_ENOMEM);
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
    return RA_OK;
}

/* --- encoding --------------------------------------------------------------------------- */

static void store_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static ra_status put_uint(ra_wire_buf *b, uint64_t v, int bytes)
{
    unsigned char p[8];
    store_le(p, v, bytes);
    return ra_wire_buf_append(b, p, (size_t)bytes);
}

static ra_status put_str(ra_wire_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n > UINT32_MAX)
        RA_ERROR("wire string too long", RA_EOVERFLOW);
    RA_TRY(put_uint(b, n, 4));
    return ra_wire_buf_append(b, s, n);
}

static ra_status put_double(ra_wire_buf *b, double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return put_uint(b, u, 8);
}

static ra_status put_tensor(ra_wire_buf *b, const ra_tensor *t)
{
    RA_TRY(put_str(b, t->name));
    RA_TRY(put_uint(b, (uint64_t)t->dtype, 4));
    RA_TRY(put_uint(b, (uint64_t)t->ndim, 4));
    for (int d = 0; d < t->ndim; d++)
        RA_TRY(put_uint(b, (uint64_t)t->shape[d], 8));
    RA_TRY(put_uint(b, t->nbytes, 8));
    return ra_wire_buf_append(b, t->data, t->nbytes);
}

static void header(unsigned char *p, int kind, uint64_t body)
{
    memcpy(p, magic, 4);
    store_le(p + 4, (uint64_t)kind, 4);
    store_le(p + 8, body, 8);
}

ra_status ra_wire_encode_outcome(ra_wire_buf *b, const ra_outcome *o)
{
    const size_t start = b->n;
    unsigned char h[RA_WIRE_HEADER_BYTES] = {0};
    RA_TRY(ra_wire_buf_append(b, h, sizeof h));
    RA_TRY(put_uint(b, (uint32_t)o->fst, 4));
    RA_TRY(put_uint(b, (uint32_t)o->bst, 4));
    RA_TRY(put_uint(b, o->bwd_ran ? 1 : 0, 4));
    RA_TRY(put_double(b, o->elapsed_ms));
    RA_TRY(put_str(b, o->fwhy));
    RA_TRY(put_str(b, o->bwhy));
    const ra_case *r = &o->result;
    RA_TRY(put_str(b, r->op));
    RA_TRY(put_uint(b, r->params.n, 4));
    for (size_t i = 0; i < r->params.n; i++) {
        RA_TRY(put_str(b, r->params.keys[i]));
        RA_TRY(put_str(b, r->params.vals[i]));
    }
    RA_TRY(put_uint(b, r->tensors.n, 4));
    for (size_t i = 0; i < r->tensors.n; i++)
        RA_TRY(put_tensor(b, r->tensors.items[i]));
    header(b->p + start, RA_WIRE_OUTCOME, b->n - start - RA_WIRE_HEADER_BYTES);
    return RA_OK;
}

void ra_wire_encode_fault(unsigned char *buf, uint64_t offset, int sig)
{
    header(buf, RA_WIRE_FAULT, 12);
    store_le(buf + RA_WIRE_HEADER_BYTES, offset, 8);
    store_le(buf + RA_WIRE_HEADER_BYTES + 8, (uint64_t)(uint32_t)sig, 4);
}

/* --- decoding --------------------------------------------------------------------------- */

typedef struct cursor {
    const unsigned char *p;
    size_t left;
} cursor;

static ra_status take(const unsigned char **out, cursor *c, uint64_t n, const char *what)
{
    if (n > c->left)
        RA_ERRORF(RA_EFORMAT, "wire message truncated in %s (%llu bytes needed, %zu left)", what,
                  (unsigned long long)n, c->left);
    *out = c->p;
    c->p += n;
    c->left -= n;
    return RA_OK;
}

static ra_status get_uint(uint64_t *v, cursor *c, int bytes, const char *what)
{
    const unsigned char *p;
    RA_TRY(take(&p, c, (uint64_t)bytes, what));
    *v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        *v = *v << 8 | p[i];
    return RA_OK;
}

/* A string as a new NUL-terminated copy (*out; caller frees). */
static ra_status get_str(char **out, cursor *c, const char *what)
{
    uint64_t n;
    const unsigned char *p;
    RA_TRY(get_uint(&n, c, 4, what));
    RA_TRY(take(&p, c, n, what));
    if (memchr(p, '\0', n))
        RA_ERRORF(RA_EFORMAT, "wire message: %s holds a NUL byte", what);
    char *s = malloc(n + 1);
    if (!s)
        RA_ERROR("out of memory decoding a wire message", RA_ENOMEM);
    memcpy(s, p, n);
    s[n] = '\0';
    *out = s;
    return RA_OK;
}

static ra_status get_str_into(char *dst, size_t len, cursor *c, const char *what)
{
    char *s;
    RA_TRY(get_str(&s, c, what));
    snprintf(dst, len, "%s", s);
    free(s);
    return RA_OK;
}

static ra_status get_status(ra_status *st, cursor *c, const char *what)
{
    uint64_t v;
    RA_TRY(get_uint(&v, c, 4, what));
    if (v > RA_ENUMERIC)
        RA_ERRORF(RA_EFORMAT, "wire message: %s %llu is not a status", what, (unsigned long long)v);
    *st = (ra_status)v;
    return RA_OK;
}

static ra_status get_tensor(ra_tensors *ts, cursor *c)
{
    char *name = NULL;
    uint64_t dtype, ndim, nbytes;
    int64_t shape[RA_MAX_DIMS];
    ra_status st = get_str(&name, c, "a tensor name");
    if (st == RA_OK)
        st = get_uint(&dtype, c, 4, "a tensor dtype");
    if (st == RA_OK && dtype >= RA_NDTYPES)
        st = format_error("wire message: tensor '%s' has dtype %llu", name,
                          (unsigned long long)dtype);
    if (st == RA_OK)
        st = get_uint(&ndim, c, 4, "a tensor rank");
    if (st == RA_OK && ndim > RA_MAX_DIMS)
        st = format_error("wire message: tensor '%s' has rank %llu (at most %d)", name,
                          (unsigned long long)ndim, RA_MAX_DIMS);
    for (uint64_t d = 0; st == RA_OK && d < ndim; d++) {
        uint64_t v = 0;
        st = get_uint(&v, c, 8, "a tensor shape");
        shape[d] = (int64_t)v;
    }
    if (st == RA_OK)
        st = get_uint(&nbytes, c, 8, "a tensor size");
    ra_tensor *t = NULL;
    if (st == RA_OK)
        st = ra_tensor_new(&t, name, (ra_dtype)dtype, (int)ndim, shape);
    if (st == RA_OK && t->nbytes != nbytes)
        st = format_error("wire message: tensor '%s' carries %llu bytes, its shape needs %zu", name,
                          (unsigned long long)nbytes, t->nbytes);
    const unsigned char *p;
    if (st == RA_OK)
        st = take(&p, c, nbytes, "tensor data");
    if (st == RA_OK) {
        if (nbytes)
            memcpy(t->data, p, nbytes);
        st = ra_tensors_add(ts, t);
        t = NULL;
    }
    ra_tensor_free(t);
    free(name);
    return st;
}

static ra_status get_outcome(ra_outcome *o, cursor *c)
{
    uint64_t flags, bits, n;
    RA_TRY(get_status(&o->fst, c, "the forward status"));
    RA_TRY(get_status(&o->bst, c, "the backward status"));
    RA_TRY(get_uint(&flags, c, 4, "the flags"));
    o->bwd_ran = (int)(flags & 1);
    RA_TRY(get_uint(&bits, c, 8, "the elapsed time"));
    memcpy(&o->elapsed_ms, &bits, sizeof bits);
    RA_TRY(get_str_into(o->fwhy, sizeof o->fwhy, c, "the forward reason"));
    RA_TRY(get_str_into(o->bwhy, sizeof o->bwhy, c, "the backward reason"));
    char *op;
    RA_TRY(get_str(&op, c, "the op"));
    ra_status st = ra_case_set_op(&o->result, op);
    free(op);
    RA_TRY(st);
    RA_TRY(get_uint(&n, c, 4, "the parameter count"));
    for (uint64_t i = 0; i < n; i++) {
        char *k = NULL, *v = NULL;
        st = get_str(&k, c, "a parameter key");
        if (st == RA_OK)
            st = get_str(&v, c, "a parameter value");
        if (st == RA_OK)
            st = ra_kv_set(&o->result.params, k, v);
        free(k);
        free(v);
        RA_TRY(st);
    }
    RA_TRY(get_uint(&n, c, 4, "the tensor count"));
    for (uint64_t i = 0; i < n; i++)
        RA_TRY(get_tensor(&o->result.tensors, c));
    return RA_OK;
}

ra_status ra_wire_decode(ra_wire_msg *m, ra_outcome *o, const unsigned char *p, size_t n)
{
    memset(m, 0, sizeof *m);
    if (n < RA_WIRE_HEADER_BYTES)
        RA_ERRORF(RA_EFORMAT, "wire message truncated in its header (%zu of %d bytes)", n,
                  RA_WIRE_HEADER_BYTES);
    if (memcmp(p, magic, 4) != 0)
        RA_ERROR("wire message does not start with RAW1", RA_EFORMAT);
    cursor c = {p + 4, n - 4};
    uint64_t kind, body;
    RA_TRY(get_uint(&kind, &c, 4, "the header"));
    RA_TRY(get_uint(&body, &c, 8, "the header"));
    if (body > c.left)
        RA_ERRORF(RA_EFORMAT, "wire message truncated (%zu of %llu body bytes)", c.left,
                  (unsigned long long)body);
    if (body < c.left)
        RA_ERRORF(RA_EFORMAT, "wire message has %llu trailing bytes",
                  (unsigned long long)(c.left - body));
    if (kind == RA_WIRE_FAULT) {
        uint64_t sig;
        RA_TRY(get_uint(&m->fault_offset, &c, 8, "the fault offset"));
        RA_TRY(get_uint(&sig, &c, 4, "the fault signal"));
        m->fault_signal = (int)sig;
    } else if (kind == RA_WIRE_OUTCOME) {
        RA_TRY(get_outcome(o, &c));
    } else {
        RA_ERRORF(RA_EFORMAT, "wire message of unknown kind %llu", (unsigned long long)kind);
    }
    if (c.left)
        RA_ERRORF(RA_EFORMAT, "wire message body has %zu bytes after its last field", c.left);
    m->kind = (int)kind;
    return RA_OK;
}
