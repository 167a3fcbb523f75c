/* libFuzzer harness: the gates table reader (ra_gates_parse, through src/audit/tsv.c). */
#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit/gates.h"
#include "fuzz.h"

/*
 * The readers take NUL-terminated text, so the input is copied with a
 * terminator (an embedded NUL ends the text early, as it would for a file
 * read by ra_tsv_load).  A table that parses is also queried, so the
 * class and refinement selection runs over fuzzed globs.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ra_fuzz_init();
    char *text = ra_fuzz_text(data, size);
    if (!text)
        return 0;
    ra_gates g;
    ra_gates_init(&g);
    if (ra_gates_parse(&g, text, "fuzz.tsv") == RA_OK) {
        const ra_gate *sel[RA_GATES_MAX_METRICS];
        size_t n;
        (void)ra_gates_select(sel, &n, &g, "gdn", "bf16", "gdn.cpu.chunk64.bf16", "bf16", "dk");
        (void)ra_gates_select(sel, &n, &g, "gdn", "f32", "gdn.cpu.f32", "f32", "o");
        (void)ra_gates_select(sel, &n, &g, "gdn", "f32", NULL, "f32", "o");
    }
    ra_gates_clear(&g);
    free(text);
    return 0;
}
