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

/* dlopen()s a plugin, checks ra_plugin_abi_version and calls
   ra_plugin_register; errors name the file and the missing symbol or
   version mismatch. */
ra_status ra_registry_load_plugin(ra_registry *r, const char *path);

/* Shell-style glob match (fnmatch, no flags): 1 if name matches. */
int ra_glob_match(const char *pattern, const char *name);

#endif
