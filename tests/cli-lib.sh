# shellcheck shell=sh
# Shared helpers for the CLI tests (tests/cli-*.sh), sourced, POSIX sh.
#
# Each test runs $RECAUDIT (exported by `make check`; ./recaudit when run by
# hand from the build directory) in a private temporary directory that is
# removed on exit, and fails with a message saying which expectation broke.

RECAUDIT=${RECAUDIT:-./recaudit}
case $RECAUDIT in /*) ;; *) RECAUDIT=$(pwd)/$RECAUDIT ;; esac
if ! test -x "$RECAUDIT"; then
    echo "SKIP: no recaudit program at $RECAUDIT" >&2
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-cli.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 99
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect_status WANT ARGS...: runs recaudit ARGS, stdout to out, stderr to err.
expect_status() {
    want=$1
    shift
    "$RECAUDIT" "$@" >out 2>err
    got=$?
    if test "$got" -ne "$want"; then
        fail "recaudit $* exited $got, want $want; stderr:"
        sed 's/^/    /' err >&2
        return 1
    fi
    return 0
}

# expect_grep FILE PATTERN WHAT: FILE has a line matching the basic regex.
expect_grep() {
    grep -e "$2" "$1" >/dev/null || {
        fail "$3: no line matching '$2' in:"
        sed 's/^/    /' "$1" >&2
    }
}

finish() {
    if test "$failures" -ne 0; then
        echo "$failures failure(s)" >&2
        exit 1
    fi
    exit 0
}
