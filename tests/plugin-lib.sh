# Shared helpers for the plugin tests (tests/plugin-*.sh), sourced after cli-lib.sh.
#
# The plugins are libtool modules built by make check (examples/plugin/local.mk);
# their shared objects live in .libs/ of the build tree.

# plugin_so DIR NAME: path of the built shared object, or skip the test.
plugin_so() {
    so="${top_builddir:-$(dirname "$RECAUDIT")}/$1/.libs/$2.so"
    if ! test -f "$so"; then
        echo "SKIP: $so not built (make check builds it)" >&2
        exit 77
    fi
    echo "$so"
}
