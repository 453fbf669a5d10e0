#!/usr/bin/env bash
# Runs on the GPU machine (H200): builds one plan per value of one cuda option (kiln build --cuda-option
# NAME=VALUE, the rest of the build as given after --), then times them with the values alternating so that
# drift on a shared machine shows, and prints one line: the median latency at each value, in the order
# given (a value given twice is built once and timed twice).
# Usage: tools/device/option_ab.sh NAME VALUES -- BUILD-ARGUMENTS...
#   e.g. option_ab.sh channel-views on,off,on -- yolov10 --checkpoint c/model.safetensors --precision fp16
# Needs what cuda_env.sh needs (`carry: [".carry"]` with .carry/bin). Writes $OUT/ab_<NAME>.txt and keeps
# the plans in $OUT/ab_<NAME>/.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
(( $# >= 4 )) && [[ $3 == "--" ]] || { echo "usage: $0 NAME VALUES -- BUILD-ARGUMENTS..." >&2; exit 2; }
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
name=$1 values=${2//,/ }
shift 3
source tools/device/cuda_env.sh >/dev/null
plans="$OUT/ab_$name"
mkdir -p "$plans"
report="$OUT/ab_$name.txt"
for value in $values; do
  plan="$plans/$value.kplan"
  [[ -f $plan ]] && continue
  "$KILN" build "$@" --backend cuda --cuda-option "$name=$value" -o "$plan" >"$plan.log" 2>&1 \
    || { echo "building with $name=$value failed: $(tail -1 "$plan.log" | cut -c1-160)" | tee -a "$report"; exit 1; }
done
line="$name:"
for value in $values; do
  json=$(mktemp)
  if "$KILN" bench "$plans/$value.kplan" --backend cuda --warmup 0.5s --duration 2s --json "$json" \
    >/dev/null 2>"$json.err"; then
    line+=" $value $(python3 -c 'import json, sys; print("%.4f ms" % json.load(open(sys.argv[1]))["latency"]["median_ms"])' "$json")"
  else
    line+=" $value failed ($(tail -1 "$json.err" | cut -c1-120))"
  fi
  rm -f "$json" "$json.err"
done
echo "$line" | tee -a "$report"
