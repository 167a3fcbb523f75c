/* recaudit public header of the affine scan family (scan.linear, scan.affine, scan.log). */
#ifndef RECAUDIT_SCAN_H
#define RECAUDIT_SCAN_H

/*
 * What a scan variant declares in ra_variant.caps beyond RA_FWD/RA_BWD
 * (recaudit/plugin.h); docs/scan.md defines the tensors.
 */

#include "recaudit/plugin.h"

enum {
    /* Requirement, not a capability: a backward that reconstructs states
       by inverting steps (reversal) is defined for conformal transitions
       only, A_t^T A_t = s_t^2 I with s_t >= 1/2 (the rotation mixers' A_t =
       gamma R(theta)); elsewhere sigma_min(A_t) can be anything and its
       error (about sigma_min^-L over a span of L steps) unbounded.  A case
       outside is skipped, saying so.  Checked to within 2^-6 relative, so
       transitions stored in bf16 qualify. */
    RA_SCAN_NEEDS_CONFORMAL = RA_CAP_OP(0)
};

#endif
