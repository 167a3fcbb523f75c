/* Ordered string maps (ra_kv of recaudit/types.h): case parameters, file metadata. */
#ifndef RA_CORE_KV_H
#define RA_CORE_KV_H

#include "core/status.h"
#include "recaudit/types.h"

void ra_kv_init(ra_kv *kv);
void ra_kv_clear(ra_kv *kv);
/* Sets (copying both strings); an existing key keeps its position. */
ra_status ra_kv_set(ra_kv *kv, const char *key, const char *val);
/* Adds key at the end without looking for it (O(1)): only for a key known
   to be absent, e.g. from a source whose keys are distinct. */
ra_status ra_kv_append(ra_kv *kv, const char *key, const char *val);
ra_status ra_kv_setf(ra_kv *kv, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *ra_kv_get(const ra_kv *kv, const char *key); /* NULL if absent */
int ra_kv_remove(ra_kv *kv, const char *key);            /* 1 if removed */
ra_status ra_kv_copy(ra_kv *dst, const ra_kv *src);

#endif
