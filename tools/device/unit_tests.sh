#!/usr/bin/env bash
# Runs on the GPU machine (H200): the carried gtest programs, each with an optional filter, and prints one
# line per program (passed / failed / skipped counts) and its failures.
# Usage: tools/device/unit_tests.sh PROGRAM[:FILTER] ...   e.g. cuda_backend_test 'backend_ops_test:*cuda*'
# Needs `carry: [".carry/bin"]` with the programs (built on the CI machine: gtest is absent there), kiln's
# libraries and the ones the machine lacks, any of them xz-compressed (tools/device/cuda_env.sh).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
# The programs read tests/data through the absolute path they were built with.
[[ -e /work/main ]] || { mkdir -p /work && ln -s "$PWD" /work/main; }
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
gtest_line() { grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?' "$1" | cut -d, -f1 | tr '\n' ' '; }
source tools/device/cuda_env.sh
# The CLI tests run kiln from the build folder they were built with: point it at the carried one.
if [[ -x .carry/bin/kiln && ! -e build/release/kiln ]]; then
  mkdir -p build/release && ln -s "$PWD/.carry/bin/kiln" build/release/kiln
fi
status=0
for spec in "$@"; do
  program=${spec%%:*} filter='*'
  [[ $spec == *:* ]] && filter=${spec#*:}
  timeout 400 ".carry/bin/$program" --gtest_filter="$filter" >"$OUT/$program.log" 2>&1
  rc=$?
  (( rc != 0 )) && status=1
  log "$program ($filter, rc $rc): $(gtest_line "$OUT/$program.log")"
  grep -E '^\[  FAILED  \]|Failure|Expected|Which is|error' "$OUT/$program.log" | head -20 | tee -a "$OUT/summary.txt"
done
exit $status
