# shellcheck shell=sh
# Helpers for the I/O regression tests (tests/regress-*.sh), sourced after cli-lib.sh.

# st_write FILE JSON: a safetensors file whose header is JSON (no padding),
# followed by whatever the caller appends.  The 8-byte little-endian length
# is written byte by byte with printf octal escapes (POSIX sh, no od/xxd).
st_write() {
    _n=$(printf '%s' "$2" | wc -c)
    _i=0
    {
        while test $_i -lt 8; do
            # shellcheck disable=SC2059
            printf "\\$(printf %03o $((_n % 256)))"
            _n=$((_n / 256))
            _i=$((_i + 1))
        done
        printf '%s' "$2"
    } >"$1"
}

# tiny_case FILE [SEED]: a small gdn case with cotangents.
tiny_case() {
    "$RECAUDIT" gen --op gdn --shape B=1,T=8,Hk=1,Hv=1,K=4,V=4 --seed "${2:-1}" -o "$1" >/dev/null ||
        fail "gen $1"
}

# with_timeout SECONDS CMD...: runs CMD, killed after SECONDS (exit 124),
# so that a regression to a hang fails the test instead of stalling make check.
with_timeout() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$@"
    else
        shift
        "$@"
    fi
}
