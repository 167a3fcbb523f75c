# Random streams, gdn case generation, error metrics; tests of the dtype and
# gdn-case code.
librecaudit_a_SOURCES += src/core/rng.c src/core/gen_gdn.c src/core/metrics.c \
	src/core/gen_fill.c src/core/gen_fill.h src/core/gen_glr.c src/core/gen_glr.h

check_PROGRAMS += tests/t-rng tests/t-gen-gdn tests/t-metrics tests/t-tensor tests/t-gdn-case
TESTS += tests/t-rng tests/t-gen-gdn tests/t-metrics tests/t-tensor tests/t-gdn-case
tests_t_rng_CFLAGS = $(TEST_CFLAGS)
tests_t_rng_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_gen_gdn_CFLAGS = $(TEST_CFLAGS)
tests_t_gen_gdn_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_metrics_CFLAGS = $(TEST_CFLAGS)
tests_t_metrics_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_tensor_CFLAGS = $(TEST_CFLAGS)
tests_t_tensor_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_gdn_case_CFLAGS = $(TEST_CFLAGS)
tests_t_gdn_case_LDADD = tests/libtestutil.la $(TEST_LIBS)

# The generator's parameter, no-dht and raw-keys paths against the reference.
check_PROGRAMS += tests/t-gen-paths
TESTS += tests/t-gen-paths
tests_t_gen_paths_CFLAGS = $(TEST_CFLAGS)
tests_t_gen_paths_LDADD = tests/libtestutil.la $(TEST_LIBS)
