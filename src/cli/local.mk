recaudit_SOURCES += src/cli/main.c src/cli/cli.h src/cli/commands.c src/cli/commands.h \
	src/cli/version.c src/cli/version.h
recaudit_SOURCES += src/cli/options.c src/cli/options.h \
	src/cli/cmd_list.c src/cli/cmd_gen.c src/cli/cmd_inspect.c
TESTS += tests/cli-basics.sh tests/cli-gen.sh tests/cli-inspect.sh tests/cli-bench.sh
EXTRA_DIST += tests/cli-lib.sh tests/cli-basics.sh tests/cli-gen.sh tests/cli-inspect.sh \
	tests/cli-bench.sh
recaudit_SOURCES += src/cli/cmd_run.c src/cli/cmd_check.c src/cli/cmd_audit.c src/cli/cmd_validate.c
recaudit_SOURCES += src/cli/cmd_ref.c src/cli/cmd_gradcheck.c src/cli/cmd_bench_ref.c \
	src/cli/cmd_bench.c
# Regression tests of file handling: outputs vs inputs, temporaries, FIFOs,
# NUL bytes, escapes, plugin ABI symbol, huge sizes, gradcheck blame.
REGRESS_IO_TESTS = tests/regress-output-is-input.sh tests/regress-tmp-symlink.sh \
	tests/regress-tmp-permissions.sh tests/regress-fifo-refused.sh tests/regress-suite-nul.sh \
	tests/regress-inspect-escapes.sh tests/regress-gradcheck-blames-grads.sh \
	tests/regress-abi-symbol-type.sh tests/regress-huge-alloc.sh
TESTS += $(REGRESS_IO_TESTS)
EXTRA_DIST += tests/regress-lib.sh $(REGRESS_IO_TESTS)
recaudit_SOURCES += src/cli/cmd_derive.c
TESTS += tests/glr-cli.sh
EXTRA_DIST += tests/glr-cli.sh
TESTS += tests/bigdn-cli.sh
EXTRA_DIST += tests/bigdn-cli.sh
TESTS += tests/derive-cli.sh
EXTRA_DIST += tests/derive-cli.sh
# Covering-array suites (src/audit/gdn_matrix.h): recaudit pairs.
recaudit_SOURCES += src/cli/cmd_pairs.c
# Every listed command has a help whose options parse; every path and link the docs name exists.
TESTS += tests/cli-help.sh tests/doc-paths.sh
EXTRA_DIST += tests/cli-help.sh tests/doc-paths.sh
