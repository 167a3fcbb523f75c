/* The variant registry: built-in variants, plugins, lookup by glob. */
#ifndef RA_AUDIT_REGISTRY_H
#define RA_AUDIT_REGISTRY_H

#include <stddef.h>

#include "core/status.h"
#include "recaudit/plugin.h"

/*
 * One table of ra_variant rows (include/recaudit/plugin.h), in registration
 * order: built-in CPU variants first, then CUDA ones (when built), then
 * plugins in the order given on the command line.
 */

/* A registry holding every built-in variant. */
ra_status ra_registry_new(ra_registry **out);
void ra_registry_free(ra_registry *r);

size_t ra_registry_count(const ra_registry *r);
const ra_variant *ra_registry_at(const ra_registry *r, size_t i);
const ra_variant *ra_registry_find(const ra_registry *r, const char *name);

/* 1 if pclass is one of RA_PCLASSES (recaudit/plugin.h), 0 otherwise or NULL. */
int ra_pclass_known(const char *pclass);
/* The unit roundoff of a precision class's arithmetic: 2^-53 (f64),
   2^-24 (f32, ieee, tf32x3: 3xTF32 products sit at fp32's), 2^-11
   (tf32: 10-bit operands), 2^-8 (bf16: 7-bit operands and storage); NaN
   for an unknown class.  ulp_cls (audit.h) counts errors in it. */
double ra_pclass_unit(const char *pclass);

/* dlopen()s a plugin, checks ra_plugin_abi_version and calls
   ra_plugin_register; errors name the file and the missing symbol or
   version mismatch. */
ra_status ra_registry_load_plugin(ra_registry *r, const char *path);

/* Shell-style glob match (fnmatch, no flags): 1 if name matches. */
int ra_glob_match(const char *pattern, const char *name);

/* --- additions used by the audit commands --------------------------------------- */

/* A registry with no variant at all (tests, or a plugin-only listing). */
ra_status ra_registry_new_empty(ra_registry **out);

/* Path of the plugin that registered row i / variant v (NULL: built-in);
   reproduction commands repeat it as --plugin. */
const char *ra_registry_origin(const ra_registry *r, size_t i);
const char *ra_registry_origin_of(const ra_registry *r, const ra_variant *v);

/* Number of variants whose name matches the glob. */
size_t ra_registry_count_matching(const ra_registry *r, const char *pattern);

/* `recaudit list variants`: columns name, op, device, class, caps, doc, from
   (built-in or the plugin path); pattern NULL lists every row. */
struct ra_table;
ra_status ra_registry_table(struct ra_table **out, const ra_registry *r, const char *pattern);

/* ra_registry_new, then each plugin of the NULL-ended list (NULL: none)
   in order; nothing is left allocated on failure. */
ra_status ra_registry_new_with_plugins(ra_registry **out, const char *const *plugins);

/* The `recaudit list variants` row (ra_list_fill_fn, src/cli/commands.h):
   built-in variants plus the plugins', all of them. */
ra_status ra_list_variants(struct ra_table **out, const char *const *plugins);

#endif
