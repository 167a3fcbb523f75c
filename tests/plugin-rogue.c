/* Misbehaving plugins for variant isolation (tests/plugin-isolate.sh). */

/*
 * One source, five shared objects (examples/plugin/local.mk).  Each
 * registers a rogue variant gdn.rogue.f64 and then the honest example
 * variant gdn.example.f64 (examples/plugin/gdn_example.c, included here
 * with its entry points renamed), so validate runs the rogue first and the
 * honest one after it on every case.  The rogue's forward:
 *   -DROGUE_WRITE  computes the honest result, then writes into its input
 *                  q, so that, run in the harness's own process, it would
 *                  pass itself and make the next variant fail
 *   -DROGUE_EXIT   calls exit(0)
 *   -DROGUE_SEGV   writes through a null pointer
 *   -DROGUE_ABORT  calls abort()
 *   -DROGUE_HANG   never returns
 * The harness must blame the rogue (a FAIL row with the reason) and still
 * print every row of the honest variant, passing.
 */

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define ra_plugin_abi_version example_abi_version
#define ra_plugin_register example_register
#include "gdn_example.c"
#undef ra_plugin_abi_version
#undef ra_plugin_register

const int ra_plugin_abi_version = RA_PLUGIN_ABI_VERSION;

static ra_status rogue_forward(const ra_variant *self, const ra_case *c, ra_tensors *out,
                               ra_run *run)
{
#if defined(ROGUE_WRITE)
    ra_status st = forward(self, c, out, run);
    ra_tensor *q = ra_tensors_find(&c->tensors, "q");
    for (int64_t i = 0; q && i < q->numel; i++)
        ra_tensor_set(q, i, 1e4);
    return st;
#elif defined(ROGUE_EXIT)
    (void)self, (void)c, (void)out, (void)run;
    exit(0);
    return RA_EINTERNAL; /* not reached */
#elif defined(ROGUE_SEGV)
    (void)self, (void)c, (void)out, (void)run;
    /* A store into a page with no access: a real SIGSEGV, and no undefined
       behaviour for a sanitizer build to intercept first (a null store
       would be UBSan's report and exit 1, not a crash). */
    volatile int *volatile nowhere =
        mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((void *)nowhere == MAP_FAILED)
        raise(SIGSEGV);
    *nowhere = 1;
    return RA_EINTERNAL;
#elif defined(ROGUE_ABORT)
    (void)self, (void)c, (void)out, (void)run;
    abort();
    return RA_EINTERNAL; /* not reached */
#elif defined(ROGUE_HANG)
    (void)self, (void)c, (void)out, (void)run;
    for (;;)
        pause();
    return RA_EINTERNAL; /* not reached */
#else
#error "build with one of ROGUE_WRITE, ROGUE_EXIT, ROGUE_SEGV, ROGUE_ABORT, ROGUE_HANG"
#endif
}

ra_status ra_plugin_register(ra_registry *r)
{
    static const ra_variant rogue = {
        .name = "gdn.rogue.f64",
        .op = "gdn",
        .doc = "misbehaving variant (tests/plugin-rogue.c)",
        .device = RA_CPU,
        .pclass = "f64",
        .caps = RA_FWD | RA_BWD | RA_GDN_CAP_H0 | RA_GDN_CAP_GQA | RA_GDN_CAP_TAIL,
        .forward = rogue_forward,
        .backward = backward,
    };
    ra_status st = ra_registry_add(r, &rogue);
    return st != RA_OK ? st : example_register(r);
}
