#!/bin/sh
# Docs: every repository path and relative link that README.md, docs/*.md and reports/README.md name exists.
#
# A path is a word that starts with one of the tree's top directories
# (src/, tests/, data/, docs/, reports/, include/, examples/, bench/);
# patterns (`src/<op>_op.c`, `tests/t-*.c`, `src/ref/*.[ch]`, `NAME.c`)
# stand for a family of files and are left out; `X.c/.h` names both
# `X.c` and `X.h`, a Check program `tests/t-foo` its `tests/t-foo.c`.  A
# relative markdown link `[text](target)` is resolved from the directory
# of the file that holds it (anchors dropped).  Every report under
# reports/ must have a link in reports/README.md, and every name in
# `recaudit list ops` and `list variants` appears in README.md.  Runs in a git checkout
# only: a distributed tree carries only the files the distribution lists.
top=${top_srcdir:-.}
case $top in /*) ;; *) top=$(pwd)/$top ;; esac
if ! test -e "$top/.git"; then
    echo "SKIP: $top is not a git checkout" >&2
    exit 77
fi
cd "$top" || exit 99
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-docpaths.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

files="README.md reports/README.md $(ls docs/*.md)"
test -n "$files" || exit 99

for f in $files; do
    # Repository paths, with the character before each so that a path
    # inside another (`~/.cache/recaudit/...`) is not taken for one.
    grep -oE '(^|[^A-Za-z0-9_./~$-])(src|tests|data|docs|reports|include|examples|bench)/[]A-Za-z0-9_./<>*{}[-]*' "$f" |
        sed 's/^[^a-z]//; s/[].]*$//' | sort -u >"$work/paths"
    while read -r p; do
        case $p in
        *'<'* | *'*'* | *'{'* | *'['* | *NAME*) continue ;;
        *.c/.h)
            base=${p%.c/.h}
            test -e "$base.c" || fail "$f names $base.c, which does not exist"
            test -e "$base.h" || fail "$f names $base.h, which does not exist"
            continue
            ;;
        esac
        # A Check suite is named by its program, built from $p.c.
        test -e "$p" || test -e "$p.c" || fail "$f names $p, which does not exist"
    done <"$work/paths"
    # Relative markdown links.
    dir=$(dirname "$f")
    grep -oE '\]\([^)[:space:]]+\)' "$f" | sed 's/^](//; s/)$//; s/#.*//' | sort -u >"$work/links"
    while read -r l; do
        case $l in '' | http://* | https://* | mailto:*) continue ;; esac
        test -e "$dir/$l" || fail "$f links to $l, which does not resolve ($dir/$l)"
    done <"$work/links"
done

# Every report under reports/ is indexed in reports/README.md.
for r in $(find reports -name '*.md' ! -path reports/README.md | sort); do
    rel=${r#reports/}
    grep -qF "]($rel)" reports/README.md || fail "reports/README.md does not index $rel"
done

# Every operation and variant the program lists is named in README.md
# (`{a,b}` alternatives expanded), so a new one cannot go undocumented.
RECAUDIT=${RECAUDIT:-./recaudit}
if test -x "$RECAUDIT"; then
    grep -oE '`[a-z0-9.{},]+`' README.md | tr -d '`' | awk '
        function expand(t,   i, j, pre, alts, post, n, a, k) {
            i = index(t, "{")
            if (i == 0) { print t; return }
            j = index(substr(t, i), "}") + i - 1
            pre = substr(t, 1, i - 1); alts = substr(t, i + 1, j - i - 1); post = substr(t, j + 1)
            n = split(alts, a, ",")
            for (k = 1; k <= n; k++) expand(pre a[k] post)
        }
        { expand($0) }' | sort -u >"$work/named"
    for kind in ops variants; do
        "$RECAUDIT" list --format csv "$kind" >"$work/list" 2>"$work/err" || {
            fail "recaudit list $kind failed: $(cat "$work/err")"
            continue
        }
        sed '1d; s/,.*//' "$work/list" | while read -r name; do
            grep -qxF "$name" "$work/named" || echo "$name"
        done >"$work/missing"
        test -s "$work/missing" && fail "README.md does not name the $kind $(tr '\n' ' ' <"$work/missing")"
    done
fi

if test "$failures" -ne 0; then
    echo "$failures failure(s)" >&2
    exit 1
fi
exit 0
