/* Scaffolding shared by every Check suite: running, error records, seeds, paths, tensors. */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <config.h>

#include "testutil.h"

#include "core/io.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "core/gen_gdn.h"
#include "gpu/device.h"
#include <unistd.h>

/*
 * Everything here reports a broken test environment (no scratch directory,
 * a missing tensor) as a failed Check assertion, never by exiting: under
 * CK_FORK=no a test failure must not end the other tests.  State is kept in
 * file-scope variables, one test at a time (Check runs a process's tests
 * sequentially); the fixtures reset it before each test, so it holds with
 * and without forking.
 */

#ifndef RA_TOP_SRCDIR
#error "RA_TOP_SRCDIR must name the source tree (src/core/local.mk passes it)"
#endif

/* --- suites ------------------------------------------------------------------------------- */

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

TCase *tu_tcase_(Suite *s, const char *name, void (*setup)(void), void (*teardown)(void),
                 const TTest *const *tests)
{
    TCase *tc = tcase_create(name);
    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    for (; *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return tc;
}

/* --- error reports ------------------------------------------------------------------------ */

int tu_nerr;
ra_status tu_code;
char tu_msg[TU_MSG_MAX];

void tu_handler(const char *reason, const char *file, int line, ra_status code)
{
    (void)file, (void)line;
    tu_nerr++;
    tu_code = code;
    snprintf(tu_msg, sizeof tu_msg, "%s", reason);
}

void tu_reset(void)
{
    tu_nerr = 0;
    tu_code = RA_OK;
    tu_msg[0] = '\0';
}

void tu_capture(void)
{
    ra_set_error_handler(tu_handler);
    tu_reset();
}

static void has_each(const char *msg, va_list ap)
{
    for (const char *s; (s = va_arg(ap, const char *));)
        ck_assert_msg(strstr(msg, s), "message '%s' lacks '%s'", msg, s);
}

void tu_expect_error_(ra_status st, ra_status code, ...)
{
    ck_assert_msg(st == code, "status %d (%s), expected %d; message: %s", (int)st, ra_strstatus(st),
                  (int)code, tu_msg);
    ck_assert_msg(tu_nerr == 1, "%d reports, expected exactly one (last: %s)", tu_nerr, tu_msg);
    ck_assert_int_eq(tu_code, code);
    va_list ap;
    va_start(ap, code);
    has_each(tu_msg, ap);
    va_end(ap);
    tu_reset();
}

void tu_has_(const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    has_each(msg, ap);
    va_end(ap);
}

/* --- seeds -------------------------------------------------------------------------------- */

uint64_t tu_seed(uint64_t fixed)
{
    const char *e = getenv("RA_CHECK_RANDOMIZE");
    if (!e || strcmp(e, "1") != 0)
        return fixed;
    /* clock() separates runs started within the same second */
    uint64_t s = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    fprintf(stderr, "%s: RA_CHECK_RANDOMIZE seed %llu\n", program_invocation_short_name,
            (unsigned long long)s);
    return s;
}

/* --- paths -------------------------------------------------------------------------------- */

#define TU_PATH_MAX 4096

static char *next_buffer(void)
{
    static char ring[8][TU_PATH_MAX];
    static unsigned k;
    return ring[k++ % 8];
}

/* root/<fmt...> into the next ring buffer; the test fails if it does not fit. */
static const char *vpath(const char *root, const char *fmt, va_list ap)
{
    char *b = next_buffer();
    int n = snprintf(b, TU_PATH_MAX, "%s/", root);
    ck_assert(n > 0 && n < TU_PATH_MAX);
    int m = vsnprintf(b + n, (size_t)(TU_PATH_MAX - n), fmt, ap);
    ck_assert_msg(m >= 0 && m < TU_PATH_MAX - n, "path under %s too long", root);
    return b;
}

const char *tu_srcpath(const char *fmt, ...)
{
    const char *top = getenv("top_srcdir");
    va_list ap;
    va_start(ap, fmt);
    const char *p = vpath(top && *top ? top : RA_TOP_SRCDIR, fmt, ap);
    va_end(ap);
    return p;
}

const char *tu_buildpath(const char *fmt, ...)
{
    const char *top = getenv("top_builddir");
    if (!top || !*top)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    const char *p = vpath(top, fmt, ap);
    va_end(ap);
    return p;
}

char tu_scratch_dir[TU_PATH_MAX];

void tu_scratch_setup(void)
{
    ck_assert_msg(ra_temp_template(tu_scratch_dir, sizeof tu_scratch_dir, "ra-test") == RA_OK, "%s",
                  ra_last_error());
    ck_assert_msg(mkdtemp(tu_scratch_dir) != NULL, "mkdtemp %s: %s", tu_scratch_dir,
                  strerror(errno));
}

/* rm -r, best effort: a teardown must not fail on what a test left. */
static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[TU_PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
            remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

void tu_scratch_teardown(void)
{
    if (tu_scratch_dir[0])
        remove_tree(tu_scratch_dir);
    tu_scratch_dir[0] = '\0';
}

const char *tu_scratch(const char *fmt, ...)
{
    ck_assert_msg(tu_scratch_dir[0], "no scratch directory (tu_scratch_setup not run)");
    va_list ap;
    va_start(ap, fmt);
    const char *p = vpath(tu_scratch_dir, fmt, ap);
    va_end(ap);
    return p;
}

int tu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* --- tensors and cases -------------------------------------------------------------------- */

ra_tensor *tu_add(ra_tensors *ts, const char *name, ra_dtype dt, int ndim, const int64_t *shape,
                  const double *vals)
{
    ra_tensor *t;
    ck_assert_msg(ra_tensors_new(ts, &t, name, dt, ndim, shape) == RA_OK, "tensor %s: %s", name,
                  ra_last_error());
    if (vals)
        ra_tensor_from_doubles(t, vals);
    return t;
}

ra_tensor *tu_tensor(const ra_tensors *ts, const char *name)
{
    ra_tensor *t = ra_tensors_find(ts, name);
    ck_assert_msg(t != NULL, "missing tensor %s", name);
    return t;
}

ra_tensor *tu_t(const ra_case *c, const char *name) { return tu_tensor(&c->tensors, name); }

double tu_at(const ra_tensors *ts, const char *name, int64_t i)
{
    return ra_tensor_get(tu_tensor(ts, name), i);
}

void tu_case_init(ra_case *c, const char *op)
{
    ra_case_init(c);
    ck_assert_int_eq(ra_case_set_op(c, op), RA_OK);
}

void tu_gdn_generate(ra_case *c, const ra_gdn_shape *s, ra_dtype dt, const char *regime,
                     uint64_t seed, int h0, int l2norm)
{
    ra_case_spec spec;
    ra_case_spec_init(&spec);
    strcpy(spec.op, "gdn");
    ra_gdn_shape_format(spec.shape, sizeof spec.shape, s);
    snprintf(spec.regime, sizeof spec.regime, "%s", regime ? regime : "default");
    snprintf(spec.dtype, sizeof spec.dtype, "%s", ra_dtype_name(dt));
    spec.seed = seed;
    spec.has_seed = 1;
    spec.flags = (h0 ? RA_GDN_FLAG_H0 : 0) | (l2norm ? RA_GDN_FLAG_L2NORM : 0);
    ra_case_init(c);
    ck_assert_msg(ra_gdn_generate(c, &spec) == RA_OK, "generate: %s", ra_last_error());
}

void tu_gdn_case(ra_case *c, const ra_gdn_shape *s, ra_dtype dt, unsigned with)
{
    const int64_t qk[4] = {s->B, s->T, s->Hk, s->K}, v[4] = {s->B, s->T, s->Hv, s->V},
                  gate[3] = {s->B, s->T, s->Hv}, state[4] = {s->B, s->Hv, s->K, s->V};
    static const struct {
        const char *name;
        int ndim;
        int shape; /* 0 qk, 1 v, 2 gate, 3 state */
        unsigned need;
    } rows[] = {{"q", 4, 0, 0},    {"k", 4, 0, 0},      {"v", 4, 1, 0},      {"g", 3, 2, 0},
                {"beta", 3, 2, 0}, {"h0", 4, 3, TU_H0}, {"do", 4, 1, TU_DO}, {"dht", 4, 3, TU_DHT}};
    const int64_t *shapes[4] = {qk, v, gate, state};
    tu_case_init(c, "gdn");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!rows[i].need || (with & rows[i].need))
            tu_add(&c->tensors, rows[i].name, dt, rows[i].ndim, shapes[rows[i].shape], NULL);
}

void tu_assert_same_tensor(const ra_tensor *a, const ra_tensor *b)
{
    ck_assert_str_eq(a->name, b->name);
    ck_assert_int_eq(a->dtype, b->dtype);
    ck_assert_int_eq(a->ndim, b->ndim);
    for (int i = 0; i < a->ndim; i++)
        ck_assert_int_eq(a->shape[i], b->shape[i]);
    ck_assert_int_eq(a->numel, b->numel);
    ck_assert_uint_eq(a->nbytes, b->nbytes);
    ck_assert_msg(a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0, "%s differs",
                  a->name);
}

void tu_assert_same_tensors(const ra_tensors *a, const ra_tensors *b)
{
    ck_assert_uint_eq(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        tu_assert_same_tensor(a->items[i], b->items[i]);
}

const char *const tu_cpu_variants[] = {"gdn.cpu.f64",
                                       "gdn.cpu.f32",
                                       "gdn.cpu.chunk64.ieee",
                                       "gdn.cpu.chunk64.tf32",
                                       "gdn.cpu.chunk64.bf16",
                                       "gdn.cpu.chunk64.ieee.neumann",
                                       "gdn.cpu.chunk64.tf32.neumann",
                                       "gdn.cpu.chunk64.bf16.neumann",
                                       "gdn.cpu.chunk128.ieee.schur",
                                       "gdn.cpu.chunk128.tf32.schur",
                                       "gdn.cpu.chunk128.bf16.schur",
                                       "gdn.cpu.chunk64.tf32x3",
                                       NULL};

const char *const tu_cpu_scan_variants[] = {"scan.cpu.linear.f32",
                                            "scan.cpu.affine.ieee.store",
                                            "scan.cpu.affine.ieee.recompute",
                                            "scan.cpu.affine.ieee.reversal",
                                            "scan.cpu.affine.tf32.store",
                                            "scan.cpu.affine.tf32x3.store",
                                            "scan.cpu.affine.bf16.store",
                                            "scan.cpu.log.f32",
                                            NULL};

/* --- GPU tests ------------------------------------------------------------------------------ */

int tu_gpu_probe(const char *prog)
{
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        if (ra_gpu_count() == 0)
            _exit(77);
        char dev[512];
        ra_gpu_describe(dev, sizeof dev);
        printf("%s\n", dev);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        fprintf(stderr, "%s: cannot probe the CUDA devices in a child process\n", prog);
        return 99;
    }
    return WEXITSTATUS(status) == 77 ? 77 : WEXITSTATUS(status) == 0 ? 0 : 99;
}

/* --- numbers ------------------------------------------------------------------------------ */

int tu_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* An unchecked fwd+bwd spec of op (shape, regime, dtype, seed). */
static ra_case_spec spec_fill(const char *op, const char *shape, const char *regime,
                              const char *dtype, uint64_t seed)
{
    ra_case_spec s;
    ra_case_spec_init(&s);
    snprintf(s.op, sizeof s.op, "%s", op);
    snprintf(s.shape, sizeof s.shape, "%s", shape);
    snprintf(s.regime, sizeof s.regime, "%s", regime);
    snprintf(s.dtype, sizeof s.dtype, "%s", dtype);
    s.seed = seed;
    s.has_seed = 1;
    s.bwd = 1;
    return s;
}

ra_case_spec tu_gdn_spec(const char *shape, uint64_t seed, unsigned flags, int bwd)
{
    ra_case_spec id = spec_fill("gdn", shape, "default", "f32", seed);
    id.flags = flags;
    id.bwd = bwd;
    return id;
}

ra_case_spec tu_spec(const char *op, const char *shape, const char *regime, const char *dtype,
                     uint64_t seed)
{
    ra_case_spec s = spec_fill(op, shape, regime, dtype, seed);
    ck_assert_msg(ra_case_spec_check(&s, "spec") == RA_OK, "%s", ra_last_error());
    return s;
}

void tu_generate(ra_case *c, const char *op, const char *shape, const char *regime,
                 const char *dtype, uint64_t seed)
{
    ra_case_spec s = tu_spec(op, shape, regime, dtype, seed);
    ra_case_init(c);
    ck_assert_msg(ra_case_spec_generate(c, &s) == RA_OK, "%s", ra_last_error());
}
