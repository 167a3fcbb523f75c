/* The run functions of the studies listed in src/study/studies.c. */
#ifndef RA_STUDY_STUDIES_H
#define RA_STUDY_STUDIES_H

#include "study/study.h"

ra_study_fn ra_study_reversal;
ra_study_fn ra_study_metric;

/* the precision studies: dot, inverse, length, storage */

#endif
