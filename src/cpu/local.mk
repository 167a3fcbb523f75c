# CPU kernel variants (gdn.cpu.*): the kernels are templates instantiated
# for float (gdn_f32.c) and double (gdn_f64.c).
librecaudit_a_SOURCES += src/cpu/cpu.h src/cpu/variants.c \
	src/cpu/faults.h src/cpu/gdn_variants.h src/cpu/gdn_variants.c \
	src/cpu/gdn_impl.h src/cpu/gdn_f32.c src/cpu/gdn_f64.c \
	src/cpu/gdn_tmpl_linalg.h src/cpu/gdn_tmpl_inverse.h src/cpu/gdn_tmpl_head.h \
	src/cpu/gdn_tmpl_seq.h src/cpu/gdn_tmpl_chunk.h src/cpu/gdn_tmpl_chunk_bwd.h \
	src/cpu/gdn_tmpl_driver.h \
	src/cpu/glr_variants.h src/cpu/glr_variants.c
# bigdn's CPU kernels on plain arrays (seed 003's phases, P0/P1/P2).
librecaudit_a_SOURCES += src/cpu/bigdn_f32.h src/cpu/bigdn_f32.c src/cpu/bigdn_f64.c \
	src/cpu/bigdn_tmpl_fwd.h src/cpu/bigdn_tmpl_bwd.h \
	src/cpu/bigdn_variants.h src/cpu/bigdn_variants.c
check_PROGRAMS += tests/t-bigdn-cpu tests/t-bigdn-cpu-modes
TESTS += tests/t-bigdn-cpu tests/t-bigdn-cpu-modes
tests_t_bigdn_cpu_SOURCES = tests/t-bigdn-cpu.c tests/bigdn-cpu-testutil.h
tests_t_bigdn_cpu_CFLAGS = $(TEST_CFLAGS)
tests_t_bigdn_cpu_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_bigdn_cpu_modes_SOURCES = tests/t-bigdn-cpu-modes.c tests/bigdn-cpu-testutil.h
tests_t_bigdn_cpu_modes_CFLAGS = $(TEST_CFLAGS)
tests_t_bigdn_cpu_modes_LDADD = tests/libtestutil.la $(TEST_LIBS)
# The affine scan family's CPU variants.
librecaudit_a_SOURCES += src/cpu/scan_variants.h src/cpu/scan_variants.c src/cpu/scan_f32.c
check_PROGRAMS += tests/t-cpu-scan
TESTS += tests/t-cpu-scan
tests_t_cpu_scan_CFLAGS = $(TEST_CFLAGS)
tests_t_cpu_scan_LDADD = tests/libtestutil.la $(TEST_LIBS)

check_PROGRAMS += tests/t-cpu-gdn tests/t-cpu-faults
TESTS += tests/t-cpu-gdn tests/t-cpu-faults
tests_t_cpu_gdn_SOURCES = tests/t-cpu-gdn.c tests/cpu-testutil.h
tests_t_cpu_gdn_CFLAGS = $(TEST_CFLAGS)
tests_t_cpu_gdn_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_cpu_faults_SOURCES = tests/t-cpu-faults.c tests/cpu-testutil.h
tests_t_cpu_faults_CFLAGS = $(TEST_CFLAGS)
tests_t_cpu_faults_LDADD = tests/libtestutil.la $(TEST_LIBS)

check_PROGRAMS += tests/t-cpu-glr
TESTS += tests/t-cpu-glr
tests_t_cpu_glr_SOURCES = tests/t-cpu-glr.c tests/ref-testutil.h
tests_t_cpu_glr_CFLAGS = $(TEST_CFLAGS)
tests_t_cpu_glr_LDADD = tests/libtestutil.la $(TEST_LIBS)

# bigdn's registered rows: wiring, the quick suite, gates that bite.
check_PROGRAMS += tests/t-bigdn-variants
TESTS += tests/t-bigdn-variants
tests_t_bigdn_variants_SOURCES = tests/t-bigdn-variants.c tests/quick-testutil.h
tests_t_bigdn_variants_CFLAGS = $(TEST_CFLAGS)
tests_t_bigdn_variants_LDADD = tests/libtestutil.la $(TEST_LIBS)
