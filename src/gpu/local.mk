# CUDA sources are compiled by nvcc for sm_90a (plus compute_90 PTX) and go
# into the same static library as the C objects.
SUFFIXES = .cu
.cu.$(OBJEXT):
	$(AM_V_CC)$(NVCC) $(NVCCFLAGS) -std=c++17 -Xcompiler -fPIC $(DEFS) $(DEFAULT_INCLUDES) \
	  -I$(top_srcdir)/src -I$(top_srcdir)/include -I$(top_builddir) -c -o $@ $<

# nvcc objects get no automatic dependency tracking: list the headers.
gpu_headers = src/gpu/device.h src/gpu/rounding_probe.h src/core/status.h \
	include/recaudit/types.h
librecaudit_a_SOURCES += $(gpu_headers) src/gpu/gpu.h src/gpu/variants_none.c
src/gpu/device.$(OBJEXT) src/gpu/rounding_probe.$(OBJEXT): $(gpu_headers)
if HAVE_CUDA
librecaudit_a_SOURCES += src/gpu/device.cu src/gpu/rounding_probe.cu
check_PROGRAMS += tests/t-gpu-rounding
TESTS += tests/t-gpu-rounding
tests_t_gpu_rounding_CFLAGS = $(TEST_CFLAGS)
tests_t_gpu_rounding_LDADD = tests/libtestutil.la $(TEST_LIBS)
else
librecaudit_a_SOURCES += src/gpu/device_none.c
endif
EXTRA_DIST += src/gpu/device.cu src/gpu/rounding_probe.cu src/gpu/device_none.c \
	tests/t-gpu-rounding.c
