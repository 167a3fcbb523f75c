/* Template: one (batch, value head) of a gdn problem, as the per-head kernels see it. */

/*
 * The driver (gdn_tmpl_driver.h) gathers each (b, hv) into contiguous
 * token-major arrays in the arithmetic type R: q, k [T x K] (already
 * L2-normalised when the case asks for it; several value heads of a group
 * point at the same key-head arrays), v [T x V], g, beta [T], optional h0
 * [K x V]; for the backward also do [T x V] and optional dht [K x V].
 * Outputs go to per-head arrays the driver then reduces and stores: o
 * [T x V], ht [K x V]; dq, dk [T x K] (this value head's contribution),
 * dv [T x V], dg, dbeta [T], dh0 [K x V].  States are K x V row-major,
 * state[i][j] with i the key index, as ht is stored.
 */

typedef struct RN(head) {
    int64_t T, K, V;
    R scale;
    unsigned faults;
    const R *q, *k, *v, *g, *beta, *h0, *do_, *dht;
    R *o, *ht;
    R *dq, *dk, *dv, *dg, *dbeta, *dh0;
} RN(head);
