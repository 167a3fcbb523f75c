librecaudit_a_SOURCES += src/core/status.c src/core/status.h \
	src/core/tensor.c src/core/tensor.h \
	src/core/case.c src/core/case.h \
	src/core/kv.c src/core/kv.h \
	src/core/capture.c src/core/capture.h \
	src/core/op.h src/core/ops.c src/core/gdn_op.c \
	src/core/gdn_case.c src/core/gdn_case.h \
	src/core/case_check.c src/core/case_check.h \
	src/core/glr_op.c src/core/glr_case.c src/core/glr_case.h \
	src/core/io.h src/core/rng.h src/core/gen_gdn.h src/core/metrics.h \
	src/core/progress.h src/core/table.h
pkginclude_HEADERS += include/recaudit/types.h

# The affine scan family (scan.linear, scan.affine, scan.log): rows, cases, generator.
librecaudit_a_SOURCES += src/core/scan_op.c src/core/scan_case.c src/core/scan_case.h \
	src/core/gen_scan.c src/core/gen_scan.h
pkginclude_HEADERS += include/recaudit/scan.h

# The operation table: every row against its own hooks.
check_PROGRAMS += tests/t-ops
TESTS += tests/t-ops
tests_t_ops_CFLAGS = $(TEST_CFLAGS)
tests_t_ops_LDADD = tests/libtestutil.la $(TEST_LIBS)
TESTS += tests/generic-names.sh
EXTRA_DIST += tests/generic-names.sh

# Scaffolding shared by every Check suite (tests/testutil.h), a convenience
# library each tests_t_*_LDADD names first.  RA_TOP_SRCDIR locates source
# tree fixtures when a suite runs outside make check.
check_LTLIBRARIES += tests/libtestutil.la
tests_libtestutil_la_SOURCES = tests/testutil.c tests/testutil.h
tests_libtestutil_la_CPPFLAGS = $(AM_CPPFLAGS) -DRA_TOP_SRCDIR='"$(abs_top_srcdir)"'
tests_libtestutil_la_CFLAGS = $(TEST_CFLAGS)

include src/core/io.mk
include src/core/gen.mk
include src/core/report.mk

# The bidirectional frame GDN family (bigdn, bigdn.core): rows, cases, generator.
librecaudit_a_SOURCES += src/core/bigdn_op.c src/core/bigdn_case.c src/core/bigdn_case.h \
	src/core/gen_bigdn.c src/core/gen_bigdn.h
