/* Tensor file formats: .safetensors and NumPy .npy. */
#ifndef RA_CORE_IO_H
#define RA_CORE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "core/kv.h"
#include "core/tensor.h"

/*
 * safetensors: 8-byte little-endian header length N, N bytes of JSON (a
 * "__metadata__" string map plus, per tensor, {"dtype", "shape",
 * "data_offsets": [begin, end]} relative to the data area), then the data.
 * Readers validate everything before trusting it: the header length against
 * the file size, the JSON (duplicate keys refused), dtypes F64/F32/BF16/F16,
 * shapes (non-negative, product overflow), end - begin == numel * size,
 * offsets within the data area, and regions that neither overlap nor leave
 * holes (sorted by begin they tile the data area exactly).  Every error
 * names the file ("what") and the tensor or field.
 *
 * npy: magic "\x93NUMPY", version 1.0 (2-byte header length) or 2.0/3.0
 * (4-byte), a Python-literal dict {'descr', 'fortran_order', 'shape'}
 * padded to a 64-byte boundary (16 in old writers; any is accepted).
 * Dtypes '<f8', '<f4', '<f2' (and '|'/'=' spellings on little-endian
 * hosts); big-endian, Fortran order and other dtypes are refused by name.
 *
 * Writers produce the file under a temporary name and rename it, so a
 * failed write never leaves a partial file behind.
 *
 * Status codes: a file recaudit cannot read (malformed, truncated, or a
 * valid file using a dtype/layout outside the list above) is RA_EFORMAT;
 * size arithmetic that overflows is RA_EOVERFLOW; open/read/write failures
 * are RA_EIO; writing bf16 to .npy is RA_EUNSUPPORTED; a tensor or metadata
 * entry that cannot be written (inconsistent sizes, duplicate or reserved
 * name, invalid UTF-8) is RA_EINVAL.  `what` names the source in messages
 * (NULL gives a generic "safetensors buffer" / "npy buffer").
 */

/* Parse a safetensors image held in memory. Tensors are appended to ts in
   file order of their data; metadata (if meta != NULL) goes to meta. */
ra_status ra_safetensors_parse(ra_tensors *ts, ra_kv *meta, const uint8_t *buf,
                               size_t len, const char *what);
ra_status ra_safetensors_read(ra_tensors *ts, ra_kv *meta, const char *path);
/* Serialize to a malloc'ed buffer (caller frees). Tensors are laid out in
   the order of ts; meta may be NULL. */
ra_status ra_safetensors_serialize(uint8_t **buf, size_t *len, const ra_tensors *ts,
                                   const ra_kv *meta);
ra_status ra_safetensors_write(const char *path, const ra_tensors *ts, const ra_kv *meta);

ra_status ra_npy_parse(ra_tensor **out, const uint8_t *buf, size_t len,
                       const char *name, const char *what);
ra_status ra_npy_read(ra_tensor **out, const char *path, const char *name);
/* Version 1.0 header when it fits (it always does for <= 8 dims), else 2.0.
   bf16 has no NumPy dtype and is refused. */
ra_status ra_npy_serialize(uint8_t **buf, size_t *len, const ra_tensor *t);
ra_status ra_npy_write(const char *path, const ra_tensor *t);

/* Whole file into memory; writes atomically via a temporary + rename. */
ra_status ra_file_read_all(uint8_t **buf, size_t *len, const char *path);
ra_status ra_file_write_atomic(const char *path, const uint8_t *buf, size_t len);

/* buf <- "DIR/NAME.XXXXXX", a template for mkstemp/mkdtemp, DIR being
   $TMPDIR or, where it is unset or empty, /tmp (POSIX's default);
   RA_EOVERFLOW when it does not fit in len bytes. */
ra_status ra_temp_template(char *buf, size_t len, const char *name);
/* Opens a regular file for reading (a FIFO, device or directory is refused
   naming the path, without blocking); *size gets its size when size != NULL. */
ra_status ra_file_open_regular(FILE **f, uint64_t *size, const char *path);
/* A text file as a NUL-terminated string (caller frees); a NUL byte inside
   is RA_EFORMAT "PATH line N: NUL byte". */
ra_status ra_file_read_text(char **text, const char *path);
/* 1 when a and b both exist and are the same file (device and inode, after
   following symbolic links: hard and symbolic links count as the same). */
int ra_file_same(const char *a, const char *b);

/* --- streaming sources and sinks ---------------------------------------------
 * The format code reads through an ra_reader and writes through an
 * ra_writer, so the in-memory (parse/serialize) and on-disk (read/write)
 * entry points share one implementation and large files go straight between
 * the file and the tensor buffers, never through a second whole-file copy. */

/* A regular file (size known up front, from fstat) or a memory image. */
typedef struct ra_reader {
    FILE *f;            /* NULL for a memory image */
    const uint8_t *buf; /* the memory image */
    uint64_t size, pos;
    const char *what; /* file name or description, for messages */
} ra_reader;

ra_status ra_reader_open_file(ra_reader *r, const char *path);
void ra_reader_init_mem(ra_reader *r, const uint8_t *buf, size_t len, const char *what);
/* Exactly n bytes into dst (dst may be NULL when n == 0).  Fewer than n
   bytes left: RA_EFORMAT "<what>: truncated: <part> needs n bytes, m left";
   a failing read: RA_EIO. */
ra_status ra_reader_read(ra_reader *r, void *dst, size_t n, const char *part);
void ra_reader_close(ra_reader *r); /* closes the file (read-only: cannot fail) */

/* A file written atomically (a mkstemp temporary in the target directory,
   given the mode of the file it replaces, renamed on success, removed on
   failure and on SIGINT/SIGTERM) or a growing memory buffer. */
typedef struct ra_writer {
    FILE *f;      /* file mode: the open temporary */
    char *path;   /* file mode: final name */
    char *tmp;    /* file mode: temporary name */
    uint8_t *buf; /* memory mode */
    size_t len, cap;
    int slot; /* file mode: its entry in the signal cleanup table */
} ra_writer;

ra_status ra_writer_open_file(ra_writer *w, const char *path);
void ra_writer_init_mem(ra_writer *w);
ra_status ra_writer_write(ra_writer *w, const void *p, size_t n);
/* File mode: flush, close, rename over path (buf/len ignored, may be NULL).
   Memory mode: hands the buffer to the caller (*buf, *len).  On failure the
   temporary is removed / the buffer freed.  Either way w is released. */
ra_status ra_writer_finish(ra_writer *w, uint8_t **buf, size_t *len);
/* Drops everything written (removes the temporary). */
void ra_writer_abort(ra_writer *w);

/* A tensor is internally consistent (dtype code, 0..RA_MAX_DIMS dims,
   numel and nbytes agree with the shape, data present): RA_EINVAL naming
   it otherwise.  Writers call it before emitting anything. */
ra_status ra_io_check_tensor(const ra_tensor *t);

#endif
