/* The operations the suite knows: one table, name and one-line doc. */
#ifndef RA_CORE_OPS_H
#define RA_CORE_OPS_H

/*
 * The single list of operation names (docs/ names their mathematics), for `recaudit list
 * ops`, option checking and messages.  An operation is listed once it has
 * a case layout in src/core (a generator or validator); the reference
 * module's ra_ref_ops() says which of them have an MPFR reference.
 */

typedef struct ra_op_info {
    const char *name; /* "gdn" */
    const char *doc;  /* one line: what it computes, where it is specified */
} ra_op_info;

/* Every operation, terminated by {NULL, NULL}. */
const ra_op_info *ra_ops(void);
/* The row for name, or NULL. */
const ra_op_info *ra_op_find(const char *name);

#endif
