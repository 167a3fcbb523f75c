/* The isolation wire format: a variant run's outcome as one length-prefixed message. */
#ifndef RA_AUDIT_WIRE_H
#define RA_AUDIT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/case.h"
#include "core/status.h"

/*
 * A variant that runs in a child process (src/audit/isolate.h) sends what
 * it produced to the parent through a pipe as one message:
 *
 *     "RAW1"  u32 kind  u64 body-length  body
 *
 * all integers little-endian, doubles as their IEEE 754 bits.  The body of
 * an outcome (kind 1):
 *
 *     i32 forward status, i32 backward status, u32 flags (bit 0: the
 *     backward ran), f64 elapsed_ms, str forward reason, str backward
 *     reason, str op, u32 nparams, (str key, str value) * nparams,
 *     u32 ntensors, tensor * ntensors
 *     tensor: str name, u32 dtype, u32 ndim, i64 shape[ndim], u64 nbytes,
 *             nbytes bytes of data
 *     str: u32 length, the bytes (no terminating NUL)
 *
 * The body of an input fault (kind 2), sent from the child's SIGSEGV or
 * SIGBUS handler when the faulting address lies in the read-only inputs:
 * u64 offset into the sealed input block, u32 signal.
 *
 * The decoder trusts nothing: every length is checked against the bytes
 * that are there, a message must end exactly where its header says (a
 * child that died while writing leaves a truncated message, refused), and
 * a tensor's byte count must match its dtype and shape.
 */

#define RA_WIRE_HEADER_BYTES 16
#define RA_WIRE_FAULT_BYTES (RA_WIRE_HEADER_BYTES + 12)

enum { RA_WIRE_OUTCOME = 1, RA_WIRE_FAULT = 2 };

/* What a variant run produced. */
typedef struct ra_outcome {
    ra_status fst;     /* the forward's status */
    ra_status bst;     /* the backward's (RA_OK when it did not run) */
    int bwd_ran;       /* the backward was run */
    double elapsed_ms; /* ra_run.elapsed_ms after the run */
    char fwhy[512];    /* the forward's reported reason ("" when none) */
    char bwhy[512];    /* the backward's */
    ra_case result;    /* op, parameters, outputs and gradients */
    /* Set by the parent, never sent: why the run did not complete (a
       crash, a timeout, an exit, a write into the inputs); "" when it did. */
    char died[512];
} ra_outcome;

void ra_outcome_init(ra_outcome *o);
void ra_outcome_clear(ra_outcome *o);

/* A growable byte buffer. */
typedef struct ra_wire_buf {
    unsigned char *p;
    size_t n, cap;
} ra_wire_buf;

void ra_wire_buf_init(ra_wire_buf *b);
void ra_wire_buf_clear(ra_wire_buf *b);
/* Appends n bytes (RA_ENOMEM reported). */
ra_status ra_wire_buf_append(ra_wire_buf *b, const void *p, size_t n);

/* Appends the outcome message of o (not its died field) to b. */
ra_status ra_wire_encode_outcome(ra_wire_buf *b, const ra_outcome *o);

/* Writes the fault message into buf (RA_WIRE_FAULT_BYTES long).  Stores
   bytes only: safe in a signal handler. */
void ra_wire_encode_fault(unsigned char *buf, uint64_t offset, int sig);

/* A decoded message. */
typedef struct ra_wire_msg {
    int kind;              /* RA_WIRE_OUTCOME or RA_WIRE_FAULT */
    uint64_t fault_offset; /* RA_WIRE_FAULT */
    int fault_signal;
} ra_wire_msg;

/* Decodes the n bytes at p, which must hold exactly one message.  An
   outcome goes to o (initialised by the caller, filled here); a fault to
   m.  RA_EFORMAT, reported with the reason (truncated, trailing bytes, a
   bad magic, kind, dtype, rank, size), for anything else. */
ra_status ra_wire_decode(ra_wire_msg *m, ra_outcome *o, const unsigned char *p, size_t n);

#endif
