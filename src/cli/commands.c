/* The subcommand table: one row per cmd_<name>.c. */
#include <stddef.h>

#include "cli/cli.h"
#include "cli/commands.h"

const ra_command ra_commands[] = {
    {"gen", ra_cmd_gen, "write a case file (inputs, cotangents) for a shape, regime and seed"},
    {"inspect", ra_cmd_inspect, "show a .safetensors/.npy file: metadata, dtypes, shapes, ranges"},
    {"list", ra_cmd_list, "list what the suite knows: ops, regimes, ..."},
    {"run", ra_cmd_run, "run one kernel variant on a case file, write its outputs and gradients"},
    {"check", ra_cmd_check, "compare a result file with the certified reference; gates by variant"},
    {"audit", ra_cmd_audit, "generate a case and check every matching variant against its reference"},
    {"validate", ra_cmd_validate, "run variants over a suite grid and apply the gates (CI verdict)"},
    {"ref", ra_cmd_ref, "certified MPFR reference of a case (outputs, gradients, bits)"},
    {"gradcheck", ra_cmd_gradcheck, "prove gradients against high-precision finite differences"},
    {"bench", ra_cmd_bench, "kernel speed of variants on one case: ms, TFLOP/s, GB/s"},
    {"derive", ra_cmd_derive, "every closed-form gradient formula, shipped or published, against FD"},
    {"bench-ref", ra_cmd_bench_ref, "MPFR reference speed: op rate vs bare mpfr_fma, wall time"},
    {"study", ra_cmd_study, "error-growth studies: measure, fit and write a report under reports/"},
    {"pairs", ra_cmd_pairs, "pairwise covering-array suite rows of an op's feature matrix"},
    {NULL, NULL, NULL},
};
