/* The operations the suite knows: one table, name and one-line doc. */
#include "core/ops.h"

#include <stddef.h>
#include <string.h>

/*
 * Add a row when an operation gains a case layout (documented names (docs/gdn.md) the
 * tensors); keep the doc to one line, since `recaudit list ops` prints it
 * beside the name.
 */

static const ra_op_info ops[] = {
    {"gdn", "gated delta rule: q,k [B,T,Hk,K], v [B,T,Hv,V], g, beta [B,T,Hv], "
            "optional h0 -> o [B,T,Hv,V], ht [B,Hv,K,V] (docs/gdn.md)"},
    {NULL, NULL},
};

const ra_op_info *ra_ops(void) { return ops; }

const ra_op_info *ra_op_find(const char *name)
{
    for (const ra_op_info *o = ops; name && o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o;
    return NULL;
}
