# libFuzzer harnesses of the readers: make fuzz [FUZZ_SECONDS=60] [FUZZ_CC=clang] (tests/fuzz/fuzz.sh).
FUZZ_CC = clang
FUZZ_SECONDS = 60
fuzz_files = tests/fuzz/fuzz.sh tests/fuzz/fuzz.h tests/fuzz/fuzz-safetensors.c \
	tests/fuzz/fuzz-npy.c tests/fuzz/fuzz-gates.c tests/fuzz/fuzz-suite.c tests/fuzz/fuzz-case.c
EXTRA_DIST += $(fuzz_files) tests/fuzz/corpus

# Exit 77 from the script (no usable clang) becomes a failure with its reason.
fuzz: librecaudit.a
	@srcdir='$(srcdir)' FUZZ_CC='$(FUZZ_CC)' FUZZ_SECONDS='$(FUZZ_SECONDS)' \
	$(SHELL) $(srcdir)/tests/fuzz/fuzz.sh \
	  --cppflags $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) \
	  --ccasflags $(AM_CCASFLAGS) --cflags $(OPENMP_CFLAGS) \
	  --libs $(MPFR_LIBS) $(GMP_LIBS) $(GSL_LIBS) $(JANSSON_LIBS) $(CUDA_LIBS) -lm \
	  --sources $(librecaudit_a_SOURCES); rc=$$?; \
	if test $$rc -eq 77; then echo "make fuzz: not run (no clang with libFuzzer)" >&2; exit 1; fi; \
	exit $$rc
.PHONY: fuzz
