/* Running a variant in a child process, with read-only inputs and a time limit. */
#ifndef RA_AUDIT_ISOLATE_H
#define RA_AUDIT_ISOLATE_H

#include <stddef.h>

#include "audit/registry.h"
#include "audit/wire.h"
#include "core/case.h"
#include "core/status.h"

/*
 * A variant (built in or from a plugin) is code under test: it may write
 * into its inputs, crash, abort, call exit or never return.  None of that
 * may reach the harness or the next variant.  So each (variant, case) runs
 * in a child made with fork: the inputs the child sees lie in a mapping
 * that is read-only (a write faults, and the fault is blamed on that
 * variant, naming the tensor), the child sends its outcome back through a
 * pipe (src/audit/wire.h), and the parent waits at most the time limit
 * before killing it with SIGKILL.  A crash, a signal, an exit without a
 * result or a timeout becomes the outcome's `died` reason, which the audit
 * turns into a FAIL row.  Since the child is a copy of the parent, nothing
 * it writes reaches the parent: later variants see pristine inputs.
 *
 * In process (--no-isolate, RECAUDIT_NO_ISOLATE=1) the variant runs in the
 * harness itself, for a debugger; the inputs are still read-only, so a
 * write stops at the guilty instruction.
 */

#define RA_TIMEOUT_DEFAULT_S 600.0

typedef struct ra_isolation {
    int in_process;   /* 1: run the variant in this process */
    double timeout_s; /* wall-clock limit of one (variant, case); <= 0: none */
} ra_isolation;

/* Isolated, RA_TIMEOUT_DEFAULT_S. */
void ra_isolation_init(ra_isolation *iso);

/* A case's tensor data moved into one read-only mapping. */
typedef struct ra_sealed {
    unsigned char *base; /* the mapping (NULL: nothing sealed) */
    size_t len;
    size_t n;       /* tensors of the case */
    void **heap;    /* their original data buffers, given back by unseal */
    size_t *offset; /* where each tensor's data lies in the mapping */
} ra_sealed;

/* Moves the data of every tensor of c into a fresh mapping that is then
   made read-only (PROT_READ); c's tensors point into it until unseal.
   RA_EIO/RA_ENOMEM reported when the mapping cannot be made. */
ra_status ra_inputs_seal(ra_sealed *s, ra_case *c);
/* Gives c its original (writable, unchanged) buffers back and unmaps. */
void ra_inputs_unseal(ra_sealed *s, ra_case *c);

/* Runs v on c as ra_variant_execute does (the forward, then the backward
   when bwd is set, v has RA_BWD and c carries a cotangent; after a
   backward that succeeded, v's forward_backward when it has one, which
   must give the same tensors bit for bit, else o->bst is its status or
   RA_EINTERNAL and o->bwhy says what differs), in a child
   unless iso says in process.  o (initialised by the caller) receives the
   statuses, reasons and result; with capture the variant's messages are
   recorded in o->fwhy/o->bwhy instead of printed.  When the run did not
   complete o->died says why.  inputs (may be NULL) is c's sealed block, to
   name the tensor a faulting write hit.  The return status is for failures
   of the harness (no pipe, no fork, no memory), not of the variant. */
ra_status ra_variant_run_guarded(ra_outcome *o, const ra_variant *v, const ra_case *c, int bwd,
                                 ra_run *run, const ra_isolation *iso, const ra_sealed *inputs,
                                 int capture);

#endif
