/* The variant registry: built-in rows, plugins loaded with dlopen, glob lookup. */
#define _GNU_SOURCE 1 /* dladdr1 and RTLD_DL_SYMENT, to check a symbol's ELF type and size */
#include <config.h>

#include "audit/registry.h"

#include <ctype.h>
#include <math.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/capture.h"
#include "core/op.h"
#include "core/table.h"
#include "cpu/cpu.h"
#include "gpu/gpu.h"

/*
 * The registry is a growing array of ra_variant copies in registration
 * order.  Each row remembers which plugin added it (NULL for built-ins) so
 * that a failing validate row can print a reproduction command carrying the
 * same --plugin option.
 *
 * Plugins: dlopen(RTLD_NOW | RTLD_LOCAL) so that an unresolved symbol is
 * reported at load time (with dlerror's text) rather than as a crash in the
 * middle of a run, and so that two plugins may define the same internal
 * names.  The loader reads `ra_plugin_abi_version` first and refuses a
 * version it does not know (below 3, above its own) before calling into
 * the plugin.  An ABI-3 plugin's ra_variant ends before forward_backward
 * (ABI 4): while it registers, ra_registry_add reads only the fields up
 * to there and leaves the row without one.  It first checks, from the
 * symbol's ELF entry (dladdr1), that the symbol is a data object the size
 * of an int: a function or an array of that name would otherwise be read
 * as a garbage version number.  A plugin whose
 * ra_plugin_register fails, or that registers nothing, is unloaded and the
 * rows it had added are removed, so a failed load leaves the registry as it
 * was.  Handles of loaded plugins are closed only when the registry is
 * freed: the variant rows point into them.
 *
 * ra_registry_new adds the built-in rows of each directory's one list
 * (src/cpu/, src/gpu/; a build without CUDA has an empty GPU list), so
 * adding a built-in variant never touches this file.
 *
 * Variant rows are validated on entry (name syntax, an operation of the
 * table, capability bits that operation defines, forward present,
 * capabilities consistent with the function pointers, forward_backward only
 * beside a backward) because a plugin is foreign code: a bad row is refused
 * with a message naming it instead of crashing later in validate.
 */

#define RA_VARIANT_NAME_MAX 80
/* The oldest plugin ABI the loader accepts: ABI 4 only appended a field. */
#define RA_PLUGIN_ABI_OLDEST 3

struct ra_registry {
    size_t n, cap;
    ra_variant *rows;
    char **origin; /* plugin path per row, NULL for built-ins */
    size_t nhandles, caphandles;
    void **handles;
    const char *loading; /* path of the plugin being registered, or NULL */
    int loading_abi;     /* its ra_plugin_abi_version */
};

ra_status ra_registry_new_empty(ra_registry **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        RA_ERROR("out of memory", RA_ENOMEM);
    return RA_OK;
}

/* The built-in lists, one per directory. */
static const struct {
    size_t (*count)(void);
    const ra_variant *(*at)(size_t i);
} builtin[] = {
    {ra_cpu_variant_count, ra_cpu_variant_at},
    {ra_gpu_variant_count, ra_gpu_variant_at},
};

ra_status ra_registry_new(ra_registry **out)
{
    RA_TRY(ra_registry_new_empty(out));
    ra_status st = RA_OK;
    for (size_t l = 0; st == RA_OK && l < sizeof builtin / sizeof builtin[0]; l++)
        for (size_t i = 0; st == RA_OK && i < builtin[l].count(); i++)
            st = ra_registry_add(*out, builtin[l].at(i));
    if (st != RA_OK) {
        ra_registry_free(*out);
        *out = NULL;
    }
    return st;
}

void ra_registry_free(ra_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->origin[i]);
    free(r->rows);
    free(r->origin);
    for (size_t i = r->nhandles; i-- > 0;)
        dlclose(r->handles[i]);
    free(r->handles);
    free(r);
}

size_t ra_registry_count(const ra_registry *r) { return r->n; }

const ra_variant *ra_registry_at(const ra_registry *r, size_t i)
{
    return i < r->n ? &r->rows[i] : NULL;
}

const char *ra_registry_origin(const ra_registry *r, size_t i)
{
    return i < r->n ? r->origin[i] : NULL;
}

const ra_variant *ra_registry_find(const ra_registry *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].name, name) == 0)
            return &r->rows[i];
    return NULL;
}

const char *ra_registry_origin_of(const ra_registry *r, const ra_variant *v)
{
    if (v < r->rows || v >= r->rows + r->n)
        return NULL;
    return r->origin[v - r->rows];
}

int ra_glob_match(const char *pattern, const char *name) { return fnmatch(pattern, name, 0) == 0; }

size_t ra_registry_count_matching(const ra_registry *r, const char *pattern)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += ra_glob_match(pattern, r->rows[i].name);
    return n;
}

/* Names go into TSV files, tables and shell commands: keep them to a
   conservative alphabet so that none of those needs quoting. */
static int name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > RA_VARIANT_NAME_MAX)
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
            return 0;
    return 1;
}

int ra_pclass_known(const char *pclass)
{
    static const char *const known[] = {RA_PCLASSES};
    for (size_t i = 0; pclass && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i], pclass) == 0)
            return 1;
    return 0;
}

double ra_pclass_unit(const char *pclass)
{
    static const struct {
        const char *name;
        int log2u;
    } units[] = {{"f64", -53},    {"f32", -24},  {"ieee", -24},
                 {"tf32x3", -24}, {"tf32", -11}, {"bf16", -8}};
    for (size_t i = 0; pclass && i < sizeof units / sizeof units[0]; i++)
        if (strcmp(units[i].name, pclass) == 0)
            return ldexp(1.0, units[i].log2u);
    return NAN;
}

ra_status ra_registry_add(ra_registry *r, const ra_variant *v)
{
    /* While a plugin registers, the loader prefixes the plugin's path. */
    const char *from = r->loading ? "" : "built-in variants: ";
    if (!v)
        RA_ERRORF(RA_EINVAL, "%sra_registry_add called with no variant", from);
    /* An ABI-3 struct ends where forward_backward begins: reading that
       field would read past the plugin's object. */
    ra_variant abi3;
    if (r->loading && r->loading_abi == 3) {
        memcpy(&abi3, v, offsetof(ra_variant, forward_backward));
        abi3.forward_backward = NULL;
        v = &abi3;
    }
    if (!name_ok(v->name))
        RA_ERRORF(RA_EINVAL, "%svariant name '%s' is not 1-%d characters of [A-Za-z0-9._-]", from,
                  v->name ? v->name : "(null)", RA_VARIANT_NAME_MAX);
    const ra_op *op = ra_op_find(v->op);
    if (!op)
        RA_ERRORF(RA_EINVAL,
                  "%svariant '%s': op '%s' is not an operation of this recaudit (see 'recaudit "
                  "list ops')",
                  from, v->name, v->op ? v->op : "(null)");
    if (!v->doc || !*v->doc || strchr(v->doc, '\n') || strchr(v->doc, '\t'))
        RA_ERRORF(RA_EINVAL, "%svariant '%s': doc must be one non-empty line", from, v->name);
    if (!ra_pclass_known(v->pclass))
        RA_ERRORF(RA_EINVAL,
                  "%svariant '%s': precision class '%s' is not one of f64, f32, ieee, tf32, "
                  "tf32x3, bf16 (recaudit/plugin.h)",
                  from, v->name, v->pclass ? v->pclass : "(null)");
    if (v->device != RA_CPU && v->device != RA_CUDA)
        RA_ERRORF(RA_EINVAL, "%svariant '%s': device %d is neither RA_CPU nor RA_CUDA", from,
                  v->name, (int)v->device);
    const unsigned known = ra_op_caps_known(op);
    if (v->caps & ~known)
        RA_ERRORF(RA_EINVAL, "%svariant '%s': capability bits 0x%x are not defined for op %s",
                  from, v->name, v->caps & ~known, op->name);
    if (!(v->caps & RA_FWD) || !v->forward)
        RA_ERRORF(RA_EINVAL, "%svariant '%s': every variant needs RA_FWD and a forward", from,
                  v->name);
    if (!(v->caps & RA_BWD) != !v->backward)
        RA_ERRORF(RA_EINVAL, "%svariant '%s': RA_BWD and the backward function must come together",
                  from, v->name);
    if (v->forward_backward && !(v->caps & RA_BWD))
        RA_ERRORF(RA_EINVAL,
                  "%svariant '%s': forward_backward needs RA_BWD and a backward (it must give "
                  "their bits)",
                  from, v->name);
    const ra_variant *dup = ra_registry_find(r, v->name);
    if (dup) {
        const char *by = ra_registry_origin_of(r, dup);
        RA_ERRORF(RA_EINVAL, "%svariant '%s' is already registered (by %s)", from, v->name,
                  by ? by : "the built-in variants");
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        ra_variant *rows = realloc(r->rows, cap * sizeof *rows);
        if (!rows)
            RA_ERROR("out of memory", RA_ENOMEM);
        r->rows = rows;
        char **origin = realloc(r->origin, cap * sizeof *origin);
        if (!origin)
            RA_ERROR("out of memory", RA_ENOMEM);
        r->origin = origin;
        r->cap = cap;
    }
    char *o = NULL;
    if (r->loading && !(o = strdup(r->loading)))
        RA_ERROR("out of memory", RA_ENOMEM);
    r->rows[r->n] = *v;
    r->origin[r->n] = o;
    r->n++;
    return RA_OK;
}

/* Removes rows [from, n): undoes a failed plugin registration. */
static void truncate_rows(ra_registry *r, size_t from)
{
    while (r->n > from)
        free(r->origin[--r->n]);
}

/* ra_plugin_abi_version must be an int object: its ELF symbol entry gives
   the type (STT_OBJECT, not a function) and the size. */
static ra_status check_abi_symbol(const void *addr, const char *path)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
        RA_ERRORF(RA_EUNSUPPORTED,
                  "plugin %s: cannot find the ELF symbol entry of 'ra_plugin_abi_version'", path);
    int type = ELF64_ST_TYPE(sym->st_info);
    if (type != STT_OBJECT || sym->st_size != sizeof(int))
        RA_ERRORF(RA_EUNSUPPORTED,
                  "plugin %s: 'ra_plugin_abi_version' is %s of %llu bytes, not an int (define "
                  "'const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION;')",
                  path,
                  type == STT_FUNC     ? "a function"
                  : type == STT_OBJECT ? "an object"
                                       : "a symbol",
                  (unsigned long long)sym->st_size);
    return RA_OK;
}

ra_status ra_registry_load_plugin(ra_registry *r, const char *path)
{
    if (!path || !*path)
        RA_ERROR("--plugin: empty path", RA_EINVAL);
    /* dlopen searches the library path for a bare name; a user who types
       --plugin libmine.so means the file in the current directory. */
    char *full = NULL;
    if (!strchr(path, '/')) {
        full = malloc(strlen(path) + 3);
        if (!full)
            RA_ERROR("out of memory", RA_ENOMEM);
        strcpy(full, "./");
        strcat(full, path);
    }
    dlerror();
    void *h = dlopen(full ? full : path, RTLD_NOW | RTLD_LOCAL);
    free(full);
    if (!h) {
        const char *e = dlerror();
        RA_ERRORF(RA_EIO, "plugin %s: cannot load: %s", path, e ? e : "unknown dlopen error");
    }
    ra_status st = RA_OK;
    dlerror();
    const int *abi = (const int *)dlsym(h, "ra_plugin_abi_version");
    if (!abi) {
        RA_REPORTF(RA_ENOTFOUND,
                   "plugin %s: no symbol 'ra_plugin_abi_version' (define "
                   "'const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION;')",
                   path);
        st = RA_ENOTFOUND;
        goto fail;
    }
    if ((st = check_abi_symbol(abi, path)) != RA_OK)
        goto fail;
    if (*abi < RA_PLUGIN_ABI_OLDEST || *abi > RA_PLUGIN_ABI_VERSION) {
        /* Say what changed since the plugin's version, so its author
           knows what the rebuild involves. */
        const char *why = *abi < 3 ? ": ABI 3 passes each function its own row (self) and a "
                                     "data pointer, and defines capability bits per operation "
                                     "(recaudit/gdn.h)"
                                   : "";
        RA_REPORTF(RA_EUNSUPPORTED,
                   "plugin %s: ABI version %d, this recaudit expects %d to %d (rebuild it "
                   "against this recaudit's recaudit/plugin.h)%s",
                   path, *abi, RA_PLUGIN_ABI_OLDEST, RA_PLUGIN_ABI_VERSION, why);
        st = RA_EUNSUPPORTED;
        goto fail;
    }
    /* POSIX sanctions converting dlsym's object pointer to a function
       pointer; the union keeps -Wpedantic quiet about it. */
    union {
        void *obj;
        ra_plugin_register_fn *fn;
    } reg;
    reg.obj = dlsym(h, "ra_plugin_register");
    if (!reg.obj) {
        RA_REPORTF(RA_ENOTFOUND, "plugin %s: no symbol 'ra_plugin_register'", path);
        st = RA_ENOTFOUND;
        goto fail;
    }
    if (r->nhandles == r->caphandles) {
        size_t cap = r->caphandles ? 2 * r->caphandles : 4;
        void **hs = realloc(r->handles, cap * sizeof *hs);
        if (!hs) {
            RA_REPORTF(RA_ENOMEM, "out of memory");
            st = RA_ENOMEM;
            goto fail;
        }
        r->handles = hs;
        r->caphandles = cap;
    }
    size_t before = r->n;
    r->loading = path;
    r->loading_abi = *abi;
    /* The plugin (or ra_registry_add) reports the reason; it is captured
       and reported once, prefixed with the plugin. */
    ra_error_handler_t *prev = ra_capture_begin();
    st = reg.fn(r);
    ra_capture_end(prev);
    r->loading = NULL;
    if (st == RA_OK && r->n == before) {
        RA_REPORTF(RA_EINVAL, "plugin %s: ra_plugin_register added no variant", path);
        st = RA_EINVAL;
    } else if (st != RA_OK) {
        RA_REPORTF(st, "plugin %s: ra_plugin_register failed (%s): %s", path, ra_strstatus(st),
                   *ra_last_error() ? ra_last_error() : "no reason given");
    }
    if (st != RA_OK) {
        truncate_rows(r, before);
        goto fail;
    }
    r->handles[r->nhandles++] = h;
    return RA_OK;
fail:
    dlclose(h);
    return st;
}

ra_status ra_registry_table(ra_table **out, const ra_registry *r, const char *pattern)
{
    static const char *const headers[] = {"name", "op",  "device", "class",
                                          "caps", "doc", "from"};
    RA_TRY(ra_table_new(out, 7, headers));
    for (size_t i = 0; i < r->n; i++) {
        const ra_variant *v = &r->rows[i];
        if (pattern && !ra_glob_match(pattern, v->name))
            continue;
        char caps[64];
        ra_op_caps_format(caps, sizeof caps, ra_op_find(v->op), v->caps);
        const char *cells[] = {v->name,
                               v->op,
                               v->device == RA_CUDA ? "cuda" : "cpu",
                               v->pclass,
                               caps,
                               v->doc,
                               r->origin[i] ? r->origin[i] : "built-in"};
        ra_status st = ra_table_add_row(*out, cells);
        if (st != RA_OK) {
            ra_table_free(*out);
            *out = NULL;
            return st;
        }
    }
    return RA_OK;
}

ra_status ra_registry_new_with_plugins(ra_registry **out, const char *const *plugins)
{
    RA_TRY(ra_registry_new(out));
    for (size_t i = 0; plugins && plugins[i]; i++) {
        ra_status st = ra_registry_load_plugin(*out, plugins[i]);
        if (st != RA_OK) {
            ra_registry_free(*out);
            *out = NULL;
            return st;
        }
    }
    return RA_OK;
}

ra_status ra_list_variants(ra_table **out, const char *const *plugins)
{
    ra_registry *r;
    RA_TRY(ra_registry_new_with_plugins(&r, plugins));
    ra_status st = ra_registry_table(out, r, NULL);
    ra_registry_free(r);
    return st;
}
