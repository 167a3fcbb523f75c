/* The study table: one row per `recaudit study NAME`. */

/*
 * Adding a study is its file (src/study/NAME.c, listed in
 * src/study/local.mk) and one row here; `recaudit study --list` and
 * `make reports` read this table.
 */

#include "study/study.h"

#include <string.h>

#include "study/studies.h"

const ra_study ra_studies[] = {
    {"reversal", "Reversal: error growth of state reconstruction by inverting steps",
     "scan.affine under rotation:GAMMA and gdn: backward error against the reversal span L, "
     "fitted growth vs -log10(gamma)",
     ra_study_reversal},
    {"metric", "Metric: which acceptance rule catches which planted defect",
     "planted defects (1% element, 2^-8 bias, dropped gradient term, TF32 as IEEE) against "
     "cos, rel_rms, atol and recaudit's class gates",
     ra_study_metric},
    /* the precision studies: dot, inverse, length, storage */
    {"dot", "Dot: operand precision IEEE, TF32, 3xTF32, bf16 against the unit-roundoff model",
     "scan.affine at k = 1..16 (seed 002 inputs) and chunked gdn at K = 32..128: max_rel against "
     "k and T beside u_tf32 = 2^-11, u_bf16 = 2^-8",
     ra_study_dot},
    {"inverse", "Inverse: fwdsubst, neumann and schur for (I+A)^-1",
     "chunk 16..128, regimes default / raw-keys / strong-decay, precisions ieee / tf32 / bf16: "
     "error of T against an MPFR inverse and of the outputs",
     ra_study_inverse},
    {"length", "Length: error against the sequence length T",
     "every gdn variant at T = 256..65536, default and near-unit decay, fitted growth exponent",
     ra_study_length},
    {"storage", "Storage: chunk states, T, W, U in f32, bf16 or f16",
     "chunked gdn with the storage knob, default and large-state regimes: where f16 overflows",
     ra_study_storage},

    {NULL, NULL, NULL, NULL},
};

const ra_study *ra_study_find(const char *name)
{
    for (const ra_study *s = ra_studies; name && s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}
