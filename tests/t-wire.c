/* Check suite for the isolation wire format (src/audit/wire.c). */
#include <config.h>

#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "audit/wire.h"
#include "core/kv.h"
#include "testutil.h"

/*
 * Round trips compare the decoded outcome with the one encoded, field by
 * field and tensor bytes bit for bit; the header bytes are checked against
 * the layout written out by hand from wire.h.  Every proper prefix of a
 * message (what a child that died while writing leaves) must be refused,
 * as must a message with a byte too many or a field that lies.
 */

/* An outcome with two tensors of different dtypes and ranks, parameters
   and reasons. */
static void sample(ra_outcome *o)
{
    ra_outcome_init(o);
    o->fst = RA_OK;
    o->bst = RA_EUNSUPPORTED;
    o->bwd_ran = 1;
    o->elapsed_ms = 12.5;
    strcpy(o->bwhy, "no backward for this shape");
    ck_assert_int_eq(ra_case_set_op(&o->result, "gdn"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&o->result.params, "variant", "gdn.x.f64"), RA_OK);
    ck_assert_int_eq(ra_kv_set(&o->result.params, "seed", "7"), RA_OK);
    const int64_t s1[3] = {2, 3, 1};
    const double v1[6] = {1.0, -0.5, 0x1p-1074, 1e300, -0.0, 3.25};
    tu_add(&o->result.tensors, "o", RA_F64, 3, s1, v1);
    const int64_t s2[1] = {4};
    const double v2[4] = {1.0, 0.5, -2.0, 65504.0};
    tu_add(&o->result.tensors, "ht", RA_F16, 1, s2, v2);
}

static void encode(ra_wire_buf *b, const ra_outcome *o)
{
    ra_wire_buf_init(b);
    ck_assert_int_eq(ra_wire_encode_outcome(b, o), RA_OK);
}

START_TEST(test_data_round_trip)
{
    ra_outcome o, back;
    ra_wire_buf b;
    sample(&o);
    encode(&b, &o);
    /* header: "RAW1", kind 1, body length n - 16, little-endian */
    ck_assert(memcmp(b.p, "RAW1\1\0\0\0", 8) == 0);
    uint64_t body = 0;
    for (int i = 7; i >= 0; i--)
        body = body << 8 | b.p[8 + i];
    ck_assert_uint_eq(body, b.n - 16);

    ra_wire_msg m;
    ra_outcome_init(&back);
    ck_assert_int_eq(ra_wire_decode(&m, &back, b.p, b.n), RA_OK);
    ck_assert_int_eq(m.kind, RA_WIRE_OUTCOME);
    ck_assert_int_eq(back.fst, RA_OK);
    ck_assert_int_eq(back.bst, RA_EUNSUPPORTED);
    ck_assert_int_eq(back.bwd_ran, 1);
    ck_assert(back.elapsed_ms == 12.5);
    ck_assert_str_eq(back.fwhy, "");
    ck_assert_str_eq(back.bwhy, "no backward for this shape");
    ck_assert_str_eq(back.result.op, "gdn");
    ck_assert_uint_eq(back.result.params.n, 2);
    ck_assert_str_eq(ra_case_param(&back.result, "variant"), "gdn.x.f64");
    ck_assert_str_eq(ra_case_param(&back.result, "seed"), "7");
    tu_assert_same_tensors(&back.result.tensors, &o.result.tensors);
    ck_assert(signbit(tu_at(&back.result.tensors, "o", 4)));
    ra_outcome_clear(&back);
    ra_outcome_clear(&o);
    ra_wire_buf_clear(&b);
}
END_TEST

START_TEST(test_special_empty_outcome)
{
    /* A failed forward: no op, no parameters, no tensors, a reason. */
    ra_outcome o, back;
    ra_outcome_init(&o);
    o.fst = RA_ENUMERIC;
    o.elapsed_ms = -1;
    strcpy(o.fwhy, "NaN in o");
    ra_wire_buf b;
    encode(&b, &o);
    ck_assert_uint_eq(b.n, 16 + 4 + 4 + 4 + 8 + (4 + 8) + 4 + 4 + 4 + 4);
    ra_wire_msg m;
    ra_outcome_init(&back);
    ck_assert_int_eq(ra_wire_decode(&m, &back, b.p, b.n), RA_OK);
    ck_assert_int_eq(back.fst, RA_ENUMERIC);
    ck_assert_str_eq(back.fwhy, "NaN in o");
    ck_assert_uint_eq(back.result.tensors.n, 0);
    ck_assert(back.elapsed_ms == -1);
    ra_outcome_clear(&back);
    ra_wire_buf_clear(&b);
}
END_TEST

START_TEST(test_special_fault)
{
    unsigned char msg[RA_WIRE_FAULT_BYTES];
    ra_wire_encode_fault(msg, 0x123456789aULL, SIGSEGV);
    ra_wire_msg m;
    ra_outcome o;
    ra_outcome_init(&o);
    ck_assert_int_eq(ra_wire_decode(&m, &o, msg, sizeof msg), RA_OK);
    ck_assert_int_eq(m.kind, RA_WIRE_FAULT);
    ck_assert_uint_eq(m.fault_offset, 0x123456789aULL);
    ck_assert_int_eq(m.fault_signal, SIGSEGV);
    ck_assert_uint_eq(msg[16], 0x9a); /* little-endian offset */
    ck_assert_uint_eq(msg[20], 0x12);
}
END_TEST

START_TEST(test_regress_truncated_refused)
{
    ra_outcome o;
    ra_wire_buf b;
    sample(&o);
    encode(&b, &o);
    for (size_t n = 0; n < b.n; n++) {
        ra_wire_msg m;
        ra_outcome back;
        ra_outcome_init(&back);
        tu_reset();
        ra_status st = ra_wire_decode(&m, &back, b.p, n);
        ck_assert_msg(st == RA_EFORMAT, "a prefix of %zu of %zu bytes was accepted", n, b.n);
        tu_has(tu_msg, "truncated");
        ra_outcome_clear(&back);
    }
    ra_outcome_clear(&o);
    ra_wire_buf_clear(&b);
}
END_TEST

/* Decoding the bytes refuses them with RA_EFORMAT and a message holding want. */
static void refused(const unsigned char *p, size_t n, const char *want)
{
    ra_wire_msg m;
    ra_outcome back;
    ra_outcome_init(&back);
    tu_reset();
    tu_expect_error(ra_wire_decode(&m, &back, p, n), RA_EFORMAT, want);
    ra_outcome_clear(&back);
}

START_TEST(test_regress_lies_refused)
{
    ra_outcome o;
    ra_wire_buf b;
    sample(&o);
    encode(&b, &o);
    /* one byte too many */
    unsigned char *p = malloc(b.n + 1);
    memcpy(p, b.p, b.n);
    p[b.n] = 0;
    refused(p, b.n + 1, "trailing");
    /* a bad magic, an unknown kind */
    memcpy(p, b.p, b.n);
    p[0] = 'X';
    refused(p, b.n, "RAW1");
    memcpy(p, b.p, b.n);
    p[4] = 9;
    refused(p, b.n, "unknown kind");
    /* the first tensor's dtype: after the header 16, statuses, flags and
       time 20, the reasons 4 + 0 and 4 + 26, the op 4 + 3, the parameter
       count 4 and pairs (4 + 7, 4 + 9), (4 + 4, 4 + 1), the tensor count 4
       and the name 4 + 1 */
    size_t at = 16 + 20 + (4 + 0) + (4 + 26) + (4 + 3) + 4 + (4 + 7) + (4 + 9) + (4 + 4) + (4 + 1) +
                4 + (4 + 1);
    memcpy(p, b.p, b.n);
    ck_assert_uint_eq(p[at], RA_F64);
    p[at] = 17;
    refused(p, b.n, "dtype 17");
    /* its rank */
    memcpy(p, b.p, b.n);
    p[at + 4] = 9;
    refused(p, b.n, "rank 9");
    /* its first dimension 2 -> 3: the byte count no longer fits the shape */
    memcpy(p, b.p, b.n);
    ck_assert_uint_eq(p[at + 8], 2);
    p[at + 8] = 3;
    refused(p, b.n, "carries 48 bytes, its shape needs 72");
    free(p);
    ra_outcome_clear(&o);
    ra_wire_buf_clear(&b);
}
END_TEST

static Suite *wire_suite(void)
{
    Suite *s = suite_create("wire");
    tu_tcase(s, "special", tu_capture, NULL, test_special_empty_outcome, test_special_fault);
    tu_tcase(s, "data", tu_capture, NULL, test_data_round_trip);
    tu_tcase(s, "regress", tu_capture, NULL, test_regress_truncated_refused,
             test_regress_lies_refused);
    return s;
}

int main(void) { return tu_run(wire_suite()); }
