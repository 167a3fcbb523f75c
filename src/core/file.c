/* Whole-file and streaming file access: exact reads, atomic writes. */
#include "core/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Reading: only regular files are accepted, because the format readers
 * validate header lengths and offsets against the file size before they
 * allocate anything, and that size must be known up front (fstat).  Every
 * read is exact: asking for more bytes than are left is a format error
 * ("truncated"), reported before any fread; a short fread after that check
 * means the file shrank or the device failed, and is an I/O error.
 *
 * Writing: a file is produced as "path.tmp.<pid>" and renamed over path only
 * after every fwrite, the fflush and the fclose succeeded (ENOSPC and
 * friends often surface only at fflush/fclose).  Any failure removes the
 * temporary, so readers never see a partial file.  Two threads of one
 * process writing the same path at the same time would share the temporary
 * name; the suite never does that.  No fsync: the guarantee is against
 * failed writes and concurrent readers, not against power loss.
 *
 * Memory sinks grow geometrically with overflow checks.
 *
 * Both formats store little-endian data and the readers copy it straight
 * into tensor buffers, which the rest of the library reads as host words
 * (core/tensor.c), so the host must be little-endian; the build refuses
 * anything else rather than produce byte-swapped values.
 */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "recaudit stores tensors little-endian in host words: big-endian hosts are not supported"
#endif

/* --- readers ------------------------------------------------------------------- */

ra_status ra_reader_open_file(ra_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->what = path;
    FILE *f = fopen(path, "rb");
    if (!f)
        RA_ERRORF(RA_EIO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        int e = errno;
        fclose(f);
        RA_ERRORF(RA_EIO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        fclose(f);
        RA_ERRORF(RA_EIO, "'%s' is not a regular file", path);
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > SIZE_MAX) {
        fclose(f);
        RA_ERRORF(RA_EOVERFLOW, "'%s': file size does not fit in memory sizes", path);
    }
    r->f = f;
    r->size = (uint64_t)sb.st_size;
    return RA_OK;
}

void ra_reader_init_mem(ra_reader *r, const uint8_t *buf, size_t len, const char *what)
{
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->size = len;
    r->what = what;
}

ra_status ra_reader_read(ra_reader *r, void *dst, size_t n, const char *part)
{
    uint64_t left = r->size - r->pos;
    if (n > left)
        RA_ERRORF(RA_EFORMAT, "%s: truncated: %s needs %zu bytes, %llu left", r->what, part, n,
                  (unsigned long long)left);
    if (n == 0)
        return RA_OK;
    if (r->f) {
        size_t got = fread(dst, 1, n, r->f);
        if (got != n) {
            if (ferror(r->f))
                RA_ERRORF(RA_EIO, "%s: read error in %s: %s", r->what, part, strerror(errno));
            RA_ERRORF(RA_EIO, "%s: file shrank while reading %s", r->what, part);
        }
    } else {
        memcpy(dst, r->buf + r->pos, n);
    }
    r->pos += n;
    return RA_OK;
}

void ra_reader_close(ra_reader *r)
{
    /* A stream opened for reading has nothing to flush; fclose cannot lose
       data here, so its result carries no information. */
    if (r->f)
        (void)fclose(r->f);
    r->f = NULL;
}

ra_status ra_file_read_all(uint8_t **buf, size_t *len, const char *path)
{
    *buf = NULL;
    *len = 0;
    ra_reader r;
    RA_TRY(ra_reader_open_file(&r, path));
    size_t n = (size_t)r.size;
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        ra_reader_close(&r);
        RA_ERRORF(RA_ENOMEM, "'%s': cannot allocate %zu bytes", path, n);
    }
    ra_status st = ra_reader_read(&r, b, n, "the file");
    ra_reader_close(&r);
    if (st != RA_OK) {
        free(b);
        return st;
    }
    *buf = b;
    *len = n;
    return RA_OK;
}

/* --- writers --------------------------------------------------------------------- */

ra_status ra_writer_open_file(ra_writer *w, const char *path)
{
    memset(w, 0, sizeof *w);
    size_t n = strlen(path) + 32;
    char *dup = strdup(path), *tmp = malloc(n);
    if (!dup || !tmp) {
        free(dup);
        free(tmp);
        RA_ERRORF(RA_ENOMEM, "cannot write '%s': out of memory", path);
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno; /* nothing was created, so there is nothing to remove */
        free(dup);
        free(tmp);
        RA_ERRORF(RA_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    w->f = f;
    w->path = dup;
    w->tmp = tmp;
    return RA_OK;
}

void ra_writer_init_mem(ra_writer *w) { memset(w, 0, sizeof *w); }

/* Drops the temporary and reports errno e against the final name. */
static ra_status writer_fail(ra_writer *w, int e)
{
    char *path = w->path;
    w->path = NULL; /* outlives the abort, for the message */
    ra_writer_abort(w);
    RA_REPORTF(RA_EIO, "cannot write '%s': %s", path, strerror(e));
    free(path);
    return RA_EIO;
}

ra_status ra_writer_write(ra_writer *w, const void *p, size_t n)
{
    if (n == 0)
        return RA_OK;
    if (w->f) {
        if (fwrite(p, 1, n, w->f) != n)
            return writer_fail(w, errno);
        return RA_OK;
    }
    if (n > SIZE_MAX - w->len) {
        ra_writer_abort(w);
        RA_ERROR("serialized image size overflows", RA_EOVERFLOW);
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap = cap > SIZE_MAX / 2 ? w->len + n : 2 * cap;
        uint8_t *b = realloc(w->buf, cap);
        if (!b) {
            ra_writer_abort(w);
            RA_ERRORF(RA_ENOMEM, "cannot allocate a %zu-byte image", cap);
        }
        w->buf = b;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
    return RA_OK;
}

ra_status ra_writer_finish(ra_writer *w, uint8_t **buf, size_t *len)
{
    if (!w->f) {
        /* Memory mode: an empty image still gets a (1-byte) allocation so
           the caller can always free() it. */
        if (!w->buf && !(w->buf = malloc(1)))
            RA_ERROR("out of memory", RA_ENOMEM);
        *buf = w->buf;
        *len = w->len;
        memset(w, 0, sizeof *w);
        return RA_OK;
    }
    int bad = 0, e = 0;
    if (fflush(w->f) != 0) {
        bad = 1;
        e = errno;
    } else if (ferror(w->f)) {
        bad = 1;
        e = EIO;
    }
    if (fclose(w->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    w->f = NULL;
    if (!bad && rename(w->tmp, w->path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad)
        return writer_fail(w, e);
    free(w->tmp);
    free(w->path);
    memset(w, 0, sizeof *w);
    return RA_OK;
}

void ra_writer_abort(ra_writer *w)
{
    if (w->f)
        (void)fclose(w->f); /* the file is being discarded */
    if (w->tmp)
        (void)remove(w->tmp);
    free(w->tmp);
    free(w->path);
    free(w->buf);
    memset(w, 0, sizeof *w);
}

/* --- tensor sanity for the writers ------------------------------------------------ */

ra_status ra_io_check_tensor(const ra_tensor *t)
{
    if (!t)
        RA_ERROR("null tensor", RA_EINVAL);
    if (!t->name)
        RA_ERROR("tensor without a name", RA_EINVAL);
    const char *nm = t->name;
    if ((unsigned)t->dtype >= RA_NDTYPES)
        RA_ERRORF(RA_EINVAL, "tensor '%s': invalid dtype code %d", nm, (int)t->dtype);
    if (t->ndim < 0 || t->ndim > RA_MAX_DIMS)
        RA_ERRORF(RA_EINVAL, "tensor '%s': %d dimensions (at most %d supported)", nm, t->ndim,
                  RA_MAX_DIMS);
    int64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0)
            RA_ERRORF(RA_EINVAL, "tensor '%s': negative dimension %lld", nm,
                      (long long)t->shape[i]);
        if (t->shape[i] != 0 && numel > INT64_MAX / t->shape[i])
            RA_ERRORF(RA_EOVERFLOW, "tensor '%s': shape product overflows 64 bits", nm);
        numel *= t->shape[i];
    }
    size_t esz = ra_dtype_size(t->dtype);
    if (numel != t->numel || (uint64_t)numel > SIZE_MAX / esz || t->nbytes != (size_t)numel * esz)
        RA_ERRORF(RA_EINVAL, "tensor '%s': numel %lld / nbytes %zu disagree with its shape", nm,
                  (long long)t->numel, t->nbytes);
    if (t->nbytes && !t->data)
        RA_ERRORF(RA_EINVAL, "tensor '%s': no data buffer", nm);
    return RA_OK;
}

ra_status ra_file_write_atomic(const char *path, const uint8_t *buf, size_t len)
{
    ra_writer w;
    RA_TRY(ra_writer_open_file(&w, path));
    RA_TRY(ra_writer_write(&w, buf, len));
    return ra_writer_finish(&w, NULL, NULL);
}
