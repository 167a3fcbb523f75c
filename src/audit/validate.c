/* audit and validate: generate a case, one reference, every matching variant. */
#include <config.h>

#include "audit/audit.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/capture.h"

/*
 * Per case: generate it (the op's generator, deterministic in the seed), take
 * its reference once through ra_ref_compute (which caches, so a suite row
 * shared by N variants, or run again, costs one reference), then for each
 * variant: check its capabilities, run the forward and (for fwd+bwd cases)
 * the backward with the variant's error messages captured into the verdict
 * row, and compare what it returned with the reference.
 *
 * The variant's messages are captured (src/core/capture.h) so that a
 * kernel that refuses a case (RA_EUNSUPPORTED) becomes a skip row carrying
 * its reason and one that fails becomes a FAIL row carrying it, instead of
 * stray lines on stderr between table rows.
 *
 * Every row gets the one command that regenerates its case and re-runs the
 * variant: `recaudit audit --variant NAME --op OP --shape S --regime R
 * --dtype D --seed N` plus the op's flags (--h0, --l2norm for gdn),
 * --fwd-only, and --plugin/--gates when the variant or gates came from
 * files.
 *
 * Reference prefetch (validate over a suite, cache on): the variants run
 * one at a time, mostly on one core, while a row's reference, at its two
 * precisions, is the other half of a cold suite's work.  So a child
 * process computes the references of the suite's rows from the LAST row
 * backward, one thread, into the cache, while validate walks the rows from
 * the first forward; each row is claimed by whichever side comes first
 * (an atomic flag per row in shared memory).  When validate reaches a row
 * the child holds, it waits for that reference (or for the child's end)
 * and then finds it in the cache; the child stops at the first row
 * validate has claimed.  The cache's stores are atomic renames, so a
 * reference is read whole or recomputed; the child writes nothing else
 * (stderr to /dev/null), and a failure there only means validate
 * computes that reference itself, with its messages.  Measured: quick
 * cold on two cores (docs/gdn.md, "Coverage").
 */

void ra_audit_opts_init(ra_audit_opts *o)
{
    memset(o, 0, sizeof *o);
    ra_ref_opts_init(&o->ref);
    ra_isolation_init(&o->iso);
}

size_t ra_audit_count_variants(const ra_registry *r, const char *glob, const char *op)
{
    size_t n = 0;
    for (size_t i = 0; i < ra_registry_count(r); i++) {
        const ra_variant *v = ra_registry_at(r, i);
        n += ra_glob_match(glob, v->name) && strcmp(v->op, op) == 0;
    }
    return n;
}

static void repro_command(char *buf, size_t len, const ra_registry *r, const ra_variant *v,
                          const ra_case_spec *id, const ra_audit_opts *o)
{
    const char *plugin = ra_registry_origin_of(r, v);
    char flags[128], timeout[48] = "";
    ra_case_spec_flags_format(flags, sizeof flags, id, " --");
    if (o->iso.timeout_s != RA_TIMEOUT_DEFAULT_S)
        snprintf(timeout, sizeof timeout, " --timeout %g", o->iso.timeout_s);
    snprintf(buf, len,
             "recaudit audit --variant %s --op %s --shape %s --regime %s --dtype %s --seed %llu"
             "%s%s%s%s%s%s%s%s",
             v->name, id->op, id->shape, id->regime, id->dtype, id->seed, flags,
             id->bwd ? "" : " --fwd-only",
             plugin ? " --plugin " : "", plugin ? plugin : "", o->gates_path ? " --gates " : "",
             o->gates_path ? o->gates_path : "",
             o->allow_uncertified ? " --allow-uncertified" : "", timeout);
}

/* NULL-ended list of the reference's tensors: all, or only the outputs. */
static ra_status expected_names(const char ***out, const ra_case *ref, const ra_case *c,
                                int with_grads)
{
    const char **names = calloc(ref->tensors.n + 1, sizeof *names);
    if (!names)
        RA_ERROR("out of memory", RA_ENOMEM);
    size_t n = 0;
    for (size_t i = 0; i < ref->tensors.n; i++) {
        const char *name = ref->tensors.items[i]->name;
        if (with_grads || !ra_is_gradient_of(name, c))
            names[n++] = name;
    }
    *out = names;
    return RA_OK;
}

typedef struct case_ctx {
    const ra_case *c, *ref;
    const ra_case_spec *id;
    const ra_audit_opts *o;
    const char **outputs, **all;
    const ra_sealed *sealed; /* c's inputs, read-only */
    int certified;           /* usable: certified, or allowed uncertified, and representable */
    char unusable[512];      /* why the reference cannot be used */
} case_ctx;

/* One variant on the case: rows appended. */
static ra_status audit_variant(ra_rows *rows, const ra_registry *r, const ra_variant *v,
                               const case_ctx *x)
{
    char repro[1024], why[512];
    repro_command(repro, sizeof repro, r, v, x->id, x->o);
    if (!x->certified)
        return ra_rows_note(rows, v->name, x->id, "-", repro, RA_VERDICT_FAIL, "%s", x->unusable);
    if (!ra_variant_supports(v, x->c, 0, why, sizeof why))
        return ra_rows_note(rows, v->name, x->id, "-", repro, RA_VERDICT_SKIP, "%s", why);

    ra_run run;
    memset(&run, 0, sizeof run);
    run.threads = x->o->threads;
    run.elapsed_ms = -1;

    ra_outcome out;
    ra_outcome_init(&out);
    ra_status st =
        ra_variant_run_guarded(&out, v, x->c, x->id->bwd, &run, &x->o->iso, x->sealed, 1);
    const int grads = out.bwd_ran && out.bst == RA_OK;
    if (st != RA_OK) {
        /* the harness could not run it (no pipe, fork or memory): stop */
    } else if (out.died[0]) {
        st = ra_rows_note(rows, v->name, x->id, "-", repro, RA_VERDICT_FAIL, "%s", out.died);
    } else if (out.fst == RA_EUNSUPPORTED) {
        st = ra_rows_note(rows, v->name, x->id, "-", repro, RA_VERDICT_SKIP, "%s", out.fwhy);
    } else if (out.fst != RA_OK) {
        st = ra_rows_note(rows, v->name, x->id, "-", repro, RA_VERDICT_FAIL,
                          "forward failed (%s): %s", ra_strstatus(out.fst), out.fwhy);
    } else {
        /* Outputs (and gradients, when the backward ran) first, then a row
           for gradients that could not be had. */
        ra_check_opts co = {x->o->gates, v->name, 1, grads ? x->all : x->outputs, repro, v->pclass};
        st = ra_check_compare(rows, &out.result, x->ref, x->id, &co);
        if (st == RA_OK && x->id->bwd && !(v->caps & RA_BWD))
            st = ra_rows_note(rows, v->name, x->id, "grads", repro, RA_VERDICT_SKIP,
                              "no backward (capability bwd)");
        else if (st == RA_OK && out.bst == RA_EUNSUPPORTED)
            st = ra_rows_note(rows, v->name, x->id, "grads", repro, RA_VERDICT_SKIP, "%s", out.bwhy);
        else if (st == RA_OK && out.bst != RA_OK)
            st = ra_rows_note(rows, v->name, x->id, "grads", repro, RA_VERDICT_FAIL,
                              "backward failed (%s): %s", ra_strstatus(out.bst), out.bwhy);
    }
    ra_outcome_clear(&out);
    return st;
}

ra_status ra_audit_case(ra_rows *rows, const ra_registry *r, const char *glob, const ra_case_spec *id,
                        const ra_audit_opts *o)
{
    char what[384], flags[128];
    ra_case_spec_flags_format(flags, sizeof flags, id, " ");
    snprintf(what, sizeof what, "case %s %s regime=%s dtype=%s seed=%llu%s", id->op, id->shape,
             id->regime, id->dtype, id->seed, flags);
    if (ra_audit_count_variants(r, glob, id->op) == 0)
        return RA_OK;
    ra_case c, ref;
    ra_case_init(&c);
    ra_case_init(&ref);
    case_ctx x;
    memset(&x, 0, sizeof x);
    ra_status st = ra_case_spec_generate(&c, id);
    if (st == RA_OK) {
        ra_ref_opts ro = o->ref;
        ro.grads = id->bwd;
        if (o->threads)
            ro.threads = o->threads;
        st = ra_ref_compute(&ref, &c, &ro, what);
    }
    if (st == RA_OK) {
        x.certified = ra_ref_usable(&ref, o->allow_uncertified, x.unusable, sizeof x.unusable);
        st = expected_names(&x.outputs, &ref, &c, 0);
    }
    if (st == RA_OK)
        st = expected_names(&x.all, &ref, &c, 1);
    /* The reference has read the inputs: from here on nothing may write them. */
    ra_sealed sealed;
    memset(&sealed, 0, sizeof sealed);
    if (st == RA_OK)
        st = ra_inputs_seal(&sealed, &c);
    x.sealed = &sealed;
    x.c = &c;
    x.ref = &ref;
    x.id = id;
    x.o = o;
    for (size_t i = 0; st == RA_OK && i < ra_registry_count(r); i++) {
        const ra_variant *v = ra_registry_at(r, i);
        if (!ra_glob_match(glob, v->name) || strcmp(v->op, id->op) != 0)
            continue;
        size_t from = rows->n;
        st = audit_variant(rows, r, v, &x);
        /* skip and failure notes too: every row names the class that gates it */
        for (size_t j = from; j < rows->n; j++)
            snprintf(rows->v[j].pclass, sizeof rows->v[j].pclass, "%s", v->pclass);
        ra_progress_add(o->progress, 1);
    }
    ra_inputs_unseal(&sealed, &c);
    free(x.outputs);
    free(x.all);
    ra_case_clear(&ref);
    ra_case_clear(&c);
    return st;
}

/* The prefetch's shared state: per row, claimed (by either side) and done
   (its reference in the cache, or given up). */
typedef struct prefetch {
    pid_t pid; /* 0: no prefetch */
    size_t n;
    _Atomic unsigned char *claimed, *done;
} prefetch;

/* The child: references of rows n-1, n-2, ... until validate's rows. */
static void prefetch_child(const prefetch *pf, const ra_registry *r, const char *glob,
                           const ra_suite *s, const ra_audit_opts *o)
{
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
        dup2(null, 2);
    for (size_t i = s->n; i-- > 0;) {
        if (atomic_exchange(&pf->claimed[i], 1))
            break; /* validate is here: the rows below are its */
        const ra_case_spec *id = &s->rows[i].spec;
        if (ra_audit_count_variants(r, glob, id->op) > 0) {
            ra_case c, ref;
            ra_case_init(&c);
            ra_case_init(&ref);
            ra_ref_opts ro = o->ref;
            ro.grads = id->bwd;
            ro.threads = 1;
            ro.progress = 0;
            if (ra_case_spec_generate(&c, id) == RA_OK)
                (void)ra_ref_compute(&ref, &c, &ro, "prefetch");
            ra_case_clear(&ref);
            ra_case_clear(&c);
        }
        atomic_store(&pf->done[i], 1);
    }
    _exit(0);
}

static void prefetch_start(prefetch *pf, const ra_registry *r, const char *glob, const ra_suite *s,
                           const ra_audit_opts *o)
{
    memset(pf, 0, sizeof *pf);
    if (!o->ref.use_cache || s->n < 2 || getenv("RECAUDIT_NO_PREFETCH"))
        return;
    void *m = mmap(NULL, 2 * s->n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return; /* no prefetch: validate computes every reference */
    memset(m, 0, 2 * s->n);
    pf->n = s->n;
    pf->claimed = m;
    pf->done = (_Atomic unsigned char *)m + s->n;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        prefetch_child(pf, r, glob, s, o);
    if (pid < 0) {
        munmap(m, 2 * s->n);
        memset(pf, 0, sizeof *pf);
        return;
    }
    pf->pid = pid;
}

/* Before row i: claim it, or wait until the child has finished it. */
static void prefetch_wait(prefetch *pf, size_t i)
{
    if (!pf->pid || !atomic_exchange(&pf->claimed[i], 1))
        return;
    const struct timespec tick = {0, 2000000}; /* 2 ms */
    while (!atomic_load(&pf->done[i])) {
        if (waitpid(pf->pid, NULL, WNOHANG) != 0) {
            pf->pid = 0; /* ended (or vanished): the rest is validate's */
            return;
        }
        nanosleep(&tick, NULL);
    }
}

static void prefetch_end(prefetch *pf)
{
    if (pf->pid) {
        for (size_t i = 0; i < pf->n; i++)
            atomic_store(&pf->claimed[i], 1); /* stops the child at its next row */
        waitpid(pf->pid, NULL, 0);
    }
    if (pf->n)
        munmap((void *)pf->claimed, 2 * pf->n);
}

ra_status ra_validate(ra_rows *rows, const ra_registry *r, const char *glob, const ra_suite *s,
                      const ra_audit_opts *o)
{
    if (ra_registry_count_matching(r, glob) == 0)
        RA_ERRORF(RA_ENOTFOUND, "no variant matches '%s' (see 'recaudit list variants')", glob);
    prefetch pf;
    prefetch_start(&pf, r, glob, s, o);
    ra_status st = RA_OK;
    for (size_t i = 0; i < s->n && st == RA_OK; i++) {
        prefetch_wait(&pf, i);
        st = ra_audit_case(rows, r, glob, &s->rows[i].spec, o);
    }
    prefetch_end(&pf);
    return st;
}
