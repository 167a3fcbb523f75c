librecaudit_a_SOURCES += src/core/status.c src/core/status.h \
	src/core/tensor.c src/core/tensor.h \
	src/core/case.c src/core/case.h \
	src/core/gdn_case.c src/core/gdn_case.h \
	src/core/io.h src/core/rng.h src/core/gen_gdn.h src/core/metrics.h \
	src/core/progress.h src/core/table.h
pkginclude_HEADERS += include/recaudit/types.h

include src/core/io.mk
include src/core/gen.mk
include src/core/report.mk
