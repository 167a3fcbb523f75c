#!/bin/sh
# Plugin ABI: the example plugin (examples/plugin) passes validate --suite quick.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/plugin-lib.sh"
so=$(plugin_so examples/plugin libgdnexample) || exit $?

# Every ra_* symbol the example leaves undefined (the ABI it calls,
# ra_case_param_bool/double among them) is exported by the executable:
# that is where a plugin built against the installed header finds them.
if command -v nm >/dev/null 2>&1 && nm -D --defined-only "$RECAUDIT" >/dev/null 2>&1; then
    need=$(nm -D --undefined-only "$so" | awk '$2 ~ /^ra_/ {print $2}')
    have=$(nm -D --defined-only "$RECAUDIT" | awk '{print $NF}')
    for sym in ra_case_param_bool ra_case_param_double; do
        echo "$need" | grep -qx "$sym" || fail "the example does not call $sym"
    done
    for sym in $need; do
        echo "$have" | grep -qx "$sym" || fail "$sym is not exported by $RECAUDIT"
    done
fi

expect_status 0 list variants --plugin "$so" 'gdn.example.*'
expect_grep out "^gdn.example.f64 .* gdn .* cpu .* fwd,bwd,h0,gqa,tail .*$so\$" "listed with its plugin"

# Every gated row passes; the suite's l2norm rows are skipped (the example
# does not claim in-kernel normalisation), and say why.
if expect_status 0 validate --suite quick --plugin "$so" --variant 'gdn.example.*'; then
    expect_grep out '^[1-9][0-9]* passed, 0 failed, [1-9][0-9]* skipped$' "summary"
    expect_grep out '^gdn.example.f64 .* dk .* rel_rms .* pass$' "dk gated and passed"
    expect_grep out '^gdn.example.f64 .* skip$' "a skipped row"
fi
expect_status 0 validate --suite quick --plugin "$so" --variant 'gdn.example.*' --tap
expect_grep out '# SKIP no in-kernel L2 normalisation (capability l2norm)$' "skip reason in TAP"
finish
