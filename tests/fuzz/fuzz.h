/* Shared scaffolding of the libFuzzer harnesses: a silent error handler. */
#ifndef RA_TESTS_FUZZ_H
#define RA_TESTS_FUZZ_H

/*
 * A rejected input is the expected outcome of most fuzz inputs, so the
 * harnesses drop the one-line reports the readers make (the default
 * handler prints each to stderr, which would drown libFuzzer's own
 * output).  What the harnesses look for is a crash, a sanitizer report, a
 * leak or a hang, never a status.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static void ra_fuzz_quiet(const char *reason, const char *file, int line, ra_status code)
{
    (void)reason, (void)file, (void)line, (void)code;
}

static inline void ra_fuzz_init(void)
{
    static int done;
    if (!done) {
        ra_set_error_handler(ra_fuzz_quiet);
        done = 1;
    }
}

/* The input as NUL-terminated text for the table readers (an embedded NUL
   ends it early, as for a file read by ra_tsv_load); NULL without memory.
   The caller frees it. */
static inline char *ra_fuzz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

#endif
