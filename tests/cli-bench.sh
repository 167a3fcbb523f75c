#!/bin/sh
# CLI: recaudit bench on CPU variants at a small shape: the table's columns
# and rows, --fwd-only, --json, and bad usage exiting 2; --sm-clock's usage,
# its refusal without a device, and with one its rows.
. "${top_srcdir:-.}/tests/cli-lib.sh"

shape=B=1,T=70,Hk=1,Hv=2,K=8,V=8
expect_status 0 bench --variant 'gdn.cpu.f3[0-9]' --shape $shape --reps 3 --format csv --json b.json
expect_grep out '^variant,device,direction,reps,median_ms,min_ms,max_ms,TFLOP/s,GB/s,timer,note$' "csv header"
for d in fwd bwd fwd+bwd; do
    expect_grep out "^gdn\.cpu\.f32,cpu,$d,3,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*,variant,-\$" "row $d"
done
test "$(wc -l <out)" -eq 4 || fail "bench: expected a header and 3 rows"
expect_grep err '^bench: gdn B=1,T=70,Hk=1,Hv=2,K=8,V=8 regime=default dtype=f32 seed=0 reps=3 warmup=1$' "case line on stderr beside csv"
expect_grep b.json '"direction": "fwd+bwd"' "JSON rows"

# min <= median <= max in every row
awk -F, 'NR > 1 && !($6 <= $5 && $5 <= $7) { bad = 1 } END { exit bad }' out ||
    fail "bench: a row with median outside [min, max]"

expect_status 0 bench --variant gdn.cpu.f64 --shape $shape --reps 1 --warmup 0 --fwd-only
expect_grep out '^gdn\.cpu\.f64  *cpu  *fwd  *1 ' "fwd-only row"
grep -q 'bwd' out && fail "bench --fwd-only printed a backward row"
expect_grep out 'fwd-only reps=1 warmup=0$' "fwd-only case line"

# bad usage
expect_status 2 bench --shape $shape
expect_grep err 'variant GLOB is required' "missing --variant"
expect_status 2 bench --variant gdn.cpu.f32
expect_grep err 'shape is required' "missing --shape"
expect_status 2 bench --variant gdn.cpu.f32 --shape $shape --reps 0
expect_status 2 bench --variant gdn.cpu.f32 --shape $shape --warmup -1
expect_status 2 bench --variant 'nope.*' --shape $shape
expect_grep err "no variant matches 'nope.\*'" "no variant"
expect_status 0 bench --help
expect_grep out 'B\*T\*Hv\*(2C(3K+2V) + 6KV + C^2/3)' "help states the FLOP formula"

# --sm-clock: no variant, a bounded length, and a device to probe
expect_status 2 bench --sm-clock --variant gdn.cpu.f32
expect_grep err 'sm-clock times no variant' "--sm-clock with --variant"
expect_status 2 bench --sm-clock --reps 3
expect_grep err 'takes only --clock-ms, --format and --json' "--sm-clock with --reps"
expect_status 2 bench --sm-clock --dtype bf16
expect_status 2 bench --variant gdn.cpu.f32 --shape $shape --clock-ms 50
expect_grep err 'clock-ms goes with --sm-clock' "--clock-ms without --sm-clock"
expect_status 2 bench --sm-clock --clock-ms 0
if "$RECAUDIT" --version | grep -q '[1-9] devices*'; then
    expect_status 0 bench --sm-clock --clock-ms 50 --format csv
    expect_grep out '^load,sm_mhz,min_mhz,max_mhz,blocks,ms,timer_ms,flop_per_sm_cycle$' "clock header"
    for l in ffma mma.tf32 mma.bf16; do
        expect_grep out "^$l,[0-9]*,[0-9]*,[0-9]*,[0-9]*,[0-9.e+-]*,[0-9.e+-]*,[0-9.e+-]*\$" "row $l"
    done
    # The blocks' %globaltimer spans agree with the launch's CUDA events
    # (independent clocks), min <= median <= max, and FFMA stays within
    # sm_90's 128 fp32 lanes per SM (256 flop a cycle).
    awk -F, 'NR > 1 && !($3 <= $2 && $2 <= $4 && $7 > 0.8 * $6 && $7 <= 1.05 * $6) { bad = 1 }
             $1 == "ffma" && !($8 > 0 && $8 <= 256) { bad = 1 } END { exit bad }' out ||
        fail "bench --sm-clock: inconsistent row: $(cat out)"
else
    expect_status 2 bench --sm-clock --clock-ms 50
    expect_grep err 'no CUDA device\|has no CUDA' "--sm-clock without a device"
fi
finish
