/* The scan family's gradient-check hooks (ra_gc_op rows of scan.linear, scan.affine, scan.log). */
#ifndef RA_GRADCHECK_SCAN_GC_H
#define RA_GRADCHECK_SCAN_GC_H

#include "gradcheck/gradcheck.h"

extern const ra_gc_op ra_gc_op_scan_linear, ra_gc_op_scan_affine, ra_gc_op_scan_log;

#endif
