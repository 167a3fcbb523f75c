#!/bin/sh
# gpu-sanitize.sh: compute-sanitizer on every CUDA variant at a small shape.
#
#   bench/gpu-sanitize.sh [RECAUDIT] [TOOLS]
#
# For each CUDA variant (`recaudit list variants 'gdn.cuda.*'`) and each
# tool (default: memcheck racecheck initcheck synccheck), runs the forward
# and backward of one small case with grouped heads, h0 and a partial last
# chunk under compute-sanitizer, and prints one line per run with the
# tool's ERROR SUMMARY.  Exit status: 0 when every run reports 0 errors, 1
# otherwise, 77 without compute-sanitizer or a GPU.  Variants that run in a
# child process are followed (--target-processes all).
set -u
recaudit=${1:-./recaudit}
tools=${2:-memcheck racecheck initcheck synccheck}
command -v compute-sanitizer >/dev/null 2>&1 || { echo "no compute-sanitizer: skipped"; exit 77; }
"$recaudit" --version | grep -q '1 device\|[0-9] devices' || { echo "no CUDA device: skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/recaudit-sanitize.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
shape=B=1,T=100,Hk=1,Hv=2,K=64,V=64
"$recaudit" gen --op gdn --shape $shape --dtype bf16 --h0 --seed 3 -o "$work/case.safetensors" || exit 1
variants=$("$recaudit" list --format csv variants 'gdn.cuda.*' | sed -n '2,$s/,.*//p')
test -n "$variants" || { echo "no CUDA variant registered"; exit 1; }
failed=0
for v in $variants; do
    for tool in $tools; do
        log="$work/$v.$tool.log"
        compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 3 \
            "$recaudit" run --variant "$v" "$work/case.safetensors" -o "$work/r.safetensors" >"$log" 2>&1
        rc=$?
        # racecheck ends with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)",
        # the other tools with "ERROR SUMMARY: E errors".
        summary=$(grep -h -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1)
        printf '%-32s %-10s rc=%d  %s\n' "$v" "$tool" "$rc" "${summary:-(no summary)}"
        if test "$rc" -ne 0 || ! echo "$summary" | grep -q -E '[ (]0 errors'; then
            failed=1
            sed 's/^/    /' "$log" | head -n 40
        fi
    done
done
exit $failed
