/* The shipped data files (gates, suites) compiled into the program, as the last fallback. */

/*
 * Each file becomes a NUL-terminated byte string with a start symbol, so a
 * copied static binary audits with the gates and suites it was built
 * with (src/audit/datadir.c).  The build passes -Wa,-I to the data
 * directory; src/audit/local.mk makes this object depend on the files.
 * A new suite file needs a line here and one in datadir.c's table.
 */

#define EMBED(sym, file)                                                                           \
    .globl sym;                                                                                    \
    .type sym, @object;                                                                            \
    sym:;                                                                                          \
    .incbin file;                                                                                  \
    .byte 0;                                                                                       \
    .size sym, .- sym

    .section .rodata
    EMBED(ra_embedded_gates_tsv, "gates.tsv")
    EMBED(ra_embedded_suite_quick_tsv, "suites/quick.tsv")
    EMBED(ra_embedded_suite_full_tsv, "suites/full.tsv")

    .section .note.GNU-stack, "", @progbits
