/* libFuzzer harness: the in-memory safetensors reader (ra_safetensors_parse). */
#include <config.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/io.h"
#include "core/kv.h"
#include "core/tensor.h"
#include "fuzz.h"

/*
 * Any byte string is parsed, with and without metadata output; what
 * parses is written back and parsed again (the round trip must succeed:
 * a file the reader accepts is one the writer can reproduce).
 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ra_fuzz_init();
    ra_tensors ts;
    ra_kv meta;
    ra_tensors_init(&ts);
    ra_kv_init(&meta);
    if (ra_safetensors_parse(&ts, &meta, data, size, "fuzz") == RA_OK) {
        uint8_t *buf = NULL;
        size_t len = 0;
        if (ra_safetensors_serialize(&buf, &len, &ts, &meta) == RA_OK) {
            ra_tensors back;
            ra_tensors_init(&back);
            if (ra_safetensors_parse(&back, NULL, buf, len, "round trip") != RA_OK)
                abort();
            ra_tensors_clear(&back);
            free(buf);
        }
    }
    ra_tensors_clear(&ts);
    ra_kv_clear(&meta);
    ra_tensors_init(&ts);
    (void)ra_safetensors_parse(&ts, NULL, data, size, NULL);
    ra_tensors_clear(&ts);
    return 0;
}
