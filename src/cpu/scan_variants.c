/* The CPU scan variant table: configurations of the fp32 kernels, one row each. */

/*
 * Each row carries its ra_cpu_scan_cfg (scan_variants.h) as data; names
 * follow op.algorithm.precision[.backward]: scan.cpu.<member>.<precision>,
 * with the affine backward strategy as the last part.  The reversal rows
 * walk back at most span - 1 = 7 steps between checkpoints and declare
 * the requirement conformal (recaudit/scan.h): inverting a step of a
 * transition with sigma_min s multiplies the error by 1/s, so outside
 * conformal transitions with s >= 1/2 their error is unbounded
 * (tests/t-cpu-scan.c shows a long span failing its gate at s = 0.5).
 */

#include "cpu/scan_variants.h"

#include "core/scan_case.h"
#include "recaudit/scan.h"

ra_status ra_cpu_scan_forward_row(const ra_variant *self, const ra_case *c, ra_tensors *out,
                                  ra_run *run)
{
    (void)run;
    return ra_cpu_scan_forward(self->data, c, out);
}

ra_status ra_cpu_scan_backward_row(const ra_variant *self, const ra_case *c, ra_tensors *grads,
                                   ra_run *run)
{
    (void)run;
    return ra_cpu_scan_backward(self->data, c, grads);
}

#define CFG(kind, round, bwd, span) (&(const ra_cpu_scan_cfg){kind, round, bwd, span})
#define ROW(name, op, pclass, caps, cfg, doc)                                                      \
    {                                                                                              \
        name, op, doc, RA_CPU, pclass, RA_FWD | RA_BWD | (caps), cfg, ra_cpu_scan_forward_row,     \
            ra_cpu_scan_backward_row, NULL                                                         \
    }

/* Checkpoint interval of the recompute and reversal rows. */
#define SPAN 8

const ra_variant ra_cpu_scan_variants[] = {
    ROW("scan.cpu.linear.f32", "scan.linear", "f32", 0,
        CFG(RA_SCAN_LINEAR, RA_CPU_ROUND_IEEE, RA_CPU_SCAN_STORE, 0),
        "sequential fp32 scan h = a h + x and running product; backward reads the stored states"),
    ROW("scan.cpu.affine.ieee.store", "scan.affine", "ieee", 0,
        CFG(RA_SCAN_AFFINE, RA_CPU_ROUND_IEEE, RA_CPU_SCAN_STORE, 0),
        "sequential fp32 affine scan, IEEE fp32 products; backward reads every stored state"),
    ROW("scan.cpu.affine.ieee.recompute", "scan.affine", "ieee", 0,
        CFG(RA_SCAN_AFFINE, RA_CPU_ROUND_IEEE, RA_CPU_SCAN_RECOMPUTE, SPAN),
        "as .store, backward re-runs the forward from checkpoints every 8 steps"),
    ROW("scan.cpu.affine.ieee.reversal", "scan.affine", "ieee", RA_SCAN_NEEDS_CONFORMAL,
        CFG(RA_SCAN_AFFINE, RA_CPU_ROUND_IEEE, RA_CPU_SCAN_REVERSAL, SPAN),
        "as .store, backward recovers Bbar_{t-1} = A_t^-1 (Bbar_t - B_t) from checkpoints every 8 "
        "steps"),
    ROW("scan.cpu.affine.tf32.store", "scan.affine", "tf32", 0,
        CFG(RA_SCAN_AFFINE, RA_CPU_ROUND_TF32, RA_CPU_SCAN_STORE, 0),
        "sequential affine scan, operands of every k x k product rounded to TF32 (a tensor-core "
        "tl.dot without input_precision=ieee), fp32 sums; backward reads stored states"),
    ROW("scan.cpu.affine.tf32x3.store", "scan.affine", "tf32x3", 0,
        CFG(RA_SCAN_AFFINE, RA_CPU_ROUND_TF32X3, RA_CPU_SCAN_STORE, 0),
        "as .tf32.store with each operand split into two TF32 halves and three products per term "
        "(input_precision=tf32x3): fp32-level products on TF32 units; backward reads stored "
        "states"),
    ROW("scan.cpu.affine.bf16.store", "scan.affine", "bf16", 0,
        CFG(RA_SCAN_AFFINE, RA_CPU_ROUND_BF16, RA_CPU_SCAN_STORE, 0),
        "sequential affine scan, operands of every k x k product rounded to bf16 (RNE; a bf16 "
        "tl.dot), fp32 sums; backward reads stored states"),
    ROW("scan.cpu.log.f32", "scan.log", "f32", 0,
        CFG(RA_SCAN_LOG, RA_CPU_ROUND_IEEE, RA_CPU_SCAN_RECOMPUTE, 0),
        "fp32 log-space scan: cumsum of log_coeffs, online max-shifted log-sum-exp; backward "
        "recomputes h and takes the linear-space adjoint"),
};

const size_t ra_cpu_scan_nvariants = sizeof ra_cpu_scan_variants / sizeof ra_cpu_scan_variants[0];
