#!/bin/sh
# regress_tmp_permissions: a rewritten output keeps the mode of the file it
# replaces (a 0600 result stayed 0600, not 0644); a new file gets
# 0666 & ~umask, as open(2) would give it; a failed write leaves nothing.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
mode() { ls -l "$1" | cut -c2-10; }
umask 022
tiny_case a.safetensors
test "$(mode a.safetensors)" = rw-r--r-- || fail "new file under umask 022: $(mode a.safetensors)"
chmod 600 a.safetensors
tiny_case a.safetensors 2
test "$(mode a.safetensors)" = rw------- || fail "0600 file rewritten as $(mode a.safetensors)"
chmod 640 a.safetensors
expect_status 0 run --variant gdn.cpu.f64 a.safetensors -o b.safetensors
chmod 604 b.safetensors
expect_status 0 run --variant gdn.cpu.f64 a.safetensors -o b.safetensors
test "$(mode b.safetensors)" = rw----r-- || fail "0604 result rewritten as $(mode b.safetensors)"
(umask 077 && tiny_case c.safetensors)
test "$(mode c.safetensors)" = rw------- || fail "new file under umask 077: $(mode c.safetensors)"
# A write that fails (directory missing) reports it and leaves no temporary.
expect_status 2 gen --op gdn --shape B=1,T=8,Hk=1,Hv=1,K=4,V=4 -o nodir/x.safetensors &&
    expect_grep err "cannot write 'nodir/x.safetensors'" "failed write reported"
left=$(ls -A | grep -v -e '\.safetensors$' -e '^out$' -e '^err$')
test -z "$left" || fail "files left behind: $left"
finish
