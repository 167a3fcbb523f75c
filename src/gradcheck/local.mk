# Gradient checks: finite differences of the MPFR forward (element-wise,
# directional, the VJP/JVP dot test).
librecaudit_a_SOURCES += src/gradcheck/gradcheck.h src/gradcheck/gdn_fd.c

check_PROGRAMS += tests/t-gradcheck
TESTS += tests/t-gradcheck
tests_t_gradcheck_SOURCES = tests/t-gradcheck.c tests/ref-testutil.h
tests_t_gradcheck_CFLAGS = $(TEST_CFLAGS)
tests_t_gradcheck_LDADD = tests/libtestutil.la $(TEST_LIBS)
