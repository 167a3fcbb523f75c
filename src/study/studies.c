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

    {NULL, NULL, NULL, NULL},
};

const ra_study *ra_study_find(const char *name)
{
    for (const ra_study *s = ra_studies; name && s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}
