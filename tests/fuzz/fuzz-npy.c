/* libFuzzer harness: the in-memory .npy reader (ra_npy_parse). */
#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/io.h"
#include "core/tensor.h"
#include "fuzz.h"

/*
 * Any byte string is parsed; an accepted array is written back and parsed
 * again (the round trip must succeed) and every element is read, so a
 * header that promises more data than the buffer holds shows as an
 * out-of-bounds read.
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ra_fuzz_init();
    ra_tensor *t = NULL;
    if (ra_npy_parse(&t, data, size, "x", "fuzz") != RA_OK)
        return 0;
    volatile double sink = 0;
    for (int64_t i = 0; i < t->numel; i++)
        sink += ra_tensor_get(t, i);
    (void)sink;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (ra_npy_serialize(&buf, &len, t) == RA_OK) {
        ra_tensor *back = NULL;
        if (ra_npy_parse(&back, buf, len, "x", "round trip") != RA_OK)
            abort();
        ra_tensor_free(back);
        free(buf);
    }
    ra_tensor_free(t);
    return 0;
}
