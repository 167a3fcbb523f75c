recaudit_SOURCES += src/cli/main.c src/cli/cli.h src/cli/commands.c src/cli/commands.h \
	src/cli/version.c src/cli/version.h
recaudit_SOURCES += src/cli/options.c src/cli/options.h \
	src/cli/cmd_list.c src/cli/cmd_gen.c src/cli/cmd_inspect.c
TESTS += tests/cli-basics.sh tests/cli-gen.sh tests/cli-inspect.sh
EXTRA_DIST += tests/cli-lib.sh tests/cli-basics.sh tests/cli-gen.sh tests/cli-inspect.sh
recaudit_SOURCES += src/cli/cmd_run.c src/cli/cmd_check.c src/cli/cmd_audit.c src/cli/cmd_validate.c
recaudit_SOURCES += src/cli/cmd_ref.c src/cli/cmd_gradcheck.c src/cli/cmd_bench_ref.c
recaudit_SOURCES += src/cli/cmd_derive.c
TESTS += tests/glr-cli.sh
EXTRA_DIST += tests/glr-cli.sh
TESTS += tests/derive-cli.sh
EXTRA_DIST += tests/derive-cli.sh
