/* Progress bar on stderr: label, done/total, percent, rate and ETA. */
#include "core/progress.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/*
 * The bar exists only for a person watching a terminal: when stderr is not
 * a tty (logs, CI, pipes) or RECAUDIT_NO_PROGRESS is set, start returns
 * NULL and every other call is a no-op, so logs never fill with carriage
 * returns.
 *
 * Counting is one atomic fetch-add, so OpenMP workers may call add freely.
 * Drawing is rate-limited to one redraw per 100 ms: the next allowed draw
 * time is an atomic that the first thread past it advances with a
 * compare-exchange, and only that thread draws (a second flag keeps a slow
 * write from overlapping the next one).  The first add draws at once.
 *
 * A line is "\r" + text + "\033[K" (erase to end of line) written with one
 * write(2), so it never interleaves byte-wise with other output; the text is
 * cut to the terminal width because a wrapped line cannot be redrawn with
 * "\r".  finish erases the line it drew.  Failures (no memory, a failed
 * write) only disable or skip drawing: progress is never an error.
 */

#define REDRAW_NS 100000000LL /* at most ~10 redraws per second */
#define LINE_MAX_BYTES 512

struct ra_progress {
    char label[128];
    char unit[32];
    int64_t total; /* <= 0: unknown, no percent or ETA */
    int64_t start_ns;
    int width; /* terminal columns */
    _Atomic int64_t done;
    _Atomic int64_t next_draw_ns;
    atomic_flag drawing;
    atomic_int drawn; /* something is on the line and must be erased */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int terminal_width(void)
{
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
        return ws.ws_col;
    return 80;
}

/* "12s", "3m05s", "2h07m" */
static void format_duration(char *buf, size_t len, double s)
{
    if (!(s < 360000.0)) { /* also NaN */
        snprintf(buf, len, "--");
        return;
    }
    long t = (long)(s + 0.5);
    if (t < 60)
        snprintf(buf, len, "%lds", t);
    else if (t < 3600)
        snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, len, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

static void write_all(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* progress output is best effort */
        s += w;
        n -= (size_t)w;
    }
}

static void draw(ra_progress *p, int64_t done, int64_t t)
{
    double elapsed = (double)(t - p->start_ns) * 1e-9;
    double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
    char text[LINE_MAX_BYTES];
    int n;
    if (p->total > 0) {
        char eta[32];
        double pct = 100.0 * (double)done / (double)p->total;
        if (done >= p->total)
            snprintf(eta, sizeof eta, "0s");
        else if (rate > 0)
            format_duration(eta, sizeof eta, (double)(p->total - done) / rate);
        else
            snprintf(eta, sizeof eta, "--");
        n = snprintf(text, sizeof text, "%s %lld/%lld %s %5.1f%% %.3g %s/s ETA %s", p->label,
                     (long long)done, (long long)p->total, p->unit, pct, rate, p->unit, eta);
    } else {
        n = snprintf(text, sizeof text, "%s %lld %s %.3g %s/s", p->label, (long long)done, p->unit,
                     rate, p->unit);
    }
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    if (len > (size_t)(p->width - 1)) /* one column spare: no auto-wrap */
        len = (size_t)(p->width - 1);
    char line[LINE_MAX_BYTES + 8];
    line[0] = '\r';
    memcpy(line + 1, text, len);
    memcpy(line + 1 + len, "\033[K", 3);
    write_all(line, len + 4);
    atomic_store(&p->drawn, 1);
}

ra_progress *ra_progress_start(const char *label, int64_t total, const char *unit)
{
    if (!isatty(2) || getenv("RECAUDIT_NO_PROGRESS"))
        return NULL;
    ra_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    snprintf(p->unit, sizeof p->unit, "%s", unit ? unit : "");
    p->total = total;
    p->start_ns = now_ns();
    p->width = terminal_width();
    atomic_init(&p->done, 0);
    atomic_init(&p->next_draw_ns, 0); /* the first add draws */
    atomic_flag_clear(&p->drawing);
    atomic_init(&p->drawn, 0);
    return p;
}

void ra_progress_add(ra_progress *p, int64_t n)
{
    if (!p)
        return;
    int64_t done = atomic_fetch_add(&p->done, n) + n;
    int64_t t = now_ns();
    int64_t next = atomic_load(&p->next_draw_ns);
    if (t < next)
        return;
    /* Whoever advances the deadline draws; the others saw it move. */
    if (!atomic_compare_exchange_strong(&p->next_draw_ns, &next, t + REDRAW_NS))
        return;
    if (atomic_flag_test_and_set(&p->drawing))
        return;
    draw(p, done, t);
    atomic_flag_clear(&p->drawing);
}

void ra_progress_finish(ra_progress *p)
{
    if (!p)
        return;
    if (atomic_load(&p->drawn))
        write_all("\r\033[K", 4);
    free(p);
}
