# The audit pipeline: variant registry and plugins, gates, suites, check/audit/validate.
librecaudit_a_SOURCES += src/audit/registry.c src/audit/registry.h \
	src/audit/datadir.c src/audit/datadir.h src/audit/embedded_data.S \
	src/audit/tsv.c src/audit/tsv.h \
	src/audit/gates.c src/audit/gates.h \
	src/audit/suite.c src/audit/suite.h \
	src/audit/gdn_matrix.c src/audit/gdn_matrix.h \
	src/audit/audit.c src/audit/validate.c src/audit/audit.h \
	src/audit/report.c src/audit/report.h \
	src/audit/wire.c src/audit/wire.h src/audit/isolate.c src/audit/isolate.h \
	src/audit/bench.c src/audit/bench.h

# Where an installed recaudit finds gates.tsv and suites/ (src/audit/datadir.c).
AM_CPPFLAGS += -DRA_PKGDATADIR='"$(pkgdatadir)"'
# The built-in copies of the data files: the assembler finds them under
# data/, and the object is rebuilt when one changes.
AM_CCASFLAGS = -Wa,-I$(top_srcdir)/data
embedded_data_files = data/gates.tsv data/suites/quick.tsv data/suites/full.tsv
src/audit/embedded_data.$(OBJEXT): $(embedded_data_files)

pkginclude_HEADERS += include/recaudit/plugin.h include/recaudit/gdn.h
dist_pkgdata_DATA += data/gates.tsv
suitesdir = $(pkgdatadir)/suites
dist_suites_DATA = data/suites/quick.tsv data/suites/full.tsv

check_PROGRAMS += tests/t-registry tests/t-gates tests/t-validate tests/t-sensitivity
TESTS += tests/t-registry tests/t-gates tests/t-validate tests/t-sensitivity
tests_t_registry_CFLAGS = $(TEST_CFLAGS)
tests_t_registry_LDADD = tests/libtestutil.la $(TEST_LIBS)
# The test loads plugins that resolve ra_registry_add from the executable.
tests_t_registry_LDFLAGS = $(AM_LDFLAGS) -Wl,--export-dynamic
tests_t_gates_CFLAGS = $(TEST_CFLAGS)
tests_t_gates_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_validate_CFLAGS = $(TEST_CFLAGS)
tests_t_validate_LDADD = tests/libtestutil.la $(TEST_LIBS)
check_PROGRAMS += tests/t-bench
TESTS += tests/t-bench
tests_t_bench_CFLAGS = $(TEST_CFLAGS)
tests_t_bench_LDADD = tests/libtestutil.la $(TEST_LIBS)
# Planted defects of every class against quick (tests/t-planted.c).
check_PROGRAMS += tests/t-planted
TESTS += tests/t-planted
tests_t_planted_SOURCES = tests/t-planted.c tests/quick-testutil.h
tests_t_planted_CFLAGS = $(TEST_CFLAGS)
tests_t_planted_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_sensitivity_SOURCES = tests/t-sensitivity.c tests/quick-testutil.h
tests_t_sensitivity_CFLAGS = $(TEST_CFLAGS)
tests_t_sensitivity_LDADD = tests/libtestutil.la $(TEST_LIBS)

TESTS += tests/audit-commands.sh tests/audit-validate.sh tests/audit-standalone.sh
EXTRA_DIST += tests/audit-commands.sh tests/audit-validate.sh tests/audit-standalone.sh
# quick's gdn rows against `recaudit pairs` (src/audit/gdn_matrix.c).
TESTS += tests/suite-pairs.sh
EXTRA_DIST += tests/suite-pairs.sh
TESTS += tests/validate-prefetch.sh
EXTRA_DIST += tests/validate-prefetch.sh
EXTRA_DIST += docs/external.md

# Variants in child processes (src/audit/isolate.h) and the wire format of
# their outcomes (src/audit/wire.h); the plugin side: tests/plugin-isolate.sh.
check_PROGRAMS += tests/t-wire tests/t-isolate
TESTS += tests/t-wire tests/t-isolate
tests_t_wire_CFLAGS = $(TEST_CFLAGS)
tests_t_wire_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_isolate_CFLAGS = $(TEST_CFLAGS)
tests_t_isolate_LDADD = tests/libtestutil.la $(TEST_LIBS)
