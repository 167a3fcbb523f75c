# Report writers (tables, progress bar).
librecaudit_a_SOURCES += src/core/progress.c src/core/table.c

check_PROGRAMS += tests/t-table tests/t-progress
TESTS += tests/t-table tests/t-progress
tests_t_table_CFLAGS = $(TEST_CFLAGS)
tests_t_table_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_progress_CFLAGS = $(TEST_CFLAGS)
tests_t_progress_LDADD = tests/libtestutil.la $(TEST_LIBS)
