recaudit_SOURCES += src/cli/main.c src/cli/cli.h src/cli/commands.c src/cli/commands.h \
	src/cli/version.c src/cli/version.h
