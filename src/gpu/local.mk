# CUDA sources are compiled by nvcc for sm_90a (plus compute_90 PTX) and go
# into the same static library as the C objects.
SUFFIXES = .cu
.cu.$(OBJEXT):
	$(AM_V_CC)$(NVCC) $(NVCCFLAGS) -std=c++17 -Xcompiler -fPIC $(DEFS) $(DEFAULT_INCLUDES) \
	  -I$(top_srcdir)/src -I$(top_srcdir)/include -I$(top_builddir) $(MPFR_CFLAGS) -c -o $@ $<

# nvcc objects get no automatic dependency tracking: list the headers.
gpu_headers = src/gpu/device.h src/gpu/rounding_probe.h src/gpu/clock_probe.h src/gpu/cuda_try.h \
	src/core/status.h include/recaudit/types.h
gpu_gdn_headers = src/gpu/gdn_cuda.h src/gpu/device.h src/gpu/cuda_try.h src/core/case.h \
	src/core/gdn_case.h src/core/status.h src/core/tensor.h src/cpu/gdn_variants.h \
	include/recaudit/types.h include/recaudit/plugin.h
librecaudit_a_SOURCES += $(gpu_headers) src/gpu/gdn_cuda.h src/gpu/gpu.h
src/gpu/device.$(OBJEXT) src/gpu/rounding_probe.$(OBJEXT) src/gpu/clock_probe.$(OBJEXT): \
	$(gpu_headers) src/gpu/mma.cuh
src/gpu/gdn_cuda.$(OBJEXT) src/gpu/gdn_seq.$(OBJEXT): $(gpu_gdn_headers)
if HAVE_CUDA
# The CUDA variants (variants.c lists the rows of gdn_cuda_rows.c); a build
# without CUDA lists none (variants_none.c).
librecaudit_a_SOURCES += src/gpu/device.cu src/gpu/rounding_probe.cu src/gpu/clock_probe.cu \
	src/gpu/gdn_cuda.cu src/gpu/gdn_seq.cu src/gpu/gdn_cuda_rows.c src/gpu/variants.c
check_PROGRAMS += tests/t-gpu-rounding tests/t-gpu-gdn
TESTS += tests/t-gpu-rounding tests/t-gpu-gdn
tests_t_gpu_rounding_CFLAGS = $(TEST_CFLAGS)
tests_t_gpu_rounding_LDADD = tests/libtestutil.la $(TEST_LIBS)
tests_t_gpu_gdn_CFLAGS = $(TEST_CFLAGS)
tests_t_gpu_gdn_LDADD = tests/libtestutil.la $(TEST_LIBS)
else
librecaudit_a_SOURCES += src/gpu/device_none.c src/gpu/variants_none.c src/gpu/clock_probe_none.c
endif
EXTRA_DIST += src/gpu/device.cu src/gpu/rounding_probe.cu src/gpu/device_none.c \
	src/gpu/clock_probe.cu src/gpu/clock_probe_none.c \
	src/gpu/gdn_cuda.cu src/gpu/gdn_seq.cu src/gpu/gdn_cuda_rows.c src/gpu/variants.c \
	src/gpu/variants_none.c \
	tests/t-gpu-rounding.c tests/t-gpu-gdn.c

# Chunked gdn kernels (ra_gpu_gdn_chunk_launch): entry point, forward and
# backward kernels, their device headers.
gpu_chunk_headers = src/gpu/gdn_cuda_cxx.h src/gpu/gdn_chunk_kernels.h \
	src/gpu/gdn_chunk.cuh src/gpu/gdn_chunk_inverse.cuh src/gpu/blk_mm.cuh src/gpu/mma.cuh \
	src/gpu/pair_tile.cuh src/gpu/gdn_chunk_bf16.cuh src/gpu/gdn_chunk_grads.cuh \
	src/gpu/cp_async.cuh src/gpu/pass_mm_fixed.cuh src/gpu/stored_load.cuh \
	src/gpu/ffma_tile.cuh src/gpu/ffma_mm.cuh src/gpu/x3_mm.cuh
gpu_chunk_sources = src/gpu/gdn_chunk.cu src/gpu/gdn_chunk_fwd.cu src/gpu/gdn_chunk_bwd.cu \
	src/gpu/gdn_chunk_pass.cu src/gpu/gdn_chunk_fwd_bf16.cu src/gpu/gdn_chunk_bwd_bf16.cu \
	src/gpu/gdn_chunk_states_bf16.cu src/gpu/gdn_chunk_dstates_bf16.cu src/gpu/gdn_chunk_fwd_ieee.cu
librecaudit_a_SOURCES += $(gpu_chunk_headers)
src/gpu/gdn_chunk.$(OBJEXT) src/gpu/gdn_chunk_fwd.$(OBJEXT) src/gpu/gdn_chunk_bwd.$(OBJEXT) \
	src/gpu/gdn_chunk_pass.$(OBJEXT) src/gpu/gdn_chunk_fwd_bf16.$(OBJEXT) \
	src/gpu/gdn_chunk_bwd_bf16.$(OBJEXT) src/gpu/gdn_chunk_states_bf16.$(OBJEXT) \
	src/gpu/gdn_chunk_dstates_bf16.$(OBJEXT) src/gpu/gdn_chunk_fwd_ieee.$(OBJEXT): \
	$(gpu_chunk_headers) $(gpu_gdn_headers)
if HAVE_CUDA
librecaudit_a_SOURCES += $(gpu_chunk_sources)
check_PROGRAMS += tests/t-gpu-chunk
TESTS += tests/t-gpu-chunk
tests_t_gpu_chunk_CFLAGS = $(TEST_CFLAGS)
tests_t_gpu_chunk_LDADD = tests/libtestutil.la $(TEST_LIBS)
endif
EXTRA_DIST += $(gpu_chunk_sources) tests/t-gpu-chunk.c

# The product engines one product a block (mm_engines.h): their bit test
# and their benchmark (built, not run, by make).  x3_wgmma.cuh is theirs
# alone until a chunk kernel uses it (then it joins gpu_chunk_headers).
librecaudit_a_SOURCES += src/gpu/mm_engines.h src/gpu/x3_wgmma.cuh
src/gpu/mm_engines.$(OBJEXT): $(gpu_chunk_headers) src/gpu/x3_wgmma.cuh src/gpu/mm_engines.h \
	$(gpu_headers)
if HAVE_CUDA
librecaudit_a_SOURCES += src/gpu/mm_engines.cu
check_PROGRAMS += tests/t-gpu-mm
TESTS += tests/t-gpu-mm
tests_t_gpu_mm_CFLAGS = $(TEST_CFLAGS)
tests_t_gpu_mm_LDADD = tests/libtestutil.la $(TEST_LIBS)
noinst_PROGRAMS += bench/mm-engines
bench_mm_engines_SOURCES = bench/mm-engines.c
bench_mm_engines_LDADD = librecaudit.a $(RA_LIBS)
endif
EXTRA_DIST += src/gpu/mm_engines.cu tests/t-gpu-mm.c bench/mm-engines.c
