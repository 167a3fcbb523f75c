# The example variant plugin, built by make check twice: as shipped (it must
# pass validate --suite quick) and with a planted defect (it must fail it).
# Plugins link against nothing: the ra_* symbols come from the recaudit
# executable at load time (-Wl,--export-dynamic in Makefile.am).
PLUGIN_LDFLAGS = -module -avoid-version -shared -rpath /nowhere

check_LTLIBRARIES += examples/plugin/libgdnexample.la examples/plugin/libgdnexample_defect.la
examples_plugin_libgdnexample_la_SOURCES = examples/plugin/gdn_example.c
examples_plugin_libgdnexample_la_CPPFLAGS = -I$(top_srcdir)/include
examples_plugin_libgdnexample_la_LDFLAGS = $(PLUGIN_LDFLAGS)
examples_plugin_libgdnexample_la_LIBADD = -lm
examples_plugin_libgdnexample_defect_la_SOURCES = examples/plugin/gdn_example.c
examples_plugin_libgdnexample_defect_la_CPPFLAGS = -I$(top_srcdir)/include -DPLANT_DEFECT
examples_plugin_libgdnexample_defect_la_LDFLAGS = $(PLUGIN_LDFLAGS)
examples_plugin_libgdnexample_defect_la_LIBADD = -lm

# The example with ht and dk misnamed: a result lacking an output and a gradient.
check_LTLIBRARIES += examples/plugin/libgdnexample_misnamed.la
examples_plugin_libgdnexample_misnamed_la_SOURCES = examples/plugin/gdn_example.c
examples_plugin_libgdnexample_misnamed_la_CPPFLAGS = -I$(top_srcdir)/include -DPLANT_MISNAMED
examples_plugin_libgdnexample_misnamed_la_LDFLAGS = $(PLUGIN_LDFLAGS)
examples_plugin_libgdnexample_misnamed_la_LIBADD = -lm

# The example under a name that spells another class (tf32) than it declares
# (f64), sound and with the planted defect: the class picks the gates.
check_LTLIBRARIES += examples/plugin/libgdnexample_tf32name.la examples/plugin/libgdnexample_tf32name_defect.la
examples_plugin_libgdnexample_tf32name_la_SOURCES = examples/plugin/gdn_example.c
examples_plugin_libgdnexample_tf32name_la_CPPFLAGS = -I$(top_srcdir)/include -DEXAMPLE_NAME='"gdn.mykernel.chunk64.tf32"'
examples_plugin_libgdnexample_tf32name_la_LDFLAGS = $(PLUGIN_LDFLAGS)
examples_plugin_libgdnexample_tf32name_la_LIBADD = -lm
examples_plugin_libgdnexample_tf32name_defect_la_SOURCES = examples/plugin/gdn_example.c
examples_plugin_libgdnexample_tf32name_defect_la_CPPFLAGS = -I$(top_srcdir)/include -DEXAMPLE_NAME='"gdn.mykernel.chunk64.tf32"' -DPLANT_DEFECT
examples_plugin_libgdnexample_tf32name_defect_la_LDFLAGS = $(PLUGIN_LDFLAGS)
examples_plugin_libgdnexample_tf32name_defect_la_LIBADD = -lm
TESTS += tests/plugin-class.sh
EXTRA_DIST += tests/plugin-class.sh

# Broken plugins for the loader's error messages (tests/plugin-errors.sh).
check_LTLIBRARIES += tests/libbadabi.la tests/libnextabi.la tests/liboldabi.la tests/libnoabi.la \
	tests/libbadrow.la
tests_libbadabi_la_SOURCES = tests/plugin-bad.c
tests_libbadabi_la_CPPFLAGS = -I$(top_srcdir)/include -DBAD_ABI
tests_libbadabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_libnextabi_la_SOURCES = tests/plugin-bad.c
tests_libnextabi_la_CPPFLAGS = -I$(top_srcdir)/include -DNEXT_ABI
tests_libnextabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_liboldabi_la_SOURCES = tests/plugin-bad.c
tests_liboldabi_la_CPPFLAGS = -I$(top_srcdir)/include -DOLD_ABI
tests_liboldabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_libnoabi_la_SOURCES = tests/plugin-bad.c
tests_libnoabi_la_CPPFLAGS = -I$(top_srcdir)/include -DNO_ABI
tests_libnoabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_libbadrow_la_SOURCES = tests/plugin-bad.c
tests_libbadrow_la_CPPFLAGS = -I$(top_srcdir)/include -DBAD_ROW
tests_libbadrow_la_LDFLAGS = $(PLUGIN_LDFLAGS)

TESTS += tests/plugin-example.sh tests/plugin-defect.sh tests/plugin-errors.sh tests/check-verdict.sh
EXTRA_DIST += tests/plugin-example.sh tests/plugin-defect.sh tests/plugin-errors.sh tests/check-verdict.sh \
	tests/plugin-lib.sh

# A plugin built for ABI 3, whose rows end before forward_backward
# (tests/plugin-abi3.sh).
check_LTLIBRARIES += tests/libabi3.la
tests_libabi3_la_SOURCES = tests/plugin-abi3.c
tests_libabi3_la_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/examples/plugin
tests_libabi3_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_libabi3_la_LIBADD = -lm
TESTS += tests/plugin-abi3.sh
EXTRA_DIST += tests/plugin-abi3.sh

# ra_plugin_abi_version of the wrong type (tests/regress-abi-symbol-type.sh).
check_LTLIBRARIES += tests/libfuncabi.la tests/libstrabi.la
tests_libfuncabi_la_SOURCES = tests/plugin-bad.c
tests_libfuncabi_la_CPPFLAGS = -I$(top_srcdir)/include -DFUNC_ABI
tests_libfuncabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_libstrabi_la_SOURCES = tests/plugin-bad.c
tests_libstrabi_la_CPPFLAGS = -I$(top_srcdir)/include -DSTR_ABI
tests_libstrabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)

# Misbehaving variants, each followed by the honest example variant, for
# the isolation of variant runs (tests/plugin-isolate.sh).
ROGUE_CPPFLAGS = -I$(top_srcdir)/include -I$(top_srcdir)/examples/plugin
check_LTLIBRARIES += tests/librogue_write.la tests/librogue_exit.la tests/librogue_segv.la \
	tests/librogue_abort.la tests/librogue_hang.la
tests_librogue_write_la_SOURCES = tests/plugin-rogue.c
tests_librogue_write_la_CPPFLAGS = $(ROGUE_CPPFLAGS) -DROGUE_WRITE
tests_librogue_write_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_librogue_write_la_LIBADD = -lm
tests_librogue_exit_la_SOURCES = tests/plugin-rogue.c
tests_librogue_exit_la_CPPFLAGS = $(ROGUE_CPPFLAGS) -DROGUE_EXIT
tests_librogue_exit_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_librogue_exit_la_LIBADD = -lm
tests_librogue_segv_la_SOURCES = tests/plugin-rogue.c
tests_librogue_segv_la_CPPFLAGS = $(ROGUE_CPPFLAGS) -DROGUE_SEGV
tests_librogue_segv_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_librogue_segv_la_LIBADD = -lm
tests_librogue_abort_la_SOURCES = tests/plugin-rogue.c
tests_librogue_abort_la_CPPFLAGS = $(ROGUE_CPPFLAGS) -DROGUE_ABORT
tests_librogue_abort_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_librogue_abort_la_LIBADD = -lm
tests_librogue_hang_la_SOURCES = tests/plugin-rogue.c
tests_librogue_hang_la_CPPFLAGS = $(ROGUE_CPPFLAGS) -DROGUE_HANG
tests_librogue_hang_la_LDFLAGS = $(PLUGIN_LDFLAGS)
tests_librogue_hang_la_LIBADD = -lm

TESTS += tests/plugin-isolate.sh
EXTRA_DIST += tests/plugin-isolate.sh
