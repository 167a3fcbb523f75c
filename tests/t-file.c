/* Check suite for whole-file and atomic file access (src/core/file.c). */
#include <config.h>

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/io.h"
#include "core/status.h"

#include "io-testutil.h"

/*
 * Expected contents are the bytes the test itself wrote (a pattern computed
 * here); failures are provoked through the operating system (a missing
 * directory, a directory as the target of rename(), RLIMIT_FSIZE making
 * writes fail with EFBIG) and must be reported once, naming the path, with
 * the old file intact and no temporary left behind.
 */

/* --- file helpers ------------------------------------------------------------------------------
 */

START_TEST(file_read_write)
{
    uint8_t *buf;
    size_t len;
    const char *missing = tu_scratch("missing");
    tu_expect_error(ra_file_read_all(&buf, &len, missing), RA_EIO, missing, "cannot open");
    ck_assert_ptr_null(buf);
    tu_expect_error(ra_file_read_all(&buf, &len, tu_scratch_dir), RA_EIO, tu_scratch_dir,
                    "not a regular file");
    const char *p = tu_scratch("f.bin");
    uint8_t data[1000];
    for (int i = 0; i < 1000; i++)
        data[i] = (uint8_t)(i * 7);
    ck_assert_int_eq(ra_file_write_atomic(p, data, sizeof data), RA_OK);
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert(len == 1000 && memcmp(buf, data, 1000) == 0);
    free(buf);
    /* Replacing an existing file, then an empty file. */
    ck_assert_int_eq(ra_file_write_atomic(p, data + 500, 10), RA_OK);
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert(len == 10 && memcmp(buf, data + 500, 10) == 0);
    free(buf);
    ck_assert_int_eq(ra_file_write_atomic(p, NULL, 0), RA_OK);
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert_uint_eq(len, 0);
    free(buf);
    ck_assert_int_eq(io_tmp_count(), 1);
    /* A directory that does not exist: I/O error naming the path. */
    const char *nodir = tu_scratch("no/such/file");
    tu_expect_error(ra_file_write_atomic(nodir, data, 4), RA_EIO, nodir);
    ck_assert_int_eq(io_tmp_count(), 1);
}
END_TEST

/* Writes n bytes of a pattern under a file-size limit of 1000 bytes (the
   test runs in its own forked process, so the limit dies with it). */
static void write_past_limit(size_t n)
{
    const char *p = tu_scratch("lim.bin");
    io_put("lim.bin", "old", 3);
    uint8_t *big = calloc(n, 1);
    ck_assert_ptr_nonnull(big);
    struct rlimit rl = {1000, 1000};
    signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of a signal */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    tu_expect_error(ra_file_write_atomic(p, big, n), RA_EIO, p, "cannot write");
    free(big);
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert(len == 3 && memcmp(buf, "old", 3) == 0);
    free(buf);
    ck_assert_int_eq(io_tmp_count(), 1); /* the temporary is gone */
}

START_TEST(file_write_failure_fwrite)
{
    if (getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0)
        return;                /* the limit would outlive the test */
    write_past_limit(1 << 20); /* larger than any stdio buffer: fails in fwrite */
}
END_TEST

START_TEST(file_write_failure_flush)
{
    if (getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0)
        return;
    write_past_limit(2000); /* fits the stdio buffer: fails at fflush */
}
END_TEST

START_TEST(file_rename_failure)
{
    /* The target is a non-empty directory: rename() fails after a good
       write; the temporary must be removed. */
    const char *d = tu_scratch("dir");
    ck_assert_int_eq(mkdir(d, 0755), 0);
    char inner[700];
    snprintf(inner, sizeof inner, "%s/f", d);
    FILE *f = fopen(inner, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fclose(f), 0);
    tu_expect_error(ra_file_write_atomic(d, (const uint8_t *)"abc", 3), RA_EIO, d);
    ck_assert_int_eq(io_tmp_count(), 1);
    ck_assert_int_eq(unlink(inner), 0);
    ck_assert_int_eq(rmdir(d), 0);
}
END_TEST

/* regress_tmp_killed: a run killed by SIGTERM or SIGINT while writing used
   to leave its temporary behind.  A child opens a writer, writes, tells
   the parent through a pipe, and waits to be killed; afterwards it must
   have died of the signal (the handler re-raises it) with the scratch
   directory holding nothing but the old file. */
static void killed_while_writing(int sig)
{
    const char *p = io_put("k.bin", "old", 3);
    ck_assert_int_eq(io_tmp_count(), 1);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        ra_writer w;
        char ok = 'x';
        /* as in an interactive program: make check may run us with SIGINT
           ignored (a background job), and ignored signals are left alone */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (ra_writer_open_file(&w, p) == RA_OK && ra_writer_write(&w, "new data", 8) == RA_OK)
            ok = 'w';
        if (write(fds[1], &ok, 1) != 1)
            _exit(3);
        for (;;)
            pause();
    }
    char got = 0;
    ck_assert_int_eq(read(fds[0], &got, 1), 1);
    ck_assert_int_eq(got, 'w');
    ck_assert_int_eq(io_tmp_count(), 2); /* the temporary exists while writing */
    ck_assert_int_eq(kill(pid, sig), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == sig);
    ck_assert_int_eq(io_tmp_count(), 1);
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(ra_file_read_all(&buf, &len, p), RA_OK);
    ck_assert(len == 3 && memcmp(buf, "old", 3) == 0);
    free(buf);
    close(fds[0]);
    close(fds[1]);
}

START_TEST(regress_tmp_killed)
{
    killed_while_writing(SIGTERM);
    killed_while_writing(SIGINT);
}
END_TEST

/* regress_fifo_refused (library side): a FIFO is refused without blocking,
   naming it; a text file with a NUL byte is refused with its line. */
START_TEST(regress_fifo_and_nul)
{
    const char *fifo = tu_scratch("pipe");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    uint8_t *buf;
    size_t len;
    tu_expect_error(ra_file_read_all(&buf, &len, fifo), RA_EIO, fifo,
                    "not a regular file (a FIFO)");
    ck_assert_int_eq(unlink(fifo), 0);
    const char *p = io_put("t.txt", "a\nb\n\0c\n", 7);
    char *text;
    tu_expect_error(ra_file_read_text(&text, p), RA_EFORMAT, p, "line 3: NUL byte");
    ck_assert_ptr_null(text);
    p = io_put("u.txt", "a\nb\n", 4);
    ck_assert_int_eq(ra_file_read_text(&text, p), RA_OK);
    ck_assert_str_eq(text, "a\nb\n");
    free(text);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("file");
    io_tcase(s, "data", file_read_write);
    io_tcase(s, "bad", file_write_failure_fwrite, file_write_failure_flush, file_rename_failure);
    io_tcase(s, "regress", regress_tmp_killed, regress_fifo_and_nul);
    return s;
}

int main(void) { return tu_run(suite()); }
