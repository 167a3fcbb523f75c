/* GPU test: the CPU rounding emulation against the hardware's own conversions. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "gpu/device.h"
#include "gpu/rounding_probe.h"
#include "testutil.h"

/*
 * The chunked CPU variants claim the rounding points of the GPU kernels they
 * twin: TF32 operands as cvt.rna.tf32.f32, bf16/f16 as cvt.rn.  Here the
 * device itself is the independent source of expected values.  Inputs: hand
 * picked edge cases (ties, carries into the exponent, subnormals, overflow
 * thresholds, signed zeros) plus pseudo-random bit patterns over every
 * exponent.  Exits 77 (skip) without a usable GPU.
 */

#define NRANDOM 200000

static uint32_t lcg_state = 12345u;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state;
}

static float *inputs;
static size_t ninputs;

static void make_inputs(void)
{
    static const uint32_t edges[] = {
        0x00000000u, 0x80000000u, 0x3F800000u, 0x3F801000u,              /* TF32 tie above 1 */
        0x3F803000u, 0x3F800FFFu, 0x3F808000u,                           /* bf16 tie above 1 */
        0x3F818000u, 0x3F807FFFu, 0x7F7FFFFFu,                           /* FLT_MAX */
        0x7F7FF000u, 0x7F7FEFFFu, 0x7F7F8000u, 0x7F7F7FFFu, 0x00000001u, /* min subnormal */
        0x00001000u, 0x00800000u, 0x007FFFFFu, 0x477FF000u,              /* f16 max + half ulp */
        0x477FEFFFu, 0x33000000u, /* 2^-25: f16 half of min subnormal */
        0x33000001u, 0x33400000u, 0x387FE000u, 0x387FF000u, 0x7F800000u,
        0xFF800000u, 0xBF801000u, 0xBF808000u, 0xC77FF000u,
    };
    size_t ne = sizeof edges / sizeof edges[0];
    ninputs = ne + NRANDOM;
    inputs = malloc(ninputs * sizeof *inputs);
    for (size_t i = 0; i < ne; i++)
        inputs[i] = tu_bitsf(edges[i]);
    for (size_t i = ne; i < ninputs; i++) {
        uint32_t u;
        do
            u = lcg();
        while (((u >> 23) & 0xFF) == 0xFF); /* finite only; NaN payloads are not compared */
        inputs[i] = tu_bitsf(u);
    }
}

/* The three conversions: the device's results are `size` bytes each; the
   CPU emulation's are returned as a bit pattern. */
enum { TF32, BF16, F16 };

static uint32_t cpu_tf32(float x) { return tu_fbits(ra_round_tf32_rna(x)); }
static uint32_t cpu_bf16(float x) { return ra_double_to_bf16(x); }
static uint32_t cpu_f16(float x) { return ra_double_to_f16(x); }

static const struct cvt {
    const char *name;
    size_t size;
    uint32_t (*cpu)(float x);
} cvts[] = {[TF32] = {"tf32", sizeof(float), cpu_tf32},
            [BF16] = {"bf16", sizeof(unsigned short), cpu_bf16},
            [F16] = {"f16", sizeof(unsigned short), cpu_f16}};

static ra_status device_convert(int which, void *out)
{
    switch (which) {
    case TF32:
        return ra_gpu_probe_cvt_tf32(out, inputs, ninputs);
    case BF16:
        return ra_gpu_probe_cvt_bf16(out, inputs, ninputs);
    default:
        return ra_gpu_probe_cvt_f16(out, inputs, ninputs);
    }
}

/* Every input converted on the device and by the emulation: the same bits
   (the first five differences printed). */
static void same_as_device(int which)
{
    const struct cvt *c = &cvts[which];
    unsigned char *hw = malloc(ninputs * c->size);
    ck_assert_ptr_nonnull(hw);
    ck_assert_int_eq(device_convert(which, hw), RA_OK);
    size_t bad = 0;
    for (size_t i = 0; i < ninputs; i++) {
        uint32_t dev = 0;
        if (c->size == 2) {
            unsigned short h;
            memcpy(&h, hw + i * 2, 2);
            dev = h;
        } else {
            memcpy(&dev, hw + i * 4, 4);
        }
        if (dev != c->cpu(inputs[i]) && bad++ < 5)
            fprintf(stderr, "%s: in %08x hw %0*x cpu %0*x\n", c->name, tu_fbits(inputs[i]),
                    (int)(2 * c->size), dev, (int)(2 * c->size), c->cpu(inputs[i]));
    }
    ck_assert_uint_eq(bad, 0);
    free(hw);
}

START_TEST(test_cvt_tf32) { same_as_device(TF32); }
END_TEST

START_TEST(test_cvt_bf16) { same_as_device(BF16); }
END_TEST

START_TEST(test_cvt_f16) { same_as_device(F16); }
END_TEST

/* What a tensor core reads from raw fp32 registers in a .tf32 mma: the test
   accepts exactly one consistent rule over all 128 operands (exact fp32,
   truncation to 10 mantissa bits, or cvt.rna) and prints which, since the
   CUDA variants must emulate it when they skip the explicit conversion. */
START_TEST(test_mma_tf32_operand)
{
    float a[128], d[128];
    for (int i = 0; i < 128; i++) {
        uint32_t u = 0x3F800000u | (lcg() & 0x007FFFFFu); /* [1, 2), random low bits */
        if (i % 3 == 0)
            u = (u & ~0x1FFFu) | 0x1000u; /* exact TF32 tie */
        a[i] = (i & 1) ? -tu_bitsf(u) : tu_bitsf(u);
    }
    ck_assert_int_eq(ra_gpu_probe_mma_tf32_operand(d, a), RA_OK);
    int exact = 0, trunc = 0, rna = 0;
    for (int i = 0; i < 128; i++) {
        exact += d[i] == a[i];
        trunc += tu_fbits(d[i]) == (tu_fbits(a[i]) & 0xFFFFE000u);
        rna += d[i] == ra_round_tf32_rna(a[i]);
    }
    printf("mma.sync tf32 operand rule: exact %d/128, truncation %d/128, rna %d/128\n", exact,
           trunc, rna);
    ck_assert(exact == 128 || trunc == 128 || rna == 128);
}
END_TEST

int main(void)
{
    const int probe = tu_gpu_probe("t-gpu-rounding");
    if (probe == 77)
        printf("no CUDA device: skipped\n");
    if (probe != 0)
        return probe;
    make_inputs();
    Suite *s = suite_create("gpu-rounding");
    tu_tcase(s, "data", NULL, NULL, test_cvt_tf32, test_cvt_bf16, test_cvt_f16,
             test_mma_tf32_operand);
    int status = tu_run(s);
    free(inputs);
    return status;
}
