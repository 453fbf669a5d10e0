#!/usr/bin/env bash
# Runs on the GPU machine (H200): times the same plans under each value of one environment switch of the
# CUDA backend (KILN_CUDA_VIEWS, KILN_CUDA_EARLY_LAUNCH, ...), the values alternating per plan so that drift
# on a shared machine shows, and prints one line per plan: the median latency at each value.
# Usage: tools/device/env_ab.sh VARIABLE VALUES PLAN...   e.g. env_ab.sh KILN_CUDA_VIEWS 1,0,1 a.kplan
# Needs what cuda_env.sh needs (`carry: [".carry"]` with .carry/bin). Writes $OUT/ab_<VARIABLE>.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
(( $# >= 3 )) || { echo "usage: $0 VARIABLE VALUES PLAN..." >&2; exit 2; }
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
variable=$1 values=${2//,/ }
shift 2
source tools/device/cuda_env.sh >/dev/null
report="$OUT/ab_$variable.txt"
for plan in "$@"; do
  line="$(basename "$plan"):"
  for value in $values; do
    json=$(mktemp)
    if env "$variable=$value" "$KILN" bench "$plan" --backend cuda --warmup 0.5s --duration 2s --json "$json" \
      >/dev/null 2>"$json.err"; then
      line+=" $variable=$value $(python3 -c 'import json, sys; print("%.4f ms" % json.load(open(sys.argv[1]))["latency"]["median_ms"])' "$json")"
    else
      line+=" $variable=$value failed ($(tail -1 "$json.err" | cut -c1-120))"
    fi
    rm -f "$json" "$json.err"
  done
  echo "$line" | tee -a "$report"
done
