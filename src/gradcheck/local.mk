# Gradient checks: the finite-difference engine (element-wise, directional,
# the VJP/JVP dot test) and each operation's hooks into its MPFR reference.
librecaudit_a_SOURCES += src/gradcheck/gradcheck.h src/gradcheck/fd.c \
	src/gradcheck/gdn_gc.c src/gradcheck/gdn_gc.h \
	src/gradcheck/glr_gc.c src/gradcheck/glr_gc.h \
	src/gradcheck/derive.c src/gradcheck/derive.h src/gradcheck/glr_derive.c \
	src/gradcheck/gdn_derive.c src/gradcheck/scan_derive.c

check_PROGRAMS += tests/t-gradcheck
TESTS += tests/t-gradcheck
tests_t_gradcheck_SOURCES = tests/t-gradcheck.c tests/ref-testutil.h
tests_t_gradcheck_CFLAGS = $(TEST_CFLAGS)
tests_t_gradcheck_LDADD = tests/libtestutil.la $(TEST_LIBS)

check_PROGRAMS += tests/t-fd
TESTS += tests/t-fd
tests_t_fd_SOURCES = tests/t-fd.c tests/ref-testutil.h
tests_t_fd_CFLAGS = $(TEST_CFLAGS)
tests_t_fd_LDADD = tests/libtestutil.la $(TEST_LIBS)

# The affine scan family's hooks.
librecaudit_a_SOURCES += src/gradcheck/scan_gc.c src/gradcheck/scan_gc.h
check_PROGRAMS += tests/t-derive
TESTS += tests/t-derive
tests_t_derive_SOURCES = tests/t-derive.c tests/ref-testutil.h
tests_t_derive_CFLAGS = $(TEST_CFLAGS)
tests_t_derive_LDADD = tests/libtestutil.la $(TEST_LIBS)

# The bidirectional frame GDN family's hooks and seed 003's phase formulas.
librecaudit_a_SOURCES += src/gradcheck/bigdn_gc.c src/gradcheck/bigdn_gc.h \
	src/gradcheck/bigdn_derive.c
