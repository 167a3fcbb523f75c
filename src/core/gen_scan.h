/* Case generation for the affine scan family: regimes and the generator. */
#ifndef RA_CORE_GEN_SCAN_H
#define RA_CORE_GEN_SCAN_H

#include "core/case.h"
#include "core/op.h"
#include "core/status.h"

/*
 * Every tensor (inputs and cotangents, scan_case.h names them) is stored in
 * the requested dtype, drawn in double from its own stream
 * ra_rng_new(seed, tensor name) and rounded once.  Case metadata: op,
 * shape, dtype, regime, seed, and for the rotation regimes gamma (the
 * scale of the transitions: sigma_min(A_t) = gamma up to the rounding of
 * the stored entries).  Regimes, per operation (first = default):
 *   scan.linear  default (seed 002: a ~ U(-0.9, 0.9), x = 0.1 N(0,1)),
 *                rotation (a = +-gamma, gamma = 0.5), strong-decay
 * (rotation:GAMMA, e.g. rotation:0.25, sets gamma; the case records it).
 *   scan.affine  default (seed 002: A = N(0,1) 0.5/sqrt(k), Bm = 0.1 N(0,1)),
 *                rotation (A_t = gamma blockdiag R(theta), gamma = 0.5),
 *                rotation-near-unit (gamma = 0.99), strong-decay
 *   scan.log     default (log_coeffs = logsigmoid(N(0,1)), log_values =
 *                N(0,1)), strong-decay (log_coeffs = -Exponential(1.8))
 */

extern const ra_op_item ra_scan_linear_regimes[], ra_scan_affine_regimes[], ra_scan_log_regimes[];

/* RA_OK when name is a regime of kind's op: a row, or ROW:GAMMA for a
   rotation row (gamma a finite number > 0); else RA_EINVAL saying why. */
ra_status ra_scan_regime_check(int kind, const char *name);

/* Fills an empty case from a checked spec of any of the three ops. */
ra_status ra_scan_generate(ra_case *c, const ra_case_spec *spec);

#endif
