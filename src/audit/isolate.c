/* Running a variant in a child process: fork, read-only inputs, a pipe back, a time limit. */
#include <config.h>

#include "audit/isolate.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
/* omp_pause_resource_all is OpenMP 5.0; GCC's libgomp has it since GCC 9
   while still announcing 4.5 in _OPENMP. */
#if defined(_OPENMP) &&                                                                            \
    (_OPENMP >= 201811 || (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 9))
#define RA_HAVE_OMP_PAUSE 1
#else
#define RA_HAVE_OMP_PAUSE 0
#endif

#include "audit/audit.h"
#include "core/capture.h"

/*
 * The parent: flush stdio (the child would write the buffered bytes a
 * second time), release OpenMP's thread pool (libgomp's threads do not
 * survive fork and a child that opens a parallel region after its parent
 * has one hangs: omp_pause_resource_all makes the next region start a
 * fresh pool), make a pipe, fork.  It then reads the pipe until EOF under
 * the deadline (poll), and reaps the child, still under the deadline: a
 * child that closes the pipe and goes on running is killed too.
 *
 * The child: dies with its parent (PR_SET_PDEATHSIG), catches SIGSEGV and
 * SIGBUS on an alternate stack to tell the parent when the faulting
 * address lies in the read-only inputs (then lets the signal kill it), runs
 * the variant, writes the outcome message and leaves with _exit(0), which
 * runs no atexit handler of the harness or the plugin.
 *
 * The verdict trusts the message only when the child also exited with
 * status 0 after sending it; every other end is a reason in o->died.
 *
 * The CUDA runtime does not survive fork either: the harness never
 * initialises it (the GPU variants create their context on first use, in
 * the child that runs them), so each child starts its own.
 */

void ra_isolation_init(ra_isolation *iso)
{
    iso->in_process = 0;
    iso->timeout_s = RA_TIMEOUT_DEFAULT_S;
}

/* --- read-only inputs --------------------------------------------------------------------- */

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

ra_status ra_inputs_seal(ra_sealed *s, ra_case *c)
{
    memset(s, 0, sizeof *s);
    const size_t n = c->tensors.n, align = 64;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        size_t nb = c->tensors.items[i]->nbytes;
        if (nb > SIZE_MAX - len - align)
            RA_ERROR("inputs too large to seal", RA_EOVERFLOW);
        len = (len + nb + align - 1) / align * align;
    }
    const size_t pg = page_size();
    len = len ? (len + pg - 1) / pg * pg : pg;
    s->heap = calloc(n ? n : 1, sizeof *s->heap);
    s->offset = calloc(n ? n : 1, sizeof *s->offset);
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!s->heap || !s->offset || base == MAP_FAILED) {
        int err = errno;
        free(s->heap);
        free(s->offset);
        if (base != MAP_FAILED)
            munmap(base, len);
        memset(s, 0, sizeof *s);
        RA_ERRORF(RA_ENOMEM, "cannot map %zu bytes for the read-only inputs: %s", len,
                  strerror(err));
    }
    s->base = base;
    s->len = len;
    s->n = n;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        ra_tensor *t = c->tensors.items[i];
        s->offset[i] = at;
        if (t->nbytes)
            memcpy(s->base + at, t->data, t->nbytes);
        s->heap[i] = t->data;
        t->data = s->base + at;
        at = (at + t->nbytes + align - 1) / align * align;
    }
    if (mprotect(s->base, s->len, PROT_READ) != 0) {
        int err = errno;
        ra_inputs_unseal(s, c);
        RA_ERRORF(RA_EIO, "cannot make the inputs read-only: %s", strerror(err));
    }
    return RA_OK;
}

void ra_inputs_unseal(ra_sealed *s, ra_case *c)
{
    for (size_t i = 0; i < s->n && i < c->tensors.n; i++)
        c->tensors.items[i]->data = s->heap[i];
    if (s->base)
        munmap(s->base, s->len);
    free(s->heap);
    free(s->offset);
    memset(s, 0, sizeof *s);
}

/* --- the run itself ------------------------------------------------------------------------ */

/* A variant with forward_backward (a training step in one call): that
   call too, whose tensors must be the separate calls' bit for bit, since
   what a team trains with is the one call; a failure or a difference is
   the backward's (o->bst, o->bwhy).  The run's time stays the separate
   calls'. */
static void check_fused(ra_outcome *o, const ra_variant *v, const ra_case *c, ra_run *run)
{
    const double ms = run->elapsed_ms;
    ra_case fb;
    ra_case_init(&fb);
    ra_clear_error();
    const ra_status st = ra_variant_run_forward_backward(&fb, v, c, run);
    char why[384];
    if (st != RA_OK) {
        o->bst = st;
        snprintf(o->bwhy, sizeof o->bwhy, "forward_backward: %s", ra_last_error());
    } else if (ra_fused_differs(why, sizeof why, &fb, &o->result, NULL)) {
        RA_REPORTF(RA_EINTERNAL,
                   "variant %s: forward_backward differs from forward and backward: %s", v->name,
                   why);
        o->bst = RA_EINTERNAL;
        snprintf(o->bwhy, sizeof o->bwhy, "forward_backward differs from forward and backward: %s",
                 why);
    }
    ra_case_clear(&fb);
    run->elapsed_ms = ms;
}

/* The variant on c, as ra_variant_execute (and its forward_backward,
   check_fused), recording statuses and reasons. */
static void run_body(ra_outcome *o, const ra_variant *v, const ra_case *c, int bwd, ra_run *run,
                     int capture)
{
    ra_error_handler_t *prev = capture ? ra_capture_begin() : NULL;
    ra_clear_error();
    o->fst = ra_variant_run_forward(&o->result, v, c, run);
    if (o->fst != RA_OK)
        snprintf(o->fwhy, sizeof o->fwhy, "%s", ra_last_error());
    if (o->fst == RA_OK && bwd && (v->caps & RA_BWD) &&
        ra_case_has_cotangent(c, &o->result.tensors)) {
        ra_clear_error();
        o->bst = ra_variant_run_backward(&o->result, v, c, run);
        o->bwd_ran = 1;
        if (o->bst != RA_OK)
            snprintf(o->bwhy, sizeof o->bwhy, "%s", ra_last_error());
        else if (v->forward_backward)
            check_fused(o, v, c, run);
    }
    o->elapsed_ms = run->elapsed_ms;
    if (capture)
        ra_capture_end(prev);
}

/* The child's view of its sealed inputs and its pipe, for the handler. */
static const unsigned char *fault_base;
static size_t fault_len;
static int fault_fd = -1;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    const unsigned char *a = si->si_addr;
    if (fault_base && a >= fault_base && a < fault_base + fault_len) {
        unsigned char msg[RA_WIRE_FAULT_BYTES];
        ra_wire_encode_fault(msg, (uint64_t)(a - fault_base), sig);
        ssize_t w = write(fault_fd, msg, sizeof msg);
        (void)w;
    }
    /* SA_RESETHAND restored the default action: returning re-executes the
       faulting instruction, which now kills the child with sig. */
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static _Noreturn void child(int fd, pid_t parent, const ra_variant *v, const ra_case *c, int bwd,
                            ra_run *run, const ra_sealed *inputs, int capture)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(125);
#else
    (void)parent;
#endif
    signal(SIGPIPE, SIG_DFL);
    static unsigned char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    fault_base = inputs ? inputs->base : NULL;
    fault_len = inputs ? inputs->len : 0;
    fault_fd = fd;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);

    ra_outcome o;
    ra_outcome_init(&o);
    run_body(&o, v, c, bwd, run, capture);
    fflush(NULL);
    ra_wire_buf b;
    ra_wire_buf_init(&b);
    int ok = ra_wire_encode_outcome(&b, &o) == RA_OK && write_all(fd, b.p, b.n) == 0;
    _exit(ok ? 0 : 124);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Milliseconds left before deadline for poll (-1: no deadline). */
static int ms_left(double deadline)
{
    if (deadline <= 0)
        return -1;
    double left = (deadline - now_s()) * 1e3;
    return left <= 0 ? 0 : left > 1e9 ? 1000000000 : (int)left + 1;
}

static const char *signal_name(int sig, char *buf, size_t len)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGABRT, "SIGABRT"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"},
                 {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGXCPU, "SIGXCPU"},
                 {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"},
                 {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"}, {SIGXFSZ, "SIGXFSZ"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            return names[i].name;
    snprintf(buf, len, "signal %d", sig);
    return buf;
}

/* The tensor of c whose sealed data holds byte offset at, or NULL. */
static const char *tensor_at(const ra_sealed *s, const ra_case *c, uint64_t at)
{
    for (size_t i = 0; s && i < s->n && i < c->tensors.n; i++) {
        const ra_tensor *t = c->tensors.items[i];
        if (at >= s->offset[i] && at - s->offset[i] < t->nbytes)
            return t->name;
    }
    return NULL;
}

/* Reads the pipe to EOF or the deadline; 1 when the deadline passed. */
static int read_all(ra_status *st, ra_wire_buf *b, int fd, double deadline)
{
    unsigned char chunk[65536];
    *st = RA_OK;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, ms_left(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return 1;
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return 0; /* EOF (or an error, which ends the message as well) */
        if (*st == RA_OK)
            *st = ra_wire_buf_append(b, chunk, (size_t)got);
    }
}

/* Reaps pid before the deadline; 1 when the deadline passed first. */
static int reap(int *status, pid_t pid, double deadline)
{
    long pause_ns = 20000;
    for (;;) {
        pid_t r = waitpid(pid, status, deadline > 0 ? WNOHANG : 0);
        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR) {
            *status = 0;
            return 0;
        }
        if (r == 0) {
            if (ms_left(deadline) == 0)
                return 1;
            struct timespec ts = {0, pause_ns};
            nanosleep(&ts, NULL);
            pause_ns = pause_ns < 10000000 ? 2 * pause_ns : pause_ns;
        }
    }
}

/* Why the child's run does not count, from its end and what it sent. */
static void judge(ra_outcome *o, const ra_case *c, const ra_sealed *inputs, int status,
                  const ra_wire_buf *b, double timeout_s, int timed_out)
{
    char sigbuf[32];
    if (timed_out) {
        snprintf(o->died, sizeof o->died, "timeout after %g s (killed with SIGKILL)", timeout_s);
        return;
    }
    ra_wire_msg m;
    ra_error_handler_t *prev = ra_capture_begin();
    ra_status dst = b->n ? ra_wire_decode(&m, o, b->p, b->n) : RA_EFORMAT;
    char why[400];
    snprintf(why, sizeof why, "%s", b->n ? ra_last_error() : "nothing was sent");
    ra_capture_end(prev);
    if (dst == RA_OK && m.kind == RA_WIRE_FAULT) {
        const char *name = tensor_at(inputs, c, m.fault_offset);
        char sig[32];
        snprintf(sig, sizeof sig, "%s", signal_name(m.fault_signal, sigbuf, sizeof sigbuf));
        if (name)
            snprintf(o->died, sizeof o->died,
                     "variant wrote into its input tensor '%s', which is read-only (%s)", name,
                     sig);
        else
            snprintf(o->died, sizeof o->died, "variant wrote into its read-only inputs (%s)", sig);
        return;
    }
    if (WIFSIGNALED(status)) {
        snprintf(o->died, sizeof o->died, "variant crashed: %s",
                 signal_name(WTERMSIG(status), sigbuf, sizeof sigbuf));
        return;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (dst == RA_OK && code == 0)
        return;
    if (dst == RA_OK)
        snprintf(o->died, sizeof o->died,
                 "variant exited with status %d after returning its result", code);
    else if (b->n == 0 || code != 0)
        snprintf(o->died, sizeof o->died, "variant exited with status %d before returning a result",
                 code);
    else
        snprintf(o->died, sizeof o->died, "variant's result message is malformed: %s", why);
}

ra_status ra_variant_run_guarded(ra_outcome *o, const ra_variant *v, const ra_case *c, int bwd,
                                 ra_run *run, const ra_isolation *iso, const ra_sealed *inputs,
                                 int capture)
{
    if (iso && iso->in_process) {
        run_body(o, v, c, bwd, run, capture);
        return RA_OK;
    }
    double timeout_s = iso ? iso->timeout_s : RA_TIMEOUT_DEFAULT_S;
    int fds[2];
    if (pipe(fds) != 0)
        RA_ERRORF(RA_EIO, "variant %s: cannot make a pipe to its process: %s", v->name,
                  strerror(errno));
    fflush(NULL);
#if RA_HAVE_OMP_PAUSE
    omp_pause_resource_all(omp_pause_hard);
#endif
    const pid_t parent = getpid();
    const double start = now_s();
    const pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        RA_ERRORF(RA_EIO, "variant %s: cannot fork its process: %s", v->name, strerror(err));
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], parent, v, c, bwd, run, inputs, capture);
    }
    close(fds[1]);
    const double deadline = timeout_s > 0 ? start + timeout_s : 0;
    ra_wire_buf b;
    ra_wire_buf_init(&b);
    ra_status st;
    int status = 0;
    int timed_out = read_all(&st, &b, fds[0], deadline);
    close(fds[0]);
    if (!timed_out)
        timed_out = reap(&status, pid, deadline);
    if (timed_out || st != RA_OK) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    if (st == RA_OK)
        judge(o, c, inputs, status, &b, timeout_s, timed_out);
    if (st == RA_OK && !o->died[0])
        run->elapsed_ms = o->elapsed_ms;
    if (st == RA_OK && o->died[0]) {
        /* Whatever part of a result came before the end is not trusted. */
        ra_case_clear(&o->result);
        ra_case_init(&o->result);
    }
    ra_wire_buf_clear(&b);
    return st;
}
