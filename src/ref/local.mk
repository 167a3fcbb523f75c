# MPFR references: the gated delta rule, certification (Ziv), cache.
librecaudit_a_SOURCES += src/ref/ref.h src/ref/refop.h src/ref/mparr.c src/ref/mparr.h \
	src/ref/gdn.c src/ref/gdn.h src/ref/gdn_run.c src/ref/gdn_ref.c \
	src/ref/glr.c src/ref/glr.h src/ref/glr_ref.c \
	src/ref/certify.c src/ref/cache.c src/ref/pool.c src/ref/pool.h

check_PROGRAMS += tests/t-ref-gdn
TESTS += tests/t-ref-gdn
tests_t_ref_gdn_SOURCES = tests/t-ref-gdn.c tests/ref-testutil.h tests/ref-naive.h
tests_t_ref_gdn_CFLAGS = $(TEST_CFLAGS)
tests_t_ref_gdn_LDADD = tests/libtestutil.la $(TEST_LIBS)

check_PROGRAMS += tests/t-certify
TESTS += tests/t-certify
tests_t_certify_SOURCES = tests/t-certify.c tests/ref-testutil.h
tests_t_certify_CFLAGS = $(TEST_CFLAGS)
tests_t_certify_LDADD = tests/libtestutil.la $(TEST_LIBS)

check_PROGRAMS += tests/t-ref-cache
TESTS += tests/t-ref-cache
tests_t_ref_cache_SOURCES = tests/t-ref-cache.c tests/ref-testutil.h
tests_t_ref_cache_CFLAGS = $(TEST_CFLAGS)
tests_t_ref_cache_LDADD = tests/libtestutil.la $(TEST_LIBS)

TESTS += tests/ref-cli.sh
EXTRA_DIST += tests/ref-cli.sh

check_PROGRAMS += tests/t-pool
TESTS += tests/t-pool
tests_t_pool_SOURCES = tests/t-pool.c
tests_t_pool_CFLAGS = $(TEST_CFLAGS)
tests_t_pool_LDADD = tests/libtestutil.la $(TEST_LIBS)

# The affine scan family's reference and its tests (closed forms, a naive
# transcription, gradient checks, bad input).
librecaudit_a_SOURCES += src/ref/scan.c src/ref/scan.h src/ref/scan_ref.c
check_PROGRAMS += tests/t-ref-scan
TESTS += tests/t-ref-scan
tests_t_ref_scan_SOURCES = tests/t-ref-scan.c tests/ref-naive-scan.h
tests_t_ref_scan_CFLAGS = $(TEST_CFLAGS)
tests_t_ref_scan_LDADD = tests/libtestutil.la $(TEST_LIBS)
TESTS += tests/scan-cli.sh
EXTRA_DIST += tests/scan-cli.sh

# The reference code's version in the cache key (src/ref/cache.c): cksum of
# the reference sources (this directory and the ops' case validation,
# src/core/*_case.[ch], which sets defaults such as gdn's scale), recomputed
# on every build and rewritten only when it changes, so a fix to a
# reference retires the cache entries it made with no hand-bumped number.
ref_code_files = src/ref/*.c src/ref/*.h src/core/*_case.c src/core/*_case.h
BUILT_SOURCES += ref_code_version.h
CLEANFILES += ref_code_version.h
ref_code_version.h: ref-code-version-always
	$(AM_V_GEN)v=`cd $(srcdir) && LC_ALL=C && export LC_ALL && cat $(ref_code_files) | cksum` && \
	v=`echo $$v | sed 's/ /-/'` && \
	echo "#define RA_REF_CODE_VERSION \"$$v\"" >$@.tmp && \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi
ref-code-version-always:
.PHONY: ref-code-version-always

check_PROGRAMS += tests/t-ref-glr
TESTS += tests/t-ref-glr
tests_t_ref_glr_SOURCES = tests/t-ref-glr.c tests/ref-testutil.h
tests_t_ref_glr_CFLAGS = $(TEST_CFLAGS)
tests_t_ref_glr_LDADD = tests/libtestutil.la $(TEST_LIBS)

# The bidirectional frame GDN family's reference and its tests.
librecaudit_a_SOURCES += src/ref/bigdn.c src/ref/bigdn_bwd.c src/ref/bigdn_head.h src/ref/bigdn.h src/ref/bigdn_run.c src/ref/bigdn_ref.c
check_PROGRAMS += tests/t-ref-bigdn
TESTS += tests/t-ref-bigdn
tests_t_ref_bigdn_SOURCES = tests/t-ref-bigdn.c tests/ref-testutil.h
tests_t_ref_bigdn_CFLAGS = $(TEST_CFLAGS)
tests_t_ref_bigdn_LDADD = tests/libtestutil.la $(TEST_LIBS)
check_PROGRAMS += tests/t-ref-bigdn-par
TESTS += tests/t-ref-bigdn-par
tests_t_ref_bigdn_par_SOURCES = tests/t-ref-bigdn-par.c tests/ref-testutil.h
tests_t_ref_bigdn_par_CFLAGS = $(TEST_CFLAGS)
tests_t_ref_bigdn_par_LDADD = tests/libtestutil.la $(TEST_LIBS)
