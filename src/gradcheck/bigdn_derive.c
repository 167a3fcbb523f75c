/* The bidirectional frame GDN family's formula sets: seed 003's published phase formulas. */
#include <stddef.h>

#include "gradcheck/bigdn_gc.h"
#include "gradcheck/derive.h"

const ra_derive_set *const ra_bigdn_derive_sets[] = {NULL};
const ra_derive_set *const ra_bigdn_core_derive_sets[] = {NULL};
