/* Tensor file formats: .safetensors and NumPy .npy. */
#ifndef RA_CORE_IO_H
#define RA_CORE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
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

#endif
