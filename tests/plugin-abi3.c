/* A plugin built for ABI 3, for the loader's compatibility (tests/plugin-abi3.sh). */

/*
 * ABI 4 appended forward_backward to struct ra_variant; an ABI-3 plugin's
 * rows end before it.  This one registers the example variant
 * (examples/plugin/gdn_example.c, its entry points renamed) as gdn.abi3.f64
 * in ABI 3's layout, and right after the row, where ABI 4 has
 * forward_backward, a function that fails if anyone calls it: a loader that
 * read the row as ABI 4's would take that function for the row's
 * forward_backward, and bench would call it.
 */

#include <stddef.h>

#define ra_plugin_abi_version example_abi_version
#define ra_plugin_register example_register
#include "gdn_example.c"
#undef ra_plugin_abi_version
#undef ra_plugin_register

const int ra_plugin_abi_version = 3;

/* ABI 3's struct ra_variant. */
struct ra_variant_abi3 {
    const char *name;
    const char *op;
    const char *doc;
    ra_device device;
    const char *pclass;
    unsigned caps;
    const void *data;
    ra_variant_fn *forward;
    ra_variant_fn *backward;
};

static ra_status not_mine(const ra_variant *self, const ra_case *c, ra_tensors *out, ra_run *run)
{
    (void)self, (void)c, (void)out, (void)run;
    FAIL(RA_EINTERNAL, "the loader read past an ABI-3 row: it called the bytes after it as "
                       "forward_backward");
}

static const struct {
    struct ra_variant_abi3 row;
    ra_variant_fn *after; /* where ABI 4's forward_backward would be */
} abi3 = {
    {"gdn.abi3.f64", "gdn", "example plugin built for ABI 3", RA_CPU, "f64",
     RA_FWD | RA_BWD | RA_GDN_CAP_H0 | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL, NULL, forward, backward},
    not_mine,
};

_Static_assert(offsetof(__typeof__(abi3), after) == offsetof(ra_variant, forward_backward),
               "the trap must lie where ABI 4's forward_backward does");

ra_status ra_plugin_register(ra_registry *r)
{
    return ra_registry_add(r, (const ra_variant *)&abi3.row);
}
