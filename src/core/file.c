/* Whole-file and streaming file access: exact reads, atomic writes. */
#include "core/io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Reading: only regular files are accepted, because the format readers
 * validate header lengths and offsets against the file size before they
 * allocate anything, and that size must be known up front (fstat).  The
 * file is opened with O_NONBLOCK so that a FIFO (whose open would wait for
 * a writer for ever) or a device is refused by name instead of hanging;
 * the flag is cleared once the descriptor is known to be a regular file.
 * Every read is exact: asking for more bytes than are left is a format
 * error ("truncated"), reported before any fread; a short fread after that
 * check means the file shrank or the device failed, and is an I/O error.
 * Text files (gates, suites) must not hold a NUL byte: C string handling
 * would silently end the text there and drop the rows after it.
 *
 * Writing: a file is produced under a temporary name made by mkstemp in
 * the target's directory (O_EXCL, unpredictable, so nothing planted there
 * can redirect the write) and renamed over the target only after every
 * fwrite, the fflush and the fclose succeeded (ENOSPC and friends often
 * surface only at fflush/fclose).  The temporary gets the mode of the file
 * it replaces, or 0666 & ~umask for a new file, as open(2) would.  Any
 * failure removes the temporary, and so does SIGINT or SIGTERM: every live
 * temporary sits in a fixed table that a signal handler (installed on
 * first use, only where the signal still has its default action) unlinks
 * before letting the signal kill the process.  The table is lock-free
 * (atomic slot states), so the handler only calls unlink and raise, both
 * async-signal-safe.  No fsync: the guarantee is against failed writes,
 * interruptions and concurrent readers, not against power loss.
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

/* --- opening ------------------------------------------------------------------- */

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
                         : "not a plain file";
}
/* --- opening ----------------------------------------------------------------------- */

ra_status ra_file_open_regular(FILE **out, uint64_t *size, const char *path)
{
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
       writer for ever; the descriptor is refused below anyway. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        RA_ERRORF(RA_EIO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        RA_ERRORF(RA_EIO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        RA_ERRORF(RA_EIO, "'%s' is not a regular file (%s)", path, file_kind(sb.st_mode));
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        RA_ERRORF(RA_EOVERFLOW, "'%s': file size does not fit in memory sizes", path);
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        RA_ERRORF(RA_EIO, "cannot open '%s': %s", path, strerror(e));
    }
    *out = f;
    if (size)
        *size = (uint64_t)sb.st_size;
    return RA_OK;
}

/* --- readers ------------------------------------------------------------------- */

ra_status ra_reader_open_file(ra_reader *r, const char *path)
{
    memset(r, 0, sizeof *r);
    r->what = path;
    return ra_file_open_regular(&r->f, &r->size, path);
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

ra_status ra_file_read_text(char **text, const char *path)
{
    *text = NULL;
    uint8_t *data;
    size_t len;
    RA_TRY(ra_file_read_all(&data, &len, path));
    const uint8_t *nul = memchr(data, '\0', len);
    if (nul) {
        int line = 1;
        for (const uint8_t *p = data; p < nul; p++)
            line += *p == '\n';
        free(data);
        RA_ERRORF(RA_EFORMAT, "%s line %d: NUL byte (not a text file)", path, line);
    }
    char *t = realloc(data, len + 1);
    if (!t) {
        free(data);
        RA_ERRORF(RA_ENOMEM, "'%s': cannot allocate %zu bytes", path, len + 1);
    }
    t[len] = '\0';
    *text = t;
    return RA_OK;
}

int ra_file_same(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* --- temporaries removed on SIGINT / SIGTERM -------------------------------------- */

#define TMP_SLOTS 64
enum { SLOT_FREE, SLOT_CLAIMED, SLOT_ARMED };
static int tmp_state[TMP_SLOTS];
static char tmp_path[TMP_SLOTS][PATH_MAX];
static int handlers_installed;

static void on_fatal_signal(int sig)
{
    int saved = errno;
    for (int i = 0; i < TMP_SLOTS; i++)
        if (__atomic_load_n(&tmp_state[i], __ATOMIC_SEQ_CST) == SLOT_ARMED)
            (void)unlink(tmp_path[i]);
    errno = saved;
    /* SA_RESETHAND restored the default action: the re-raised signal,
       delivered when the handler returns, ends the process as it would
       have without us (same exit status for the shell). */
    (void)raise(sig);
}

/* Installs the handler once, leaving alone a signal that the program
   ignores or handles itself. */
static void install_handlers(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&handlers_installed, &expected, 1, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return;
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        (void)sigaction(sigs[i], &sa, NULL);
    }
}

/* A free slot, claimed (not yet armed), or -1. */
static int tmp_claim(void)
{
    install_handlers();
    for (int i = 0; i < TMP_SLOTS; i++) {
        int expected = SLOT_FREE;
        if (__atomic_compare_exchange_n(&tmp_state[i], &expected, SLOT_CLAIMED, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return i;
    }
    return -1;
}

static void tmp_release(int slot)
{
    if (slot >= 0)
        __atomic_store_n(&tmp_state[slot], SLOT_FREE, __ATOMIC_SEQ_CST);
}

/* --- writers --------------------------------------------------------------------- */

/* The mode a file written at path gets: that of the regular file it
   replaces, else what open(path, O_CREAT, 0666) would give. */
static mode_t output_mode(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        return sb.st_mode & 07777;
    /* umask can only be read by setting it; the suite writes files from
       one thread, so the brief change cannot affect another creation. */
    mode_t m = umask(022);
    umask(m);
    return 0666 & ~m;
}

ra_status ra_writer_open_file(ra_writer *w, const char *path)
{
    memset(w, 0, sizeof *w);
    w->slot = -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path) + 1 : 0; /* keeps the '/' */
    if (!*base)
        RA_ERRORF(RA_EINVAL, "cannot write '%s': it names a directory", path);
    char *dup = strdup(path);
    char *tmp = malloc((size_t)dirlen + 64);
    if (!dup || !tmp) {
        free(dup);
        free(tmp);
        RA_ERRORF(RA_ENOMEM, "cannot write '%s': out of memory", path);
    }
    /* ".<start of the name>.XXXXXX" in the same directory, so that rename
       stays within one file system; a leftover (SIGKILL) is recognisable. */
    snprintf(tmp, (size_t)dirlen + 64, "%.*s.%.40s.XXXXXX", dirlen, path, base);
    if (strlen(tmp) >= PATH_MAX) {
        free(dup);
        free(tmp);
        RA_ERRORF(RA_EINVAL, "cannot write '%s': path too long", path);
    }
    int slot = tmp_claim();
    if (slot < 0) {
        free(dup);
        free(tmp);
        RA_ERRORF(RA_EINTERNAL, "cannot write '%s': more than %d files open for writing", path,
                  TMP_SLOTS);
    }
    mode_t mode = output_mode(path);
    /* Blocking the two signals while the temporary is created and armed
       closes the window where it exists but the handler cannot see it. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    int fd = mkstemp(tmp);
    int e = errno;
    if (fd >= 0) {
        memcpy(tmp_path[slot], tmp, strlen(tmp) + 1);
        __atomic_store_n(&tmp_state[slot], SLOT_ARMED, __ATOMIC_SEQ_CST);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    FILE *f = NULL;
    if (fd >= 0 && fchmod(fd, mode) == 0)
        f = fdopen(fd, "wb");
    if (!f) {
        if (fd >= 0) {
            e = errno;
            close(fd);
            (void)unlink(tmp);
        }
        tmp_release(slot);
        free(dup);
        free(tmp);
        RA_ERRORF(RA_EIO, "cannot write '%s': %s", path, strerror(e));
    }
    w->f = f;
    w->path = dup;
    w->tmp = tmp;
    w->slot = slot;
    return RA_OK;
}

void ra_writer_init_mem(ra_writer *w)
{
    memset(w, 0, sizeof *w);
    w->slot = -1;
}

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
    tmp_release(w->slot); /* renamed: nothing left to clean up */
    free(w->tmp);
    free(w->path);
    ra_writer_init_mem(w);
    return RA_OK;
}

void ra_writer_abort(ra_writer *w)
{
    if (w->f)
        (void)fclose(w->f); /* the file is being discarded */
    if (w->tmp) {
        (void)unlink(w->tmp);
        tmp_release(w->slot);
    }
    free(w->tmp);
    free(w->path);
    free(w->buf);
    ra_writer_init_mem(w);
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

ra_status ra_temp_template(char *buf, size_t len, const char *name)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0])
        dir = "/tmp";
    const int n = snprintf(buf, len, "%s/%s.XXXXXX", dir, name);
    if (n < 0 || (size_t)n >= len)
        RA_ERRORF(RA_EOVERFLOW, "temporary file name under '%s' longer than %zu bytes", dir,
                  len ? len - 1 : 0);
    return RA_OK;
}
