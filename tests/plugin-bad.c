/* Deliberately broken plugins for the loader's error paths (tests/plugin-errors.sh). */

/*
 * One source, seven shared objects (examples/plugin/local.mk):
 *   -DBAD_ABI   exports ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION + 1000
 *   -DNEXT_ABI  exports RA_PLUGIN_ABI_VERSION + 1, as a plugin built for the
 *               next recaudit would
 *   -DOLD_ABI   exports ra_plugin_abi_version = 2, as a plugin built before
 *               rows carried their data pointer would
 *   -DNO_ABI    exports ra_plugin_register but no ra_plugin_abi_version
 *   -DFUNC_ABI  exports ra_plugin_abi_version as a function, and
 *   -DSTR_ABI   as the string "3": neither is an int, and reading one as
 *               an int would give a garbage version (tests/regress-abi-symbol-type.sh)
 *   -DBAD_ROW   registers a variant whose name has a space in it, which
 *               ra_registry_add must refuse (and the loader roll back)
 * None of them runs anything: the loader must stop before or at
 * registration and say why, naming the file.
 */

#include "recaudit/plugin.h"

#if defined(FUNC_ABI)
int ra_plugin_abi_version(void);
int ra_plugin_abi_version(void) { return RA_PLUGIN_ABI_VERSION; }
#elif defined(STR_ABI)
const char ra_plugin_abi_version[] = "3";
#elif !defined(NO_ABI)
#if defined(BAD_ABI)
const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION + 1000;
#elif defined(NEXT_ABI)
const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION + 1;
#elif defined(OLD_ABI)
const int ra_plugin_abi_version = 2;
#else
const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION;
#endif
#endif

static ra_status fwd(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    return RA_EUNSUPPORTED;
}

ra_status ra_plugin_register(ra_registry *r)
{
#ifdef BAD_ROW
    static const ra_variant ok = {"gdn.bad.ok", "gdn", "a valid row added before the bad one",
                                  RA_CPU,       "f64", RA_FWD,
                                  NULL,         fwd,   NULL,
                                  NULL};
    static const ra_variant bad = {
        "gdn.bad name", "gdn", "a name with a space", RA_CPU, "f64", RA_FWD, NULL, fwd, NULL, NULL};
    ra_status st = ra_registry_add(r, &ok);
    return st != RA_OK ? st : ra_registry_add(r, &bad);
#else
    (void)r;
    (void)fwd;
    return RA_OK;
#endif
}
