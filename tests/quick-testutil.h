/* Test helper: the shipped gates and quick suite, loaded around each test (a Check fixture). */
#ifndef RA_TESTS_QUICK_TESTUTIL_H
#define RA_TESTS_QUICK_TESTUTIL_H

/*
 * The tests that judge variants as a merge would (validate over the
 * shipped quick suite with the shipped gates, compiled in) share this
 * fixture: quick_setup loads both into `gates` and `quick` and captures
 * errors, quick_teardown frees them.
 */

#include <check.h>

#include "audit/audit.h"
#include "testutil.h"

static ra_gates gates;
static ra_suite quick;

static void quick_setup(void)
{
    tu_capture();
    ra_gates_init(&gates);
    ck_assert_msg(ra_gates_load(&gates, NULL) == RA_OK, "%s", ra_last_error());
    ra_suite_init(&quick);
    ck_assert_msg(ra_suite_load(&quick, "quick") == RA_OK, "%s", ra_last_error());
}

static void quick_teardown(void)
{
    ra_suite_clear(&quick);
    ra_gates_clear(&gates);
}

#endif
