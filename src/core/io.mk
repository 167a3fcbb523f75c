# Tensor file formats (.safetensors, .npy), file access, and their tests.
librecaudit_a_SOURCES += src/core/file.c src/core/safetensors.c src/core/npy.c

check_PROGRAMS += tests/t-file tests/t-safetensors tests/t-npy tests/t-case
TESTS += tests/t-file tests/t-safetensors tests/t-npy tests/t-case
tests_t_file_CFLAGS = $(TEST_CFLAGS)
tests_t_file_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_safetensors_CFLAGS = $(TEST_CFLAGS)
tests_t_safetensors_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_npy_CFLAGS = $(TEST_CFLAGS)
tests_t_npy_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_case_CFLAGS = $(TEST_CFLAGS)
tests_t_case_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_file_SOURCES = tests/t-file.c tests/io-testutil.h
tests_t_safetensors_SOURCES = tests/t-safetensors.c tests/io-testutil.h
tests_t_npy_SOURCES = tests/t-npy.c tests/io-testutil.h
tests_t_case_SOURCES = tests/t-case.c tests/io-testutil.h

EXTRA_DIST += tests/data/io/py.safetensors \
	tests/data/io/f4-1d.npy tests/data/io/f8-2d.npy tests/data/io/f4-3d.npy \
	tests/data/io/f8-4d.npy tests/data/io/f8-0d.npy tests/data/io/f4-empty.npy \
	tests/data/io/f2-special.npy tests/data/io/f4-v2.npy tests/data/io/f4-v3.npy \
	tests/data/io/f8-fortran.npy tests/data/io/i4.npy tests/data/io/f4-bigendian.npy
