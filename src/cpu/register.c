/* Registration of the built-in CPU variants. */

/*
 * Kept apart from the variant table so that programs using the table alone
 * (the CPU tests) do not pull in the registry.  Rows are added in table
 * order; the first refusal (a duplicate name) stops and is passed up.
 */

#include "cpu/cpu.h"

#include "cpu/gdn_variants.h"

ra_status ra_cpu_register(ra_registry *r)
{
    for (size_t i = 0; i < ra_cpu_gdn_nvariants; i++)
        RA_TRY(ra_registry_add(r, &ra_cpu_gdn_variants[i]));
    return RA_OK;
}
