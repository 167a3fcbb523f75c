/* Feature matrices (gdn's) and the pairwise covering arrays that quick is built from. */
#include <config.h>

#include "audit/gdn_matrix.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gdn_case.h"
#include "core/gen_gdn.h"
#include "core/op.h"

/*
 * gdn's matrix (docs/gdn.md, "Coverage"): the features below, each value
 * a class of suite rows.  The numeric classes straddle the internal sizes
 * kernels have: chunk lengths 64 and 128 (T), key-row tiles of 64 (K, V),
 * the checkpoint buffer span of 256 tokens (T > 256); grouped-head ratios
 * 1 to 8 with one or two key heads (a head map that is wrong only when
 * several key heads share the batch); B > 1 (batch strides).  The
 * generator's value of each class is its cheapest member, so cost grows
 * only where a pair needs it.
 *
 * Cost of a row: the seconds validate takes on it.  Three phases: first
 * every pair whose cheapest row costs at most ROW_CAP under row_cost, the
 * budget model the array was first built with (those 47 rows stay as they
 * were measured and gated), then the size x size pairs over it (K>128 &
 * T>256 and the like) under BIG_CAP with row_fit, the CPU time measured
 * since, one to three of them a row, then the pairs admitted after those
 * rows were measured (late(): raw-keys & big-beta), so quick covers every
 * pair and stays under a minute cold (docs/gdn.md, "Coverage").  Each
 * phase appends rows and leaves the earlier ones as they were.
 */

#define MAXV 16
#define NFEAT 15
/* The most a row of the first phase may cost (model seconds, row_cost):
   a pair whose cheapest row costs more waits for the second phase (the
   size x size pairs K>128 & T>256 and the like: 49 of the 939 pairs).
   Every pair with a categorical feature (regime axes, dtype, flags,
   parameters) is within it. */
#define ROW_CAP 1.2
/* The most a row of the second phase may cost (row_fit seconds): the
   dearest deferred pair's cheapest row (K>128 & T>256 at V=16: 2.67 s),
   so no pair is excluded by cost. */
#define BIG_CAP 2.7
/* Candidate rows per row of the array. */
#define TRIALS 100

typedef struct feature {
    const char *name;
    int n;                   /* values */
    const char *label[MAXV]; /* a class's name in reports */
    long gen[MAXV];          /* the generator's value of numeric classes */
} feature;

enum {
    F_K,
    F_V,
    F_T,
    F_RATIO,
    F_HK,
    F_B,
    F_L2,
    F_H0,
    F_DHT,
    F_PARAM,
    F_GATE,
    F_KEYS,
    F_BETA,
    F_MAG,
    F_DTYPE
};

static const char *const dtypes[] = {"f32", "bf16", "f16", "f64"};
static const char *const params[] = {NULL, "scale=0.3", "l2eps=0.25"};

/* gdn's matrix. */
static int gdn_matrix(feature *f)
{
    static const feature fixed[NFEAT] = {
        {"K", 4, {"K<=32", "K<=64", "K<=128", "K>128"}, {16, 64, 128, 256}},
        {"V", 4, {"V<=32", "V<=64", "V<=128", "V>128"}, {16, 64, 128, 256}},
        {"T", 4, {"T<64", "T<=128", "T<=256", "T>256"}, {24, 72, 136, 260}},
        {"group", 4, {"Hv/Hk=1", "Hv/Hk=2..3", "Hv/Hk=4..7", "Hv/Hk>=8"}, {1, 2, 4, 8}},
        {"Hk", 2, {"Hk=1", "Hk>=2"}, {1, 2}},
        {"B", 2, {"B=1", "B>=2"}, {1, 2}},
        {"l2norm", 2, {"no-l2norm", "l2norm"}, {0, 1}},
        {"h0", 2, {"no-h0", "h0"}, {0, 1}},
        {"dht", 2, {"dht", "no-dht"}, {0, 1}},
        {"param", 3, {"default-params", "scale", "l2eps"}, {0, 1, 2}},
        /* the regime, by its axes (gen_gdn.c's composites A+B+...) */
        {"gate", 4, {"gate=logsigmoid", "zero-gate", "strong-decay", "near-unit"}, {0, 1, 2, 3}},
        {"keys", 3, {"keys=unit", "raw-keys", "aligned-keys"}, {0, 1, 2}},
        {"beta", 3, {"beta=sigmoid", "small-beta", "big-beta"}, {0, 1, 2}},
        {"magnitude", 2, {"v,h0=N(0,1)", "large-state"}, {0, 1}},
        {"dtype", 4, {"f32", "bf16", "f16", "f64"}, {0, 1, 2, 3}},
    };
    memcpy(f, fixed, sizeof fixed);
    return 1;
}

/* Class of a head dim among upper bounds 32, 64, 128. */
static int dim_class(int64_t x) { return x <= 32 ? 0 : x <= 64 ? 1 : x <= 128 ? 2 : 3; }

/* The class of every feature for a gdn row; 0 if the row is not gdn. */
static int classify(int *v, const feature *f, const ra_case_spec *sp)
{
    ra_gdn_shape s;
    if (strcmp(sp->op, "gdn") != 0 || ra_gdn_shape_parse(&s, sp->shape) != RA_OK)
        return 0;
    const int64_t r = s.Hv / s.Hk;
    v[F_K] = dim_class(s.K);
    v[F_V] = dim_class(s.V);
    v[F_T] = s.T < 64 ? 0 : s.T <= 128 ? 1 : s.T <= 256 ? 2 : 3;
    v[F_RATIO] = r <= 1 ? 0 : r < 4 ? 1 : r < 8 ? 2 : 3;
    v[F_HK] = s.Hk >= 2;
    v[F_B] = s.B >= 2;
    v[F_L2] = (sp->flags & RA_GDN_FLAG_L2NORM) != 0;
    v[F_H0] = (sp->flags & RA_GDN_FLAG_H0) != 0;
    v[F_DHT] = (sp->flags & RA_GDN_FLAG_NO_DHT) != 0;
    char buf[RA_SPEC_PARAMS_MAX];
    v[F_PARAM] = ra_case_spec_param(buf, sizeof buf, sp, "scale")   ? 1
                 : ra_case_spec_param(buf, sizeof buf, sp, "l2eps") ? 2
                                                                    : 0;
    /* the regime's components, by name (tail is default's inputs) */
    v[F_GATE] = v[F_KEYS] = v[F_BETA] = v[F_MAG] = 0;
    for (const char *r = sp->regime; *r;) {
        size_t n = strcspn(r, "+");
        for (int a = F_GATE; a <= F_MAG; a++)
            for (int x = 1; x < f[a].n; x++)
                if (strlen(f[a].label[x]) == n && strncmp(f[a].label[x], r, n) == 0)
                    v[a] = x;
        r += n + (r[n] == '+');
    }
    if (strcmp(sp->regime, "large-state") == 0)
        v[F_GATE] = 3; /* alone, large-state has near-unit gates */
    if (strcmp(sp->regime, "large-state") == 0)
        v[F_GATE] = 3; /* large-state alone has near-unit gates */
    v[F_DTYPE] = 0;
    for (int i = 0; i < 4; i++)
        if (strcmp(dtypes[i], sp->dtype) == 0)
            v[F_DTYPE] = i;
    return 1;
}

/* 1 when a (partial) row combines raw-keys with big-beta (beta |k|^2 up
   to 0.9 * 1.875 = 1.69 on one-signed keys: every transition's eigenvalue
   near -1).
   The first two phases' rows never have it: they were measured and gated
   while the pair was left out, so the third phase covers it with rows of
   its own and those 80 rows stay as they were.  Its references are
   representable and certified; correct kernels' errors there are past the
   tf32 and bf16 envelopes of every other regime, so the class rows cover
   it and refinements keyed @!*raw-keys*big-beta* keep every other regime
   at its own thresholds (data/gates.tsv, docs/gdn.md). */
static int late(const int *v) { return v[F_KEYS] == 1 && v[F_BETA] == 2; }

/* Pair bookkeeping: one flag per (a < b, x, y). */
typedef struct pairs {
    const feature *f;
    size_t off[NFEAT][NFEAT];
    size_t total, deferred, late;
    int phase;                                    /* 1, 2, 3 */
    double cap;                                   /* ROW_CAP, then BIG_CAP (phases 2, 3) */
    double (*cost)(const feature *, const int *); /* row_cost, then row_fit */
    /* bit 0 covered, bit 2 deferred to the second phase (cheapest row over
       ROW_CAP), bit 3 deferred to the third (late()) */
    unsigned char *seen;
} pairs;

static double row_cost(const feature *f, const int *v);
static double row_fit(const feature *f, const int *v);
static size_t pair_at(const pairs *p, int a, int x, int b, int y);

static int pairs_init(pairs *p, const feature *f)
{
    p->f = f;
    p->total = 0;
    for (int a = 0; a < NFEAT; a++)
        for (int b = a + 1; b < NFEAT; b++) {
            p->off[a][b] = p->total;
            p->total += (size_t)f[a].n * (size_t)f[b].n;
        }
    p->seen = calloc(p->total, 1);
    p->deferred = p->late = 0;
    p->phase = 1;
    p->cap = ROW_CAP;
    p->cost = row_cost;
    for (int a = 0; p->seen && a < NFEAT; a++)
        for (int b = a + 1; b < NFEAT; b++)
            for (int x = 0; x < f[a].n; x++)
                for (int y = 0; y < f[b].n; y++) {
                    int v[NFEAT];
                    for (int i = 0; i < NFEAT; i++)
                        v[i] = -1;
                    v[a] = x, v[b] = y;
                    if (late(v)) {
                        p->seen[pair_at(p, a, x, b, y)] = 8;
                        p->late++;
                    } else if (row_cost(f, v) > ROW_CAP) {
                        p->seen[pair_at(p, a, x, b, y)] = 4;
                        p->deferred++;
                    }
                }
    return p->seen != NULL;
}

static size_t pair_at(const pairs *p, int a, int x, int b, int y)
{
    if (a > b) {
        int t = a;
        a = b, b = t, t = x, x = y, y = t;
    }
    return p->off[a][b] + (size_t)x * (size_t)p->f[b].n + (size_t)y;
}

/* New pairs a complete row would cover; marks them when mark. */
static size_t row_gain(pairs *p, const int *v, int mark)
{
    size_t n = 0;
    for (int a = 0; a < NFEAT; a++)
        for (int b = a + 1; b < NFEAT; b++) {
            if (v[a] < 0 || v[b] < 0)
                continue;
            size_t i = pair_at(p, a, v[a], b, v[b]);
            n += !p->seen[i];
            if (mark)
                p->seen[i] |= 1; /* a deferred pair (4, 8) a row covers anyway: 5, 9 */
        }
    return n;
}

static ra_status load_pairs(pairs *p, feature *f, const ra_suite *s, const char *op)
{
    if (strcmp(op, "gdn") != 0 || !gdn_matrix(f)) {
        p->total = 0;
        p->seen = NULL;
        return RA_OK;
    }
    if (!pairs_init(p, f))
        RA_ERROR("out of memory", RA_ENOMEM);
    for (size_t r = 0; s && r < s->n; r++) {
        int v[NFEAT];
        if (classify(v, f, &s->rows[r].spec))
            row_gain(p, v, 1);
    }
    return RA_OK;
}

ra_status ra_matrix_coverage(const ra_suite *s, const char *op, size_t *covered, size_t *total)
{
    feature f[NFEAT];
    pairs p;
    RA_TRY(load_pairs(&p, f, s, op));
    *covered = 0;
    for (size_t i = 0; i < p.total; i++)
        *covered += p.seen[i] & 1;
    *total = p.total;
    free(p.seen);
    return RA_OK;
}

size_t ra_matrix_missing(const ra_suite *s, const char *op, char *buf, size_t len)
{
    feature f[NFEAT];
    pairs p;
    size_t n = 0, at = 0;
    if (len)
        buf[0] = 0;
    if (load_pairs(&p, f, s, op) != RA_OK)
        return 0;
    for (int a = 0; a < NFEAT; a++)
        for (int b = a + 1; b < NFEAT; b++)
            for (int x = 0; x < f[a].n; x++)
                for (int y = 0; y < f[b].n; y++) {
                    if (p.seen[pair_at(&p, a, x, b, y)] & 1)
                        continue;
                    n++;
                    if (at < len) {
                        int w =
                            snprintf(buf + at, len - at, "%s & %s\n", f[a].label[x], f[b].label[y]);
                        at += w > 0 ? (size_t)w : 0;
                        if (at >= len && len > 4)
                            strcpy(buf + len - 4, "...");
                    }
                }
    free(p.seen);
    return n;
}

/* Seconds a row takes validate on two cores, cold cache, when its unset
   features take their cheapest class (0): a fixed start, the CPU variants
   (about 1e-4 s per token and unit of K + V, the twelve chunked gdn
   variants' per-token matmuls) and the reference (1.5e-6 s per state
   element update).  Measured on B=1,Hk=Hv=1 rows of T = 24, 300 and
   K, V = 16, 64, 256. */
static double row_cost(const feature *f, const int *v)
{
#define G(i) ((double)f[i].gen[v[i] < 0 ? 0 : v[i]])
    const double n = G(F_B) * G(F_HK) * G(F_RATIO) * G(F_T);
    return 0.2 + 1e-4 * n * (G(F_K) + G(F_V)) + 1.5e-6 * n * G(F_K) * G(F_V);
#undef G
}

/* CPU seconds of a row on two cores, cold cache, all CPU variants, as
   measured since the CPU matmuls got their FMA clone (docs/gdn.md): 0.3 s
   + per head-token (B Hv T) 1.2e-4 s + 1.5e-5 s (K + V) + 1.2e-6 s K V
   (the K V term mostly the MPFR reference at its two precisions). */
static double row_fit(const feature *f, const int *v)
{
#define G(i) ((double)f[i].gen[v[i] < 0 ? 0 : v[i]])
    const double n = G(F_B) * G(F_HK) * G(F_RATIO) * G(F_T);
    return 0.3 + n * (1.2e-4 + 1.5e-5 * (G(F_K) + G(F_V)) + 1.2e-6 * G(F_K) * G(F_V));
#undef G
}

/* Knuth's MMIX LCG: the same stream everywhere. */
static unsigned lcg(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(*st >> 33);
}

/* Completes row v (some features set) greedily: each unset feature, in a
   random order, takes the value that covers the most new pairs with the
   features already set, the cheaper on a tie. */
static void complete_row(int *v, pairs *p, uint64_t *rng)
{
    const feature *f = p->f;
    int order[NFEAT];
    for (int i = 0; i < NFEAT; i++)
        order[i] = i;
    for (int i = NFEAT - 1; i > 0; i--) {
        int j = (int)(lcg(rng) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    for (int oi = 0; oi < NFEAT; oi++) {
        const int a = order[oi];
        if (v[a] >= 0)
            continue;
        int best = -1;
        double bscore = 0;
        for (int x = 0; x < f[a].n; x++) {
            v[a] = x;
            double c = p->cost(f, v);
            if (c > p->cap || (p->phase < 3 && late(v)))
                continue;
            size_t g = 0;
            for (int b = 0; b < NFEAT; b++)
                if (b != a && v[b] >= 0)
                    g += !p->seen[pair_at(p, a, x, b, v[b])];
            /* new pairs per second of the row so far */
            /* the most new pairs; among those the cheaper, then at random */
            const double sc = (double)g - c * 1e-3 + (lcg(rng) % 1000) * 1e-7;
            if (best < 0 || sc > bscore)
                best = x, bscore = sc;
        }
        v[a] = best < 0 ? 0 : best;
    }
}

/* One suite line of row v. */
static int format_row(char *buf, size_t len, const feature *f, const int *v,
                      unsigned long long seed)
{
    const long hk = f[F_HK].gen[v[F_HK]];
    char flags[128] = "";
    const char *parts[4];
    int np = 0;
    if (v[F_H0])
        parts[np++] = "h0";
    if (v[F_L2])
        parts[np++] = "l2norm";
    if (v[F_DHT])
        parts[np++] = "no-dht";
    if (params[v[F_PARAM]])
        parts[np++] = params[v[F_PARAM]];
    for (int i = 0; i < np; i++)
        snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s%s", i ? "," : "",
                 parts[i]);
    /* the regime: its components in the order of gdn's regime table,
       default when none; large-state without a gate component is written
       default+large-state (alone it has near-unit gates) */
    char regime[RA_SPEC_REGIME_MAX] = "";
    const ra_op *op = ra_op_find("gdn");
    for (const ra_op_item *r = op->regimes; r->name; r++)
        for (int a = F_GATE; a <= F_MAG; a++)
            if (v[a] > 0 && strcmp(f[a].label[v[a]], r->name) == 0)
                snprintf(regime + strlen(regime), sizeof regime - strlen(regime), "%s%s",
                         regime[0] ? "+" : "", r->name);
    if (v[F_MAG] && !v[F_GATE]) {
        char tmp[RA_SPEC_REGIME_MAX];
        snprintf(tmp, sizeof tmp, "default+%s", regime);
        memcpy(regime, tmp, sizeof regime);
    }
    return snprintf(buf, len,
                    "gdn\tB=%ld,T=%ld,Hk=%ld,Hv=%ld,K=%ld,V=%ld\t%s\t%s\tfwd+bwd\t%llu\t%s\n",
                    f[F_B].gen[v[F_B]], f[F_T].gen[v[F_T]], hk, hk * f[F_RATIO].gen[v[F_RATIO]],
                    f[F_K].gen[v[F_K]], f[F_V].gen[v[F_V]], regime[0] ? regime : "default",
                    dtypes[v[F_DTYPE]], seed, np ? flags : "-");
}

/* Candidates per row: the first starts from the uncovered pair whose
   cheapest row costs most (so the expensive pairs get the rows of their
   own), the others from random uncovered pairs. */

ra_status ra_matrix_generate(char **text, size_t *nrows, const char *op, unsigned long long seed0)
{
    *text = NULL;
    *nrows = 0;
    feature f[NFEAT];
    pairs p;
    RA_TRY(load_pairs(&p, f, NULL, op));
    if (!p.total)
        RA_ERRORF(RA_EINVAL, "op '%s' has no feature matrix (gdn has)", op);
    size_t cap = 4096, used = 0, left = p.total - p.deferred - p.late;
    char *out = malloc(cap);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    if (!out) {
        free(p.seen);
        RA_ERROR("out of memory", RA_ENOMEM);
    }
    for (;;) {
        if (left == 0 && p.phase == 1) {
            /* second phase: the deferred pairs no cheap row covered */
            for (size_t i = 0; i < p.total; i++)
                if (p.seen[i] == 4)
                    p.seen[i] = 0, left++;
            p.phase = 2;
            p.cap = BIG_CAP;
            p.cost = row_fit;
        }
        if (left == 0 && p.phase == 2) {
            /* third phase: the late pairs, under the second phase's cap */
            for (size_t i = 0; i < p.total; i++)
                if (p.seen[i] == 8)
                    p.seen[i] = 0, left++;
            p.phase = 3;
        }
        if (left == 0)
            break;
        int best[NFEAT];
        size_t bgain = 0;
        double bscore = 0;
        for (int trial = 0; trial < TRIALS; trial++) {
            /* the seed pair of this candidate */
            size_t pick = (size_t)-1, k = 0, nth = trial ? lcg(&rng) % left : 0;
            double pcost = -1;
            int sa = 0, sx = 0, sb = 0, sy = 0;
            for (int a = 0; a < NFEAT && (trial == 0 || pick == (size_t)-1); a++)
                for (int b = a + 1; b < NFEAT; b++)
                    for (int x = 0; x < f[a].n; x++)
                        for (int y = 0; y < f[b].n; y++) {
                            if (p.seen[pair_at(&p, a, x, b, y)])
                                continue;
                            int v[NFEAT];
                            for (int i = 0; i < NFEAT; i++)
                                v[i] = -1;
                            v[a] = x, v[b] = y;
                            double c = p.cost(f, v);
                            if ((trial == 0 && c > pcost) || (trial > 0 && k == nth))
                                pick = k, pcost = c, sa = a, sx = x, sb = b, sy = y;
                            k++;
                        }
            int v[NFEAT];
            for (int i = 0; i < NFEAT; i++)
                v[i] = -1;
            v[sa] = sx, v[sb] = sy;
            complete_row(v, &p, &rng);
            size_t g = row_gain(&p, v, 0);
            /* pairs per second: the cheapest way to cover */
            double score = (double)g / p.cost(f, v);
            if (g > 0 && (bgain == 0 || score > bscore)) {
                memcpy(best, v, sizeof best);
                bgain = g, bscore = score;
            }
        }
        if (bgain == 0)
            break; /* unreachable: a seed pair is always uncovered and feasible */
        left -= row_gain(&p, best, 1);
        char line[512];
        int w = format_row(line, sizeof line, f, best, seed0 + *nrows);
        if (used + (size_t)w + 1 > cap) {
            char *grown = realloc(out, cap *= 2);
            if (!grown) {
                free(out);
                free(p.seen);
                RA_ERROR("out of memory", RA_ENOMEM);
            }
            out = grown;
        }
        memcpy(out + used, line, (size_t)w + 1);
        used += (size_t)w;
        ++*nrows;
    }
    free(p.seen);
    *text = out;
    return RA_OK;
}

const char *ra_matrix_default_op(void) { return "gdn"; }

void ra_matrix_coverage_text(char *buf, size_t len, const ra_suite *s)
{
    size_t covered, total;
    if (ra_matrix_coverage(s, "gdn", &covered, &total) != RA_OK || !total || !covered) {
        snprintf(buf, len, "-");
        return;
    }
    snprintf(buf, len, "gdn %zu/%zu pairs", covered, total);
}
