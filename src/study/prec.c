/* Helpers of the precision studies: unit roundoffs by class, device checks, metric columns. */

/*
 * The unit roundoff of a class is the model the dot, inverse and storage
 * reports draw beside their measurements: one operand rounding costs at
 * most u relative (round to nearest), so a kernel whose error sits near u
 * is limited by its operand format and not by anything else; IEEE fp32
 * sums of n terms may reach a few u (sqrt(n) u for independent roundings).
 */

#include "study/prec.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/device.h"

double ra_study_unit_roundoff(const char *pclass)
{
    static const struct {
        const char *name;
        double u;
    } table[] = {{"f64", 0x1p-53},  {"f32", 0x1p-24}, {"ieee", 0x1p-24}, {"tf32x3", 0x1p-24},
                 {"tf32", 0x1p-11}, {"bf16", 0x1p-8}, {"f16", 0x1p-11}};
    for (size_t i = 0; pclass && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].name, pclass) == 0)
            return table[i].u;
    return NAN;
}

int ra_study_device_ok(const ra_variant *v, char *why, size_t len)
{
    if (v->device != RA_CUDA)
        return 1;
    if (ra_gpu_count() > 0)
        return 1;
    snprintf(why, len, "%s: CUDA row, no CUDA device here (left out; run the study on a GPU host)",
             v->name);
    return 0;
}

const char *const ra_study_metric_cols[] = {"max_rel", "rel_rms", "max_abs", "nonfinite", NULL};

ra_status ra_study_put_metrics(ra_points *p, const ra_metrics *m)
{
    RA_TRY(ra_points_set_num(p, "max_rel", m->max_rel));
    RA_TRY(ra_points_set_num(p, "rel_rms", m->rel_rms));
    RA_TRY(ra_points_set_num(p, "max_abs", m->max_abs));
    return ra_points_set_num(p, "nonfinite", (double)(m->nan_count + m->inf_count));
}

double ra_study_log2(double x) { return x > 0 && isfinite(x) ? log2(x) : NAN; }
