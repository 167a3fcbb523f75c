/* recaudit public header of the gated delta rule: its capability bits. */
#ifndef RECAUDIT_GDN_H
#define RECAUDIT_GDN_H

/*
 * What a gdn variant declares in ra_variant.caps beyond RA_FWD/RA_BWD
 * (recaudit/plugin.h).  The audit skips, with the reason, every case that
 * needs a capability the variant lacks; docs/gdn.md defines the tensors.
 */

#include "recaudit/plugin.h"

enum {
    RA_GDN_CAP_H0 = RA_CAP_OP(0),     /* accepts an initial state h0 */
    RA_GDN_CAP_GQA = RA_CAP_OP(1),    /* grouped value heads (Hv a multiple of Hk, > Hk) */
    RA_GDN_CAP_L2NORM = RA_CAP_OP(2), /* in-kernel L2 normalisation of q and k */
    RA_GDN_CAP_TAIL = RA_CAP_OP(3),   /* sequence length not a multiple of 64 */
    /* Requirement, not a capability: the variant is only defined for
       L2-normalised keys (NKI gdn_cte: "q/k MUST arrive L2-normalized";
       unnormalised keys put (I+A)^-1 out of range).  A case whose keys
       have |k|^2 > 1.01 somewhere and that does not ask for in-kernel
       l2norm is outside its envelope: the audit skips it, saying so. */
    RA_GDN_NEEDS_UNIT_KEYS = RA_CAP_OP(4),
    /* Requirement: the variant recovers states by inverting steps (a
       reversal backward), S_{t-1} = (I - beta k k^T)^-1 (S_t - beta k v^T)
       / exp(g), which multiplies an error by up to 1 / (exp(g) min(1,
       |1 - beta |k|^2|)) per step; it is defined where that factor is at
       most 4/3 on every token (|k|^2 = 1 under in-kernel l2norm), so the
       7 steps of a span of 8 amplify by less than 8.  Elsewhere its error
       is unbounded (reports/reversal.md) and the audit skips the case,
       saying so. */
    RA_GDN_NEEDS_STABLE_STEPS = RA_CAP_OP(5)
};

/* Every gdn capability of a variant that serves all cases. */
#define RA_GDN_CAPS_ALL (RA_GDN_CAP_H0 | RA_GDN_CAP_GQA | RA_GDN_CAP_L2NORM | RA_GDN_CAP_TAIL)

#endif
