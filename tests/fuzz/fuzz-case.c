/* libFuzzer harness: the case reader (ra_case_load) and the gdn case validation. */
#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/case.h"
#include "core/gdn_case.h"
#include "core/io.h"
#include "fuzz.h"

/*
 * ra_case_load reads a path, so each input is written to one temporary
 * file (created once per process, rewritten per input) and loaded: the
 * file layer, the safetensors reader, the metadata-to-parameters step.  A
 * case that loads and names op gdn then goes through
 * ra_gdn_problem_init, the validation every gdn reader shares (shapes,
 * parameters, NaN/Inf), with and without cotangents required.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[4096];

static void remove_file(void) { unlink(path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ra_fuzz_init();
    if (!path[0]) {
        if (ra_temp_template(path, sizeof path, "recaudit-fuzz-case") != RA_OK)
            abort();
        int fd = mkstemp(path);
        if (fd < 0)
            abort();
        close(fd);
        atexit(remove_file);
    }
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    ra_case c;
    ra_case_init(&c);
    if (ra_case_load(&c, path) == RA_OK && c.op && strcmp(c.op, "gdn") == 0) {
        ra_gdn_problem p;
        (void)ra_gdn_problem_init(&p, &c, 0, "fuzz");
        (void)ra_gdn_problem_init(&p, &c, RA_GDN_NEED_COTANGENTS, "fuzz");
    }
    ra_case_clear(&c);
    return 0;
}
