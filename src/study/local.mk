# Error-growth studies (`recaudit study NAME`): the framework and one file per study.
librecaudit_a_SOURCES += src/study/study.h src/study/studies.h src/study/studies.c \
	src/study/points.c src/study/plot.c src/study/report.c src/study/case.c
librecaudit_a_SOURCES += src/study/reversal.h src/study/reversal.c src/study/reversal_gdn.c
librecaudit_a_SOURCES += src/study/metric.c
recaudit_SOURCES += src/cli/cmd_study.c

# The framework's own tests (points, CSV/markdown, plot, fit) and the quick
# studies through the command.
check_PROGRAMS += tests/t-study
TESTS += tests/t-study tests/study-cli.sh
tests_t_study_CFLAGS = $(TEST_CFLAGS)
tests_t_study_LDADD = tests/libtestutil.la $(TEST_LIBS)
EXTRA_DIST += tests/study-cli.sh reports/README.md

# `make reports`: regenerate the CPU studies' reports under reports/ in the
# source tree (references from $RECAUDIT_CACHE, else ~/.cache/recaudit).
STUDIES_CPU = reversal
STUDIES_CPU += metric
reports: recaudit$(EXEEXT)
	@set -e; commit=$$(git -C $(top_srcdir) describe --always --dirty --abbrev=7 2>/dev/null || echo unknown); \
	for s in $(STUDIES_CPU); do \
	    RECAUDIT_COMMIT=$$commit ./recaudit$(EXEEXT) study $$s --out $(top_srcdir)/reports; \
	done
.PHONY: reports
