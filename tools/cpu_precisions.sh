#!/bin/sh
# fp32, fp16, bf16 and (with --calib) int8 plans of one checkpoint on the cpu backend, timed by `kiln bench` in interleaved
# rounds (each round times every precision once, in turn), so the machine's drift hits them alike; prints
# each round's medians, the median of rounds and its ratio to fp32, the fastest run and its ratio (the
# steadier figure on a loaded machine), and the load before and after.
#
#   tools/cpu_precisions.sh [--kiln build/cpu/kiln] [--rounds 3] [--threads 2] [--batch 1] \
#       [--calib IMAGES] FAMILY CHECKPOINT [NAME]
#
# --calib: also an int8 plan (--recipe all), calibrated on 8 of those images.
#
# e.g. tools/cpu_precisions.sh timm_resnest tests/data/trained/resnest_fashion_tiny/model.safetensors demo
set -eu
kiln=build/cpu/kiln rounds=3 threads=2 batch=1 duration=3s calib=
while [ $# -gt 0 ]; do
  case "$1" in
    --kiln) kiln=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --calib) calib=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "usage: $0 [--kiln K] [--rounds N] [--threads T] [--batch B] [--duration D] [--calib IMAGES] FAMILY CHECKPOINT [NAME]" >&2; exit 2; }
family=$1 checkpoint=$2 name=${3:-$(basename "$(dirname "$checkpoint")")}
family_dir=$(dirname "$0")/../families/$family  # this tree's manifest, whatever the working folder
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
precisions="fp32 fp16 bf16"
[ -z "$calib" ] || precisions="$precisions int8"
for p in $precisions; do
  quantization=
  [ "$p" != int8 ] || quantization="--recipe all --calib $calib --images 8 --every 1"
  # shellcheck disable=SC2086  # the quantization options are separate words
  "$kiln" build "$family_dir" --checkpoint "$checkpoint" --precision "$p" --batch "$batch" $quantization \
    -o "$work/$p.kplan" >/dev/null
done
echo "$name, batch $batch, $threads threads, $(date -u +%H:%M) UTC, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
  for p in $precisions; do
    "$kiln" bench "$work/$p.kplan" --threads "$threads" --warmup 0.5s --duration "$duration" \
      --json "$work/$p.$r.json" >/dev/null 2>"$work/$p.$r.err"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); oneDNN ISA: $(sed -n 's/.*ISA: //p' "$work/fp32.1.err" | head -1)"
python3 - "$work" "$rounds" $precisions <<'EOF'
import json, statistics, sys
work, rounds, precisions = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {p: [json.load(open(f"{work}/{p}.{r}.json")) for r in range(1, rounds + 1)] for p in precisions}
medians = {p: [j["latency"]["median_ms"] for j in runs[p]] for p in precisions}
# The fastest run of all rounds: what the plan takes when nothing preempts it, the steadier figure on a
# loaded machine.
fastest = {p: min(j["latency"]["min_ms"] for j in runs[p]) for p in precisions}
warned = {p: any(j["warnings"] for j in runs[p]) for p in precisions}
base, base_min = statistics.median(medians["fp32"]), fastest["fp32"]
print("| precision | round medians (ms) | median (ms) | vs fp32 | fastest run (ms) | vs fp32 | loaded-machine warning |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for p in precisions:
    m = statistics.median(medians[p])
    print(f"| {p} | {', '.join(f'{v:.3f}' for v in medians[p])} | {m:.3f} | {base / m:.2f}x | {fastest[p]:.3f} | "
          f"{base_min / fastest[p]:.2f}x | {'yes' if warned[p] else 'no'} |")
EOF
