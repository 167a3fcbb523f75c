/* Check suite for the table writers (src/core/table.c) and the op list. */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/status.h"
#include "core/table.h"
#include "testutil.h"

/*
 * Every expected output is written out literally below, worked by hand
 * from the format rules in table.h/table.c (column widths counted by
 * hand).  JSON outputs are also read back with jansson's parser, an
 * independent check that they are valid JSON with the intended types.
 * ra_fmt_value expectations come from hand rounding (worked in comments).
 */

/* Writes t in fmt to a malloc'ed string. */
static char *render(const ra_table *t, ra_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ra_table_write(t, f, fmt), RA_OK);
    fclose(f);
    return buf;
}

static void expect(const ra_table *t, ra_format fmt, const char *want)
{
    char *got = render(t, fmt);
    ck_assert_str_eq(got, want);
    free(got);
}

static ra_table *make(int ncols, const char *const *headers)
{
    ra_table *t;
    ck_assert_int_eq(ra_table_new(&t, ncols, headers), RA_OK);
    return t;
}

static ra_table *sample(void)
{
    static const char *const h[] = {"name", "dtype", "max"};
    static const char *const r[3][3] = {
        {"q", "bf16", "1.5"}, {"beta", "f32", "-0.25"}, {"x,y", "f\"16", "1e-3"}};
    ra_table *t = make(3, h);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(ra_table_add_row(t, r[i]), RA_OK);
    return t;
}

START_TEST(test_data_text)
{
    ra_table *t = sample();
    /* widths 4, 5, 5; "max" is numeric, so right-aligned */
    expect(t, RA_FMT_TEXT,
           "name  dtype    max\n"
           "----  -----  -----\n"
           "q     bf16     1.5\n"
           "beta  f32    -0.25\n"
           "x,y   f\"16    1e-3\n");
    ra_table_free(t);
}
END_TEST

START_TEST(test_data_markdown)
{
    ra_table *t = sample();
    expect(t, RA_FMT_MARKDOWN,
           "| name | dtype |   max |\n"
           "|------|-------|------:|\n"
           "| q    | bf16  |   1.5 |\n"
           "| beta | f32   | -0.25 |\n"
           "| x,y  | f\"16  |  1e-3 |\n");
    ra_table_free(t);
}
END_TEST

START_TEST(test_data_csv)
{
    ra_table *t = sample();
    expect(t, RA_FMT_CSV,
           "name,dtype,max\n"
           "q,bf16,1.5\n"
           "beta,f32,-0.25\n"
           "\"x,y\",\"f\"\"16\",1e-3\n");
    ra_table_free(t);
}
END_TEST

START_TEST(test_data_json)
{
    ra_table *t = sample();
    expect(t, RA_FMT_JSON,
           "[\n"
           "  {\"name\": \"q\", \"dtype\": \"bf16\", \"max\": 1.5},\n"
           "  {\"name\": \"beta\", \"dtype\": \"f32\", \"max\": -0.25},\n"
           "  {\"name\": \"x,y\", \"dtype\": \"f\\\"16\", \"max\": 1e-3}\n"
           "]\n");
    /* Read back by jansson: an array of 3 objects, max a real, names strings. */
    char *s = render(t, RA_FMT_JSON);
    json_error_t err;
    json_t *j = json_loads(s, 0, &err);
    ck_assert_msg(j != NULL, "invalid JSON: %s", err.text);
    ck_assert(json_is_array(j));
    ck_assert_int_eq(json_array_size(j), 3);
    json_t *row = json_array_get(j, 2);
    ck_assert_str_eq(json_string_value(json_object_get(row, "name")), "x,y");
    ck_assert_str_eq(json_string_value(json_object_get(row, "dtype")), "f\"16");
    ck_assert(json_is_real(json_object_get(row, "max")));
    ck_assert(json_real_value(json_object_get(row, "max")) == 1e-3);
    json_decref(j);
    free(s);
    ra_table_free(t);
}
END_TEST

START_TEST(test_special_numbers)
{
    /* Non-finite cells align as numbers but are JSON strings; numbers that
       are not JSON literals go through a double; text stays text. */
    static const char *const h[] = {"v"};
    static const char *const cells[] = {"inf",   "-NaN", ".5", "+1", "007", "1e999",
                                        "12abc", "-0",   "1e", "1.", "-"};
    ra_table *t = make(1, h);
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        ck_assert_int_eq(ra_table_add_row(t, &cells[i]), RA_OK);
    expect(t, RA_FMT_JSON,
           "[\n"
           "  {\"v\": \"inf\"},\n"
           "  {\"v\": \"-NaN\"},\n"
           "  {\"v\": 0.5},\n"
           "  {\"v\": 1.0},\n"
           "  {\"v\": 7.0},\n"
           "  {\"v\": \"1e999\"},\n"
           "  {\"v\": \"12abc\"},\n"
           "  {\"v\": -0},\n"
           "  {\"v\": \"1e\"},\n"
           "  {\"v\": 1.0},\n"
           "  {\"v\": \"-\"}\n"
           "]\n");
    char *s = render(t, RA_FMT_JSON);
    json_t *j = json_loads(s, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_decref(j);
    free(s);
    /* "12abc", "1e", "-" are text: the column is left-aligned. */
    expect(t, RA_FMT_TEXT, "v\n-----\ninf\n-NaN\n.5\n+1\n007\n1e999\n12abc\n-0\n1e\n1.\n-\n");
    ra_table_free(t);

    /* Only numbers (and non-finite) and blanks: right-aligned. */
    static const char *const h2[] = {"a", "b"};
    static const char *const r2[2][2] = {{"nan", ""}, {"10", ""}};
    t = make(2, h2);
    ck_assert_int_eq(ra_table_add_row(t, r2[0]), RA_OK);
    ck_assert_int_eq(ra_table_add_row(t, r2[1]), RA_OK);
    expect(t, RA_FMT_TEXT, "  a  b\n---  -\nnan  \n 10  \n");
    expect(t, RA_FMT_CSV, "a,b\nnan,\n10,\n");
    expect(t, RA_FMT_JSON, "[\n  {\"a\": \"nan\", \"b\": \"\"},\n  {\"a\": 10, \"b\": \"\"}\n]\n");
    ra_table_free(t);
}
END_TEST

START_TEST(test_special_escapes)
{
    /* Markdown escapes '|' and turns newlines into <br>; text blanks control
       characters; CSV quotes CR/LF; widths count code points ("µs" is 2). */
    static const char *const h[] = {"µs", "s"};
    static const char *const r[] = {"1", "a|b\nc"};
    ra_table *t = make(2, h);
    ck_assert_int_eq(ra_table_add_row(t, r), RA_OK);
    expect(t, RA_FMT_TEXT, "µs  s\n--  -----\n 1  a|b c\n");
    expect(t, RA_FMT_MARKDOWN,
           "|  µs | s         |\n"
           "|----:|-----------|\n"
           "|   1 | a\\|b<br>c |\n");
    expect(t, RA_FMT_CSV, "µs,s\n1,\"a|b\nc\"\n");
    expect(t, RA_FMT_JSON, "[\n  {\"µs\": 1, \"s\": \"a|b\\nc\"}\n]\n");
    ra_table_free(t);
}
END_TEST

START_TEST(test_special_empty)
{
    static const char *const h[] = {"op", "doc"};
    ra_table *t = make(2, h);
    ck_assert_uint_eq(ra_table_rows(t), 0);
    ck_assert_int_eq(ra_table_cols(t), 2);
    ck_assert_str_eq(ra_table_header(t, 0), "op");
    ck_assert_str_eq(ra_table_header(t, 1), "doc");
    ck_assert_ptr_null(ra_table_header(t, 2));
    ck_assert_ptr_null(ra_table_header(t, -1));
    expect(t, RA_FMT_TEXT, "op  doc\n--  ---\n");
    expect(t, RA_FMT_MARKDOWN, "| op  | doc |\n|-----|-----|\n");
    expect(t, RA_FMT_CSV, "op,doc\n");
    expect(t, RA_FMT_JSON, "[]\n");
    /* NULL cells are empty strings; cell() reads back and bounds-checks. */
    const char *r[] = {NULL, "x"};
    ck_assert_int_eq(ra_table_add_row(t, r), RA_OK);
    ck_assert_str_eq(ra_table_cell(t, 0, 0), "");
    ck_assert_str_eq(ra_table_cell(t, 0, 1), "x");
    ck_assert_ptr_null(ra_table_cell(t, 1, 0));
    ck_assert_ptr_null(ra_table_cell(t, 0, 2));
    ck_assert_ptr_null(ra_table_cell(t, 0, -1));
    ra_table_free(t);
}
END_TEST

START_TEST(test_special_errors)
{
    ra_table *t = (ra_table *)1;
    static const char *const dup[] = {"a", "b", "a"};
    ck_assert_int_eq(ra_table_new(&t, 3, dup), RA_EINVAL);
    ck_assert_ptr_null(t);
    ck_assert(strstr(ra_last_error(), "'a' appears twice") != NULL);
    static const char *const empty[] = {"a", ""};
    ck_assert_int_eq(ra_table_new(&t, 2, empty), RA_EINVAL);
    ck_assert(strstr(ra_last_error(), "column 2") != NULL);
    ck_assert_int_eq(ra_table_new(&t, 0, dup), RA_EINVAL);
    ck_assert_int_eq(tu_nerr, 3);

    static const struct {
        const char *text;
        ra_format f;
    } names[] = {{"MD", RA_FMT_MARKDOWN},
                 {"markdown", RA_FMT_MARKDOWN},
                 {"csv", RA_FMT_CSV},
                 {"json", RA_FMT_JSON},
                 {"text", RA_FMT_TEXT}};
    ra_format f = RA_FMT_TEXT;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ck_assert_int_eq(ra_format_parse(&f, names[i].text), RA_OK);
        ck_assert_int_eq(f, names[i].f);
    }
    ck_assert_int_eq(ra_format_parse(&f, "xml"), RA_EINVAL);
    ck_assert(strstr(ra_last_error(), "'xml'") != NULL);
    ck_assert_int_eq(ra_format_parse(&f, NULL), RA_EINVAL);

    /* A full stream is an I/O error, not silence. */
    static const char *const h[] = {"a"};
    t = make(1, h);
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        ck_assert_int_eq(ra_table_write(t, full, RA_FMT_CSV), RA_EIO);
        fclose(full);
    }
    ck_assert_int_eq(ra_table_write(t, stdout, (ra_format)99), RA_EINVAL);
    ra_table_free(t);
}
END_TEST

static void expect_fmt(double x, ra_dtype dt, const char *want)
{
    char buf[64];
    ra_fmt_value(buf, sizeof buf, x, dt);
    ck_assert_msg(strcmp(buf, want) == 0, "ra_fmt_value(%.17g, %d) = '%s', want '%s'", x, (int)dt,
                  buf, want);
}

START_TEST(test_special_fmt_value)
{
    expect_fmt(0.1, RA_F64, "0.1");
    expect_fmt((double)0.1f, RA_F32, "0.1");
    expect_fmt(0.1, RA_F32, "0.1"); /* rounded to f32 first */
    /* 1/3 = 0.333333333333333314829616256247... (f64); 0.3333333333333333
       is within half an ulp (2^-55 = 2.8e-17), 0.333333333333333 is not. */
    expect_fmt(1.0 / 3.0, RA_F64, "0.3333333333333333");
    /* bf16(1/3) = 171/512 = 0.333984375: "0.33" reads back as 169/512,
       "0.334" as 171/512. */
    expect_fmt(1.0 / 3.0, RA_BF16, "0.334");
    /* f16(1/3) = 1365/4096: "0.333" -> 1364/4096, "0.3333" -> 1365/4096. */
    expect_fmt(1.0 / 3.0, RA_F16, "0.3333");
    /* FLT_MAX = 3.4028234663852886e38, ulp 2^104 = 2.0e31: 3.402823e38 is
       4.7e31 away, 3.4028235e38 is 3.4e30 away. */
    expect_fmt(3.4028234663852886e38, RA_F32, "3.4028235e+38");
    expect_fmt(4.9406564584124654e-324, RA_F64, "5e-324");
    expect_fmt(-0.0, RA_F64, "-0");
    expect_fmt(2.0, RA_BF16, "2");
    expect_fmt(-1.5, RA_F16, "-1.5");
    /* 65520 is the f16 midpoint of 65504 and 65536 (= overflow): ties to
       even rounds up, to inf. */
    expect_fmt(65520.0, RA_F16, "inf");
    expect_fmt(-INFINITY, RA_F32, "-inf");
    expect_fmt(NAN, RA_F64, "nan");
}
END_TEST


static Suite *table_suite(void)
{
    Suite *s = suite_create("table");
    tu_tcase(s, "data", tu_capture, NULL, test_data_text, test_data_markdown, test_data_csv,
             test_data_json);
    tu_tcase(s, "special", tu_capture, NULL, test_special_numbers, test_special_escapes,
             test_special_empty, test_special_errors, test_special_fmt_value);
    return s;
}

int main(void) { return tu_run(table_suite()); }
