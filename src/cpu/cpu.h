/* Built-in CPU variants: the directory's one list. */
#ifndef RA_CPU_CPU_H
#define RA_CPU_CPU_H

#include <stddef.h>

#include "recaudit/plugin.h"

/* Every CPU variant row, in listing order: ra_cpu_variant_at(i) for i <
   ra_cpu_variant_count() (NULL past the end). */
size_t ra_cpu_variant_count(void);
const ra_variant *ra_cpu_variant_at(size_t i);

#endif
