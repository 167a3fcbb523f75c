#!/bin/sh
# gpu-sanitize.sh: compute-sanitizer on every CUDA variant at a small shape.
#
#   bench/gpu-sanitize.sh [RECAUDIT] [TOOLS]
#
# For each CUDA variant (`recaudit list variants 'gdn.cuda.*'`) and each
# tool (default: memcheck racecheck initcheck synccheck), runs the forward
# and backward of two small cases with grouped heads, h0 and a partial last
# chunk under compute-sanitizer, K = V = 64 and K = V = 128 (the chunked
# kernels' instance compiled for the production head), and prints one line
# per run with the tool's ERROR SUMMARY.  Exit status: 0 when every run
# reports 0 errors, 1 otherwise, 77 without compute-sanitizer or a GPU.  Variants that run in a
# child process are followed (--target-processes all).
set -u
recaudit=${1:-./recaudit}
tools=${2:-memcheck racecheck initcheck synccheck}
command -v compute-sanitizer >/dev/null 2>&1 || { echo "no compute-sanitizer: skipped"; exit 77; }
"$recaudit" --version | grep -q '1 device\|[0-9] devices' || { echo "no CUDA device: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-sanitize.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
variants=$("$recaudit" list --format csv variants 'gdn.cuda.*' | sed -n '2,$s/,.*//p')
test -n "$variants" || { echo "no CUDA variant registered"; exit 1; }
failed=0
for kv in 64 128; do
    input="$work/case$kv.safetensors"
    "$recaudit" gen --op gdn --shape B=1,T=100,Hk=1,Hv=2,K=$kv,V=$kv --dtype bf16 --h0 --seed 3 \
        -o "$input" || exit 1
    for v in $variants; do
        for tool in $tools; do
            log="$work/$v.$kv.$tool.log"
            compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 3 \
                "$recaudit" run --variant "$v" "$input" -o "$work/r.safetensors" >"$log" 2>&1
            rc=$?
            # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors, W
            # warnings)", the other tools with "ERROR SUMMARY: E errors".
            summary=$(grep -h -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1)
            printf '%-32s K=V=%-4s %-10s rc=%d  %s\n' "$v" "$kv" "$tool" "$rc" \
                "${summary:-(no summary)}"
            if test "$rc" -ne 0 || ! echo "$summary" | grep -q -E '[ (]0 errors'; then
                failed=1
                sed 's/^/    /' "$log" | head -n 40
            fi
        done
    done
done
exit $failed
