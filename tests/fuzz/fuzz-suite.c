/* libFuzzer harness: the suite table reader (ra_suite_parse, through src/audit/tsv.c). */
#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit/suite.h"
#include "fuzz.h"

/*
 * As fuzz-gates.c: the input, NUL-terminated, is one suite file; rows go
 * through the operation table's shape parsers and spec checks.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ra_fuzz_init();
    char *text = ra_fuzz_text(data, size);
    if (!text)
        return 0;
    ra_suite s;
    ra_suite_init(&s);
    (void)ra_suite_parse(&s, text, "fuzz.tsv");
    ra_suite_clear(&s);
    free(text);
    return 0;
}
