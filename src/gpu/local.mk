# CUDA sources are compiled by nvcc for sm_90a (plus compute_90 PTX) and go
# into the same static library as the C objects.
SUFFIXES = .cu
.cu.$(OBJEXT):
	$(AM_V_CC)$(NVCC) $(NVCCFLAGS) -std=c++17 -Xcompiler -fPIC $(DEFS) $(DEFAULT_INCLUDES) \
	  -I$(top_srcdir)/src -I$(top_srcdir)/include -I$(top_builddir) -c -o $@ $<

librecaudit_a_SOURCES += src/gpu/device.h
if HAVE_CUDA
librecaudit_a_SOURCES += src/gpu/device.cu
else
librecaudit_a_SOURCES += src/gpu/device_none.c
endif
EXTRA_DIST += src/gpu/device.cu src/gpu/device_none.c
