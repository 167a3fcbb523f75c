/* Built-in CPU variants: registration. */
#ifndef RA_CPU_CPU_H
#define RA_CPU_CPU_H

#include "core/status.h"
#include "recaudit/plugin.h"

/* Adds every CPU variant (gdn.cpu.*) to the registry. */
ra_status ra_cpu_register(ra_registry *r);

#endif
