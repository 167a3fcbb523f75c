#!/bin/sh
# Generic code asks the operation table and never names an operation: no
# file of src/audit, src/cli, src/core, src/gradcheck or src/ref outside an
# operation's own files (whose names contain the operation's family, the
# name up to its first dot: scan for scan.affine) holds an
# operation's name as a string literal, except the table's list,
# src/core/ops.c.  Operation names come from `recaudit list ops`.
. "${top_srcdir:-.}/tests/cli-lib.sh"

src=${top_srcdir:-.}
case $src in /*) ;; *) src=$OLDPWD/$src ;; esac
expect_status 0 list --format csv ops || finish
ops=$(sed -n '2,$s/,.*//p' out)
test -n "$ops" || fail "no operation listed"
for op in $ops; do
    family=${op%%.*}
    for f in "$src"/src/audit/*.c "$src"/src/cli/*.c "$src"/src/core/*.c \
        "$src"/src/gradcheck/*.c "$src"/src/ref/*.c; do
        base=$(basename "$f")
        case $base in ops.c | *"$family"*) continue ;; esac
        if grep -n "\"$op\"" "$f" >hits 2>/dev/null; then
            fail "$f names operation '$op':"
            sed 's/^/    /' hits >&2
        fi
    done
done
finish
