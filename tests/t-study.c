/* Check suite for the study framework (src/study/): points tables, CSV/markdown, plots, fits,
 * cached references. */
#include <config.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/registry.h"
#include "study/study.h"
#include "testutil.h"

/*
 * Expected values are worked by hand: the CSV and markdown texts of a
 * three-row table written out literally, least-squares fits of lines
 * chosen so the normal equations solve exactly (slope, intercept, R^2 from
 * the closed forms of simple regression), the plot's skip reason.  The
 * cache test asks for the same case twice and expects the second
 * reference to be a cache hit, counted in the context, with the same bytes.
 */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static ra_points *three_rows(void)
{
    ra_points *p;
    static const char *const cols[] = {"name", "L", "err", NULL};
    ck_assert_int_eq(ra_points_new(&p, cols), RA_OK);
    ck_assert_int_eq(ra_points_row(p), RA_OK);
    ck_assert_int_eq(ra_points_set_text(p, "name", "a,b"), RA_OK);
    ck_assert_int_eq(ra_points_set_num(p, "L", 1), RA_OK);
    ck_assert_int_eq(ra_points_set_num(p, "err", 0.1), RA_OK);
    ck_assert_int_eq(ra_points_row(p), RA_OK);
    ck_assert_int_eq(ra_points_set_text(p, "name", "x|y"), RA_OK);
    ck_assert_int_eq(ra_points_set_num(p, "L", 2), RA_OK);
    /* err left empty */
    ck_assert_int_eq(ra_points_row(p), RA_OK);
    ck_assert_int_eq(ra_points_set_text(p, "name", "z"), RA_OK);
    ck_assert_int_eq(ra_points_set_num(p, "L", 4), RA_OK);
    ck_assert_int_eq(ra_points_set_num(p, "err", 1.5e-7), RA_OK);
    return p;
}

START_TEST(test_points_data)
{
    ra_points *p = three_rows();
    ck_assert_uint_eq(ra_points_nrows(p), 3);
    ck_assert_int_eq(ra_points_ncols(p), 3);
    ck_assert_int_eq(ra_points_col(p, "err"), 2);
    ck_assert_int_eq(ra_points_col(p, "nope"), -1);
    double x = 0;
    ck_assert(ra_points_num(&x, p, 0, 2) && x == 0.1);
    ck_assert(!ra_points_num(&x, p, 1, 2)); /* empty */
    ck_assert(!ra_points_num(&x, p, 0, 0)); /* text */
    ck_assert_str_eq(ra_points_text(p, 1, 2), "");
    ck_assert_ptr_null(ra_points_text(p, 3, 0));
    /* put into an earlier row */
    ck_assert_int_eq(ra_points_put_num(p, 1, "err", 2), RA_OK);
    ck_assert(ra_points_num(&x, p, 1, 2) && x == 2);
    ck_assert_int_eq(ra_points_put_text(p, 1, "err", ""), RA_OK);

    const char *csv = tu_scratch("p.csv");
    ck_assert_int_eq(ra_points_write_csv(p, csv), RA_OK);
    ck_assert_str_eq(slurp(csv), "name,L,err\n"
                                 "\"a,b\",1,0.10000000000000001\n"
                                 "x|y,2,\n"
                                 "z,4,1.4999999999999999e-07\n");
    FILE *f = fopen(tu_scratch("p.md"), "w");
    static const char *const cols[] = {"L", "err", NULL};
    ck_assert_int_eq(ra_points_write_markdown(p, f, cols, NULL, NULL), RA_OK);
    fclose(f);
    const char *md = slurp(tu_scratch("p.md"));
    tu_has(md, "|   L |     err |\n", "|   1 |     0.1 |\n", "|   2 |         |\n",
           "|   4 | 1.5e-07 |\n");
    ck_assert_ptr_null(strstr(md, "name"));
    ra_points_free(p);
}
END_TEST

START_TEST(test_points_special)
{
    ra_points *p;
    static const char *const dup[] = {"a", "a", NULL};
    tu_expect_error(ra_points_new(&p, dup), RA_EINVAL, "'a' given twice");
    static const char *const bad[] = {"a,b", NULL};
    tu_expect_error(ra_points_new(&p, bad), RA_EINVAL, "bad column name");
    static const char *const none[] = {NULL};
    tu_expect_error(ra_points_new(&p, none), RA_EINVAL, "no columns");
    static const char *const ok[] = {"a", NULL};
    ck_assert_int_eq(ra_points_new(&p, ok), RA_OK);
    tu_expect_error(ra_points_set_num(p, "a", 1), RA_EINVAL, "row 0 of 0");
    ck_assert_int_eq(ra_points_row(p), RA_OK);
    tu_expect_error(ra_points_set_num(p, "b", 1), RA_ENOTFOUND, "no column 'b'");
    ra_points_free(p);
}
END_TEST

START_TEST(test_fit_data)
{
    /* y = 2 + 3x exactly: slope 3, intercept 2, R^2 = 1, s.e. 0 */
    const double x[] = {1, 2, 4, 8}, y[] = {5, 8, 14, 26};
    ra_fit f;
    ck_assert_int_eq(ra_fit_linear(&f, x, y, 4), RA_OK);
    ck_assert_double_eq_tol(f.slope, 3, 1e-13);
    ck_assert_double_eq_tol(f.intercept, 2, 1e-13);
    ck_assert_double_eq_tol(f.r2, 1, 1e-13);
    ck_assert_double_eq_tol(f.slope_se, 0, 1e-12);
    /* x = 0,1,2,3, y = 0,2,1,3: mean x 1.5, mean y 1.5, Sxx = 5, Sxy = 4:
       slope 0.8, intercept 0.3; residuals -0.3, 0.9, -0.9, 0.3: SSE 1.8,
       SST 5, R^2 0.64; s.e. = sqrt(SSE/(n-2)/Sxx) = sqrt(0.18) */
    const double x2[] = {0, 1, 2, 3}, y2[] = {0, 2, 1, 3};
    ck_assert_int_eq(ra_fit_linear(&f, x2, y2, 4), RA_OK);
    ck_assert_double_eq_tol(f.slope, 0.8, 1e-14);
    ck_assert_double_eq_tol(f.intercept, 0.3, 1e-14);
    ck_assert_double_eq_tol(f.r2, 0.64, 1e-14);
    ck_assert_double_eq_tol(f.slope_se, sqrt(0.18), 1e-14);
}
END_TEST

START_TEST(test_fit_special)
{
    ra_fit f;
    const double x[] = {1, 1, 1}, y[] = {1, 2, 3}, yn[] = {1, NAN, 3};
    tu_expect_error(ra_fit_linear(&f, x, y, 1), RA_EINVAL, "1 point");
    tu_expect_error(ra_fit_linear(&f, x, y, 3), RA_EINVAL, "every x is the same");
    const double x2[] = {1, 2, 3};
    tu_expect_error(ra_fit_linear(&f, x2, yn, 3), RA_EINVAL, "point 1 is not finite");
}
END_TEST

START_TEST(test_plot_special)
{
    ra_points *p = three_rows();
    ra_plot spec = {.title = "t", .x = "L", .y = {"err"}, .logx = 1, .logy = 1};
    int made = 1;
    char why[256];
    const char *svg = tu_scratch("p.svg");
    ck_assert_int_eq(ra_points_plot(&made, why, sizeof why, p, &spec, svg, "none"), RA_OK);
    ck_assert_int_eq(made, 0);
    tu_has(why, "plotting disabled");
    ck_assert_int_eq(ra_points_plot(&made, why, sizeof why, p, &spec, svg, "no-such-gnuplot-xyz"),
                     RA_OK);
    ck_assert_int_eq(made, 0);
    tu_has(why, "gnuplot not found", "gnuplot-nox");
    ck_assert_int_ne(access(svg, F_OK), 0);
    ra_plot bad = {.x = "L", .y = {"nope"}};
    tu_expect_error(ra_points_plot(&made, why, sizeof why, p, &bad, svg, "none"), RA_ENOTFOUND,
                    "no column 'nope'");
    /* a program that runs and fails is an error, not a skip */
    tu_expect_error(ra_points_plot(&made, why, sizeof why, p, &spec, svg, "/bin/false"), RA_EIO,
                    "failed");
    ra_points_free(p);
}
END_TEST

START_TEST(test_plot_data)
{
    char prog[4096];
    const char *path = getenv("PATH");
    int found = 0;
    while (path && *path && !found) {
        size_t n = strcspn(path, ":");
        snprintf(prog, sizeof prog, "%.*s/gnuplot", (int)n, path);
        found = access(prog, X_OK) == 0;
        path += n + (path[n] == ':');
    }
    if (!found)
        return; /* nothing to check without gnuplot: the skip is tested above */
    ra_points *p = three_rows();
    ra_plot spec = {.title = "it's", .x = "L", .y = {"err"}, .series = "name", .logy = 1};
    int made = 0;
    char why[256];
    const char *svg = tu_scratch("p.svg");
    ck_assert_int_eq(ra_points_plot(&made, why, sizeof why, p, &spec, svg, prog), RA_OK);
    ck_assert_int_eq(made, 1);
    const char *s = slurp(svg);
    tu_has(s, "<svg", "it's", "name=z");
    /* a categorical axis: the text column labels the x tics */
    ra_plot cat = {.x = "L", .y = {"err"}, .xtic = "name", .logy = 1};
    ck_assert_int_eq(ra_points_plot(&made, why, sizeof why, p, &cat, svg, prog), RA_OK);
    ck_assert_int_eq(made, 1);
    tu_has(slurp(svg), "<svg", ">a,b<", ">z<");
    ra_plot badx = {.x = "L", .y = {"err"}, .xtic = "nope"};
    tu_expect_error(ra_points_plot(&made, why, sizeof why, p, &badx, svg, prog), RA_ENOTFOUND,
                    "no x tic column 'nope'");
    ra_points_free(p);
}
END_TEST

START_TEST(test_cache_regress)
{
    /* a study never recomputes a reference the cache has */
    setenv("RECAUDIT_CACHE", tu_scratch("cache"), 1);
    ra_study_ctx ctx;
    ra_study_ctx_init(&ctx);
    ck_assert_int_eq(ra_registry_new(&ctx.registry), RA_OK);
    ra_study_case a, b;
    ck_assert_int_eq(ra_study_case_make(&a, &ctx, "scan.affine", "B=1,T=8,N=1,k=2,v=1",
                                        "rotation:0.5", "f32", 3, NULL, NULL, 1),
                     RA_OK);
    ck_assert_uint_eq(ctx.ref_computed, 1);
    ck_assert_uint_eq(ctx.ref_hits, 0);
    ck_assert_int_eq(ra_study_case_make(&b, &ctx, "scan.affine", "B=1,T=8,N=1,k=2,v=1",
                                        "rotation:0.5", "f32", 3, NULL, NULL, 1),
                     RA_OK);
    ck_assert_uint_eq(ctx.ref_computed, 1);
    ck_assert_uint_eq(ctx.ref_hits, 1);
    ck_assert_str_eq(ra_case_param(&b.ref, "cache"), "hit");
    tu_assert_same_tensors(&a.ref.tensors, &b.ref.tensors);
    /* run a registered variant and measure: the store backward is within
       a few fp32 roundoffs of the truth on 8 steps */
    const ra_variant *v;
    ck_assert_int_eq(ra_study_variant(&v, &ctx, "scan.cpu.affine.ieee.store"), RA_OK);
    ra_case res;
    ra_case_init(&res);
    ck_assert_int_eq(ra_study_run(&res, &ctx, v, &a), RA_OK);
    ra_metrics m;
    ck_assert_int_eq(ra_study_measure(&m, &res, &a, "dA"), RA_OK);
    ck_assert(m.max_rel < 1e-6);
    tu_expect_error(ra_study_measure(&m, &res, &a, "nope"), RA_ENOTFOUND, "'nope'");
    tu_expect_error(ra_study_variant(&v, &ctx, "no.such.variant"), RA_ENOTFOUND, "no.such.variant");
    ra_case_clear(&res);
    ra_study_case_clear(&a);
    ra_study_case_clear(&b);
    ra_registry_free(ctx.registry);
}
END_TEST

START_TEST(test_table_special)
{
    ck_assert_ptr_nonnull(ra_study_find("reversal"));
    ck_assert_ptr_null(ra_study_find("nope"));
    for (const ra_study *s = ra_studies; s->name; s++) {
        ck_assert_ptr_nonnull(s->run);
        ck_assert_ptr_nonnull(s->doc);
        ck_assert_ptr_nonnull(s->title);
        ck_assert_ptr_eq(ra_study_find(s->name), s);
    }
}
END_TEST

static void setup(void)
{
    tu_capture();
    tu_scratch_setup();
}

static Suite *study_suite(void)
{
    Suite *s = suite_create("study");
    tu_tcase(s, "special", setup, tu_scratch_teardown, test_points_special, test_fit_special,
             test_plot_special, test_table_special);
    tu_tcase(s, "data", setup, tu_scratch_teardown, test_points_data, test_fit_data,
             test_plot_data);
    tu_tcase(s, "regress", setup, tu_scratch_teardown, test_cache_regress);
    return s;
}

int main(void) { return tu_run(study_suite()); }
