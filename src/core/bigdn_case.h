/* The bidirectional frame GDN family as cases: names, shape syntax, the one validator. */
#ifndef RA_CORE_BIGDN_CASE_H
#define RA_CORE_BIGDN_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/status.h"

/*
 * docs/bigdn.md defines both members (SPEC.md §4, seed 003).
 *
 *   bigdn:      qkv [B,N,3,H,D], beta [B,H,F,S], decay [B,H,F], q_norm_w,
 *               k_norm_w [H*D], rope_cos, rope_sin [N,D]; params k_scale,
 *               norm_eps, eps
 *   bigdn.core: Q, K, Qr, Kr, V [B,N,H,D], beta [B,H,F,S], decay [B,H,F];
 *               param eps
 *
 * both with cotangent dout and output out [B,N,H,D], N = F*S.  Every
 * reader of a bigdn case (reference, gradient and derivation checks,
 * variants) goes through ra_bigdn_problem_init, so all of them accept and
 * refuse the same files in the same words.
 */

typedef enum ra_bigdn_kind { RA_BIGDN_FULL, RA_BIGDN_CORE } ra_bigdn_kind;

/* RA_BIGDN_FULL for "bigdn", RA_BIGDN_CORE for "bigdn.core", else -1. */
int ra_bigdn_kind_of(const char *op);
const char *ra_bigdn_op_name(ra_bigdn_kind kind);

#define RA_BIGDN_NIN 7
/* Input j (0..6) of a kind, in layout order; gradient names are "d" + it. */
const char *ra_bigdn_in_name(ra_bigdn_kind kind, int j);
/* Full inputs. */
enum {
    RA_BIGDN_QKV,
    RA_BIGDN_BETA,
    RA_BIGDN_DECAY,
    RA_BIGDN_QNW,
    RA_BIGDN_KNW,
    RA_BIGDN_COS,
    RA_BIGDN_SIN
};
/* Core inputs (beta and decay keep their slots 5, 6 in the core table). */
enum {
    RA_BIGDN_Q,
    RA_BIGDN_K,
    RA_BIGDN_QR,
    RA_BIGDN_KR,
    RA_BIGDN_V,
    RA_BIGDN_CBETA,
    RA_BIGDN_CDECAY
};

typedef struct ra_bigdn_shape {
    int64_t B, F, S, H, D;
} ra_bigdn_shape;

/* Parses "B=1,F=4,S=16,H=2,D=8" (any order, every key once); D must be
   even for bigdn (RoPE pairs). */
ra_status ra_bigdn_shape_parse(ra_bigdn_shape *s, ra_bigdn_kind kind, const char *text);
void ra_bigdn_shape_format(char *buf, size_t len, const ra_bigdn_shape *s);

/* The default k_scale of a shape: D^-1/2 S^-1/2 (the seed's recipe). */
double ra_bigdn_default_k_scale(const ra_bigdn_shape *s);

typedef struct ra_bigdn_problem {
    ra_bigdn_kind kind;
    ra_bigdn_shape s;
    const ra_tensor *in[RA_BIGDN_NIN];
    const ra_tensor *dout; /* NULL when absent */
    double k_scale, norm_eps, eps;
} ra_bigdn_problem;

enum { RA_BIGDN_NEED_COTANGENTS = 1 };

/* Validates case c (named `what` in messages): op bigdn or bigdn.core;
   every input present (and dout with RA_BIGDN_NEED_COTANGENTS); shapes
   consistent, N = F*S, tables [N,D], norm weights [H*D], D even for bigdn
   (errors name tensor and axis); no NaN or Inf (tensor and index);
   parameters finite (k_scale > 0, the epsilons >= 0). */
ra_status ra_bigdn_problem_init(ra_bigdn_problem *p, const ra_case *c, unsigned flags,
                                const char *what);

/* Flat offsets (row-major). */
static inline int64_t ra_bigdn_tok(const ra_bigdn_shape *s, int64_t b, int64_t n, int64_t h,
                                   int64_t d)
{
    return ((b * s->F * s->S + n) * s->H + h) * s->D + d;
}
static inline int64_t ra_bigdn_qkv(const ra_bigdn_shape *s, int64_t b, int64_t n, int j, int64_t h,
                                   int64_t d)
{
    return (((b * s->F * s->S + n) * 3 + j) * s->H + h) * s->D + d;
}
static inline int64_t ra_bigdn_beta(const ra_bigdn_shape *s, int64_t b, int64_t h, int64_t f,
                                    int64_t t)
{
    return ((b * s->H + h) * s->F + f) * s->S + t;
}
static inline int64_t ra_bigdn_gate(const ra_bigdn_shape *s, int64_t b, int64_t h, int64_t f)
{
    return (b * s->H + h) * s->F + f;
}

#endif
