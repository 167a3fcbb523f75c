/* The built-in CPU variants: one list over the operations' tables. */

/*
 * Each operation keeps its CPU rows in a table of its own (gdn_variants.c);
 * this list strings the tables together for the registry, which reads
 * rows only, so adding a CPU variant is one row in its operation's table
 * and adding an operation's CPU variants is one line here.
 */

#include "cpu/cpu.h"

#include "cpu/gdn_variants.h"
#include "cpu/scan_variants.h"
#include "cpu/glr_variants.h"
#include "cpu/bigdn_variants.h"

static const struct {
    const ra_variant *rows;
    const size_t *n;
} tables[] = {
    {ra_cpu_gdn_variants, &ra_cpu_gdn_nvariants},
    {ra_cpu_scan_variants, &ra_cpu_scan_nvariants},
    {ra_cpu_glr_variants, &ra_cpu_glr_nvariants},
    {ra_cpu_bigdn_variants, &ra_cpu_bigdn_nvariants},
};

#define NTABLES (sizeof tables / sizeof tables[0])

size_t ra_cpu_variant_count(void)
{
    size_t n = 0;
    for (size_t t = 0; t < NTABLES; t++)
        n += *tables[t].n;
    return n;
}

const ra_variant *ra_cpu_variant_at(size_t i)
{
    for (size_t t = 0; t < NTABLES; t++) {
        if (i < *tables[t].n)
            return &tables[t].rows[i];
        i -= *tables[t].n;
    }
    return NULL;
}
