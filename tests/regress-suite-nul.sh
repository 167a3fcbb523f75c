#!/bin/sh
# regress_suite_nul: a NUL byte in a suite or gates file is refused with
# the file and line; C string handling used to end the text there, so the
# rows after it were silently dropped and the run passed.
. "${top_srcdir:-.}/tests/cli-lib.sh"
. "${top_srcdir:-.}/tests/regress-lib.sh"
hdr='op\tshape\tregime\tdtype\tdirection\tseed\tflags\n'
row='gdn\tB=1,T=8,Hk=1,Hv=1,K=4,V=4\tdefault\tf32\tfwd\t1\t-\n'
# shellcheck disable=SC2059
printf "# suite\n$hdr$row\000$row" >nul.tsv
expect_status 2 validate --variant gdn.cpu.f64 --suite ./nul.tsv &&
    expect_grep err "nul.tsv line 4: NUL byte" "suite NUL refused with its line"
# shellcheck disable=SC2059
printf "$hdr$row" >ok.tsv
gates=${top_srcdir:-.}/data/gates.tsv
{ cat "$gates" && printf '\000# trailing\n'; } >gates.tsv
n=$(($(wc -l <"$gates") + 1))
expect_status 2 validate --variant gdn.cpu.f64 --suite ./ok.tsv --gates gates.tsv &&
    expect_grep err "gates.tsv line $n: NUL byte" "gates NUL refused with its line"
finish
