#!/usr/bin/env bash
# Runs on the GPU machine (H200): checks that `kiln study` and `kiln bench` time a plan the same way.
# A study of fp16 (and optionally FP8) variants of a full-size checkpoint on cuda, then `kiln bench` on the
# plans the study wrote; the two medians must agree within 2% (both are device events around graph
# replays; what differs is only the sample count and the machine's drift between the two runs).
#
# Usage: tools/device/study_vs_bench.sh [--models resnet50,resnest50d] [--variants fp16]
# Needs `carry: [".carry"]` (see bench_cuda.sh); with .carry/bin/engine_state_probe (benchmarks/, built with
# -DKILN_BUILD_BENCHMARKS=ON) it also times each plan on an engine made alone and one made after another.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-study-bench
rm -rf "$WORK" && mkdir -p "$WORK"
models="resnet50" variants="fp16"
while (( $# > 0 )); do
  case "$1" in
    --models) models="${2//,/ }"; shift ;;
    --variants) variants=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
source tools/device/cuda_env.sh
family_of() { case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; efficientnet*) echo timm_efficientnet ;; esac; }

PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" \
  --models "$(echo $models | tr ' ' ',')" --skip-preprocess --device cuda >"$OUT/goldens.log" 2>&1 || tail -5 "$OUT/goldens.log"
log "== study vs bench (same plan, cuda; both medians in ms)"
for name in $models; do
  study="$WORK/study-$name"
  "$KILN" study "$(family_of "$name")" --checkpoint "$WORK/goldens/$name/model.safetensors" --data tests/data/photos \
    --every 2 --backend cuda --variants "$variants" -o "$study" >"$OUT/study_$name.log" 2>&1 \
    || { log "  $name: study failed: $(tail -1 "$OUT/study_$name.log")"; continue; }
  # The study times a held-out image repeated, `kiln bench` seeded noise unless --input gives it that image:
  # both are timed, so an input-dependent difference (clocks, power) shows apart from the rest.
  image=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["timing_image"])' "$study/study.json")
  "$KILN" preprocess --family "$(family_of "$name")" --config "$WORK/goldens/$name/config.json" --input "$image" \
    -o "$WORK/timing-$name.npy" >>"$OUT/bench.log" 2>&1 || log "  $name: preprocess of $image failed"
  # Whether an engine made after another one (the study's fp32 reference) times differently from one made
  # alone (kiln bench): benchmarks/engine_state_probe, carried beside kiln.
  probe=.carry/bin/engine_state_probe
  if [[ -x $probe ]]; then
    "$KILN" build "$(family_of "$name")" --checkpoint "$WORK/goldens/$name/model.safetensors" --precision fp32 \
      --backend cuda -o "$WORK/$name.fp32.kplan" >>"$OUT/bench.log" 2>&1 || log "  $name: fp32 build failed"
    # One process per mode: what making the second thing changes persists in the process.
    for plan in "$study"/plans/*.kplan; do
      log "  $name $(basename "$plan" .kplan), engine states (engine_state_probe):"
      # (2026-12-03: a graph, a stream, a cuDNN or a cuBLASLt handle alone changed nothing; a second
      # program's layers did.) Whether layers of the same plan (the kernels already loaded) do too, and
      # whether loading every module at start (CUDA_MODULE_LOADING=EAGER) makes the engine alone as slow.
      for mode in engine profiling; do
        "$probe" "$plan" "$WORK/$name.fp32.kplan" 3 $mode 2>&1 | sed 's/^/      /' | tee -a "$OUT/summary.txt"
      done
      log "      (OTHER_PLAN = the plan itself:)"
      "$probe" "$plan" "$plan" 3 profiling 2>&1 | sed 's/^/      /' | tee -a "$OUT/summary.txt"
      log "      (CUDA_MODULE_LOADING=EAGER:)"
      CUDA_MODULE_LOADING=EAGER "$probe" "$plan" "$WORK/$name.fp32.kplan" 3 profiling 2>&1 | sed 's/^/      /' \
        | tee -a "$OUT/summary.txt"
    done
  fi
  for plan in "$study"/plans/*.kplan; do
    variant=$(basename "$plan" .kplan)
    # Noise twice: how far two bench processes on the same plan differ is the floor of the comparison.
    for input in noise image noise; do
      input_args=()
      [[ $input == image ]] && input_args=(--input "$WORK/timing-$name.npy")
      "$KILN" bench "$plan" --backend cuda --warmup 1s --duration 3s "${input_args[@]}" --json "$WORK/bench.json" \
        --verbose >"$WORK/bench_one.log" 2>&1 || { log "  $name $variant ($input): bench failed"; continue; }
      cat "$WORK/bench_one.log" >>"$OUT/bench.log"
      log "    bench compiled: $(grep -o 'tactics: .*' "$WORK/bench_one.log" | head -1)"
      python3 - "$study/study.json" "$WORK/bench.json" "$name" "$variant" <<'PY' | tee -a "$OUT/summary.txt"
import json, re, sys
study, bench, name, variant = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
slug = lambda s: re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_")
rows = [v for v in study["variants"] if slug(v["name"]) == variant or v["plan"] == variant + ".kplan"]
if not rows:
    print(f"  {name} {variant}: no study row"); sys.exit()
s, b = rows[0]["latency_ms"]["median"], bench["latency"]["median_ms"]
e2e = rows[0].get("end_to_end_ms", {}).get("median", 0)
verdict = "OK" if abs(s - b) / b <= 0.02 else "FAIL (> 2%)"
print(f"  {name} {rows[0]['name']:>6s} bench on {bench.get('input', '?')}: study {s:.4f}  bench {b:.4f}  "
      f"diff {100 * (s - b) / b:+.2f}%  {verdict}   (study end-to-end with copies {e2e:.4f}; study timed: "
      f"{study.get('timed_region', '?')} on {study.get('timing_image', '?')})")
PY
    done
  done
done
(cd "$OUT" && tar czf results.tgz --exclude=results.tgz --exclude=summary.txt ./* \
  && find . -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt -delete)
echo; echo "===== summary ====="; cat "$OUT/summary.txt"
