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
