/* Check suite for the progress bar (src/core/progress.c), drawn on a pty. */
#define _GNU_SOURCE /* posix_openpt, ptsname */
#include <config.h>

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "core/progress.h"
#include "testutil.h"

/*
 * The bar draws only on a terminal, so these tests put a pseudo-terminal
 * on fd 2 (raw mode: bytes pass unchanged) and read what arrives on the
 * master side.  Expected texts are worked by hand from the line format
 * "\r<label> <done>/<total> <unit> <pct>% <rate> <unit>/s ETA <eta>\033[K".
 * Each test runs in its own forked process (Check's default), so moving
 * fd 2 does not leak between tests.
 */

static int master = -1;

/* Replaces fd 2 with the slave side of a fresh pty. */
static void use_pty(void)
{
    master = posix_openpt(O_RDWR | O_NOCTTY);
    ck_assert_int_ge(master, 0);
    ck_assert_int_eq(grantpt(master), 0);
    ck_assert_int_eq(unlockpt(master), 0);
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    ck_assert_int_ge(slave, 0);
    struct termios tio;
    ck_assert_int_eq(tcgetattr(slave, &tio), 0);
    cfmakeraw(&tio);
    ck_assert_int_eq(tcsetattr(slave, TCSANOW, &tio), 0);
    ck_assert_int_eq(dup2(slave, 2), 2);
    close(slave);
    fcntl(master, F_SETFL, O_NONBLOCK);
    unsetenv("RECAUDIT_NO_PROGRESS");
}

/* Everything written to the terminal so far. */
static char *drain(void)
{
    static char buf[65536];
    size_t n = 0;
    for (int idle = 0; idle < 20 && n < sizeof buf - 1;) {
        ssize_t r = read(master, buf + n, sizeof buf - 1 - n);
        if (r > 0) {
            n += (size_t)r;
            idle = 0;
        } else {
            idle++;
            usleep(1000);
        }
    }
    buf[n] = '\0';
    return buf;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

START_TEST(test_special_disabled)
{
    /* Check's forked child has stderr on a pipe or file, not a tty. */
    if (isatty(2))
        return;
    ck_assert_ptr_null(ra_progress_start("x", 10, "items"));
    /* Every call accepts NULL. */
    ra_progress_add(NULL, 5);
    ra_progress_finish(NULL);
    use_pty();
    setenv("RECAUDIT_NO_PROGRESS", "1", 1);
    ck_assert_ptr_null(ra_progress_start("x", 10, "items"));
    ck_assert_str_eq(drain(), "");
}
END_TEST

START_TEST(test_data_line)
{
    use_pty();
    ra_progress *p = ra_progress_start("reference gdn", 8, "heads");
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(drain(), ""); /* nothing before the first add */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ra_progress_add(p, 2); /* the first add draws at once */
    char *s = drain();
    ck_assert_msg(strncmp(s, "\rreference gdn 2/8 heads  25.0% ", 32) == 0, "line: %s", s + 1);
    ck_assert(strstr(s, " heads/s ETA ") != NULL);
    ck_assert(strcmp(s + strlen(s) - 3, "\033[K") == 0);
    /* Within 100 ms of a draw nothing is drawn; after it, the count is
       current and the ETA of a finished job is 0s. */
    ra_progress_add(p, 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    s = drain();
    /* (a machine too loaded to make the second add within 90 ms proves
       nothing about the rate limit either way) */
    if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 90000000L)
        ck_assert_str_eq(s, "");
    sleep_ms(120);
    ra_progress_add(p, 5);
    s = drain();
    ck_assert_msg(strncmp(s, "\rreference gdn 8/8 heads 100.0% ", 32) == 0, "line: %s", s + 1);
    ck_assert(strstr(s, " ETA 0s\033[K") != NULL);
    ra_progress_finish(p);
    ck_assert_str_eq(drain(), "\r\033[K"); /* finish erases the line */
}
END_TEST

START_TEST(test_special_unknown_total)
{
    use_pty();
    ra_progress *p = ra_progress_start("scan", 0, "steps");
    ra_progress_add(p, 42);
    char *s = drain();
    ck_assert_msg(strncmp(s, "\rscan 42 steps ", 15) == 0, "line: %s", s + 1);
    ck_assert(strstr(s, "%") == NULL && strstr(s, "ETA") == NULL);
    ra_progress_finish(p);
    drain();
    /* finish without any draw writes nothing */
    p = ra_progress_start("idle", 3, "x");
    ra_progress_finish(p);
    ck_assert_str_eq(drain(), "");
}
END_TEST

START_TEST(test_random_threads_and_rate)
{
    /* 4 threads x 20000 adds of 1, spread over about 0.3 s: the total must
       be exact (atomic counter) and at most ~10 redraws per second may
       happen (the first draw plus one per 100 ms window: <= 5 here, with
       one spare for scheduling). */
    use_pty();
    ra_progress *p = ra_progress_start("mt", 80000, "adds");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
#pragma omp parallel for num_threads(4) schedule(static)
    for (int i = 0; i < 80000; i++) {
        ra_progress_add(p, 1);
        if (i % 1000 == 0)
            sleep_ms(15);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    char *s = drain();
    int draws = count_char(s, '\r');
    ck_assert_int_ge(draws, 1);
    ck_assert_msg(draws <= 2 + (int)(secs * 10.0), "%d redraws in %.3f s", draws, secs);
    sleep_ms(110);
    ra_progress_add(p, 0);
    s = drain();
    ck_assert_msg(strncmp(s, "\rmt 80000/80000 adds 100.0% ", 28) == 0, "line: %s", s + 1);
    ra_progress_finish(p);
}
END_TEST

START_TEST(test_special_narrow)
{
    /* A line longer than the terminal is cut to width - 1 columns, so it
       never wraps (a wrapped line cannot be redrawn with \r). */
    use_pty();
    struct winsize ws = {.ws_row = 24, .ws_col = 30};
    ck_assert_int_eq(ioctl(2, TIOCSWINSZ, &ws), 0);
    ra_progress *p = ra_progress_start("a rather long label for the bar", 10, "units");
    ra_progress_add(p, 1);
    char *s = drain();
    ck_assert_int_eq(strlen(s), 1 + 29 + 3);
    ck_assert(strncmp(s, "\ra rather long label for the b\033[K", 33) == 0);
    ra_progress_finish(p);
}
END_TEST

static Suite *progress_suite(void)
{
    Suite *s = suite_create("progress");
    tu_tcase(s, "special", NULL, NULL, test_special_disabled, test_special_unknown_total,
             test_special_narrow);
    tu_tcase(s, "data", NULL, NULL, test_data_line);
    tu_tcase(s, "random", NULL, NULL, test_random_threads_and_rate);
    return s;
}

int main(void) { return tu_run(progress_suite()); }
