#!/bin/sh
# regress_abi_symbol_type: a plugin whose ra_plugin_abi_version is not an
# int object (a function, a string) is refused naming what it is; its bytes
# used to be read as a garbage version number.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
func_abi=$(plugin_so tests libfuncabi) || exit $?
str_abi=$(plugin_so tests libstrabi) || exit $?
expect_status 2 list variants --plugin "$func_abi" &&
    expect_grep err "plugin $func_abi: 'ra_plugin_abi_version' is a function of [0-9]* bytes, not an int" "function refused"
expect_status 2 list variants --plugin "$str_abi" &&
    expect_grep err "plugin $str_abi: 'ra_plugin_abi_version' is an object of 2 bytes, not an int" "string refused"
finish
