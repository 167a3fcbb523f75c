#!/bin/sh
# CLI: recaudit gen writes reproducible case files with the documented layout.
. "${top_srcdir:-.}/tests/cli-lib.sh"

shape=B=1,T=64,Hk=1,Hv=2,K=16,V=16

# The done-when example; options in any order, both --opt=v and --opt v.
expect_status 0 gen --op gdn --shape $shape --dtype bf16 --seed 7 -o a.safetensors
expect_status 0 gen -o b.safetensors --seed=7 --dtype=bf16 --shape=$shape --op=gdn
cmp -s a.safetensors b.safetensors || fail "same arguments gave different bytes"
expect_status 0 gen --op gdn --shape $shape --dtype bf16 --seed 8 -o c.safetensors
cmp -s a.safetensors c.safetensors && fail "seeds 7 and 8 gave identical files"

# Documented layout (docs/gdn.md, src/core/gen_gdn.h): q, k [B,T,Hk,K] and
# v, do [B,T,Hv,V] in the requested dtype; g, beta [B,T,Hv] and dht
# [B,Hv,K,V] in f32; no h0 unless asked for.
expect_status 0 inspect --format csv a.safetensors
expect_grep out '^name,dtype,shape,min,max,mean_abs,nan,inf$' "csv header"
for row in 'q,bf16,"\[1, 64, 1, 16\]",' 'k,bf16,"\[1, 64, 1, 16\]",' \
    'v,bf16,"\[1, 64, 2, 16\]",' 'g,f32,"\[1, 64, 2\]",' 'beta,f32,"\[1, 64, 2\]",' \
    'do,bf16,"\[1, 64, 2, 16\]",' 'dht,f32,"\[1, 2, 16, 16\]",'; do
    expect_grep out "^$row.*,0,0\$" "tensor row $row (finite)"
done
test "$(wc -l <out)" -eq 8 || fail "expected exactly 7 tensors (q k v g beta do dht)"
expect_status 0 inspect a.safetensors
expect_grep out '^op: gdn$' "metadata op"
expect_grep out '^seed: 7$' "metadata seed"
expect_grep out '^regime: default$' "metadata regime"

# --h0 adds h0 [B,Hv,K,V] f32; --dtype f64 keeps every tensor f64.
expect_status 0 gen --op gdn --shape $shape --h0 --dtype f64 -o h.safetensors
expect_status 0 inspect --format csv h.safetensors
expect_grep out '^h0,f64,"\[1, 2, 16, 16\]",' "h0 row"
grep -c ',f64,' out | grep -qx 8 || fail "--dtype f64: all 8 tensors f64"

# --param scale=X records the case parameter; --no-dht leaves dht out;
# --fwd-only leaves every cotangent out (do and dht); the other tensors
# are the same bytes as without them (each from its own stream).
expect_status 0 gen --op gdn --shape $shape --param scale=0.3 --no-dht -o s.safetensors
expect_status 0 inspect s.safetensors
expect_grep out '^scale: 0.3$' "metadata scale"
grep -q '^dht ' out && fail "--no-dht wrote dht"
grep -q '^do ' out || fail "--no-dht dropped do"
expect_status 0 gen --op gdn --shape $shape --fwd-only -o f.safetensors
expect_status 0 inspect --format csv f.safetensors
grep -q -e '^do,' -e '^dht,' out && fail "--fwd-only wrote a cotangent"
test "$(wc -l <out)" -eq 6 || fail "--fwd-only: expected exactly 5 tensors (q k v g beta)"
expect_status 0 inspect --format csv a.safetensors
grep '^q,' out >q_all
expect_status 0 gen --op gdn --shape $shape --dtype bf16 --seed 7 --fwd-only -o f7.safetensors
expect_status 0 inspect --format csv f7.safetensors
grep '^q,' out | cmp -s - q_all || fail "--fwd-only changed q"
for bad in 0 -1 inf nan abc 1e999; do
    expect_status 2 gen --op gdn --shape $shape --param scale=$bad -o x.safetensors &&
        expect_grep err "scale='$bad' must be a finite number > 0" "scale=$bad refused"
done
expect_status 2 gen --op gdn --shape $shape --param gamma=1 -o x.safetensors &&
    expect_grep err "parameter 'gamma' is not one of op gdn's parameters" "unknown parameter"
expect_status 2 gen --op gdn --shape $shape --param scale -o x.safetensors &&
    expect_grep err "not KEY=VALUE" "parameter without a value"

# Bad usage: exit 2 and a message naming the problem; nothing written.
expect_status 2 gen --op gdn --shape B=1,T=64,Hk=1,Hv=2,K=16,V=x -o x.safetensors &&
    expect_grep err "V must be a positive integer" "malformed --shape names V"
expect_status 2 gen --op gdn --shape B=1,T=64,Hk=1,Hv=2,K=16 -o x.safetensors &&
    expect_grep err "missing V" "missing shape field named"
expect_status 2 gen --op gdn --shape B=1,T=64,Q=1,Hv=2,K=16,V=16 -o x.safetensors &&
    expect_grep err "unknown key 'Q'" "unknown shape key named"
expect_status 2 gen --op gdn --shape B=1,T=64,Hk=2,Hv=3,K=16,V=16 -o x.safetensors &&
    expect_grep err "not a multiple of Hk" "Hv/Hk"
expect_status 2 gen --op gdn --shape $shape && expect_grep err "missing -o" "missing -o"
expect_status 2 gen --shape $shape -o x.safetensors && expect_grep err "missing --op" "missing --op"
expect_status 2 gen --op gdn -o x.safetensors && expect_grep err "missing --shape" "no shape"
expect_status 2 gen --op gdn --shape $shape -o x.npy && expect_grep err "\.safetensors" ".npy refused"
expect_status 2 gen --op nope --shape $shape -o x.safetensors &&
    expect_grep err "unknown operation" "unknown op"
expect_status 2 gen --op gdn --shape $shape --dtype f8 -o x.safetensors &&
    expect_grep err "'f8'" "bad dtype named"
expect_status 2 gen --op gdn --shape $shape --regime nope -o x.safetensors &&
    expect_grep err "'nope'" "bad regime named"
expect_status 2 gen --op gdn --shape $shape --seed -3 -o x.safetensors
expect_status 2 gen --op gdn --shape $shape --h0=yes -o x.safetensors &&
    expect_grep err "'--h0' takes no value" "flag with a value"
expect_status 2 gen --op gdn --shape $shape -o x.safetensors stray &&
    expect_grep err "unexpected argument 'stray'" "stray argument"
test -e x.safetensors && fail "a refused gen left x.safetensors behind"

finish
