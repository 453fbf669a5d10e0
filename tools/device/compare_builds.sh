#!/usr/bin/env bash
# Runs on the GPU machine (H200): two kiln binaries side by side in one call, to show a change kept the
# CUDA backend's output and speed. For each full-size model (random weights made by timm here), precision
# and batch, both binaries build their own plan, run it on the same input (outputs compared with each
# other and, for fp16, with timm's float64 logits) and are benchmarked in interleaved rounds
# (`kiln bench`: device events around CUDA-graph replays), so clock drift hits both alike.
#
# Usage: tools/device/compare_builds.sh [--models resnest50d,resnet50] [--precisions fp16,fp8]
#                                       [--batches 1,32] [--rounds 3] [--fp8-recipe all]
# Needs `carry: [".carry"]` holding .carry/bin/kiln (the new binary), .carry/bin/kiln_baseline (the old
# one) and the libraries the machine lacks (tools/device/bench_cuda.sh's header says which).
# fp16 plans are built with a tactic cache per binary, so each binary chooses its own tactics. FP8
# builds time runtime-compiled cuDNN engines for minutes, so the baseline's FP8 build reuses the tactic
# cache the new binary filled: the FP8 rows compare the engines, not the tactic search.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-compare
rm -rf "$WORK" && mkdir -p "$WORK"
models="resnest50d resnet50" precisions="fp16 fp8" batches="1 32" rounds=3 recipe=all
while (( $# > 0 )); do
  case "$1" in
    --models) models="${2//,/ }"; shift ;;
    --precisions) precisions="${2//,/ }"; shift ;;
    --batches) batches="${2//,/ }"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --fp8-recipe) recipe="$2"; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
log() { echo "$*" | tee -a "$OUT/summary.txt"; }

source tools/device/cuda_env.sh
BASELINE=.carry/bin/kiln_baseline
[[ -x "$BASELINE" ]] || { echo "no $BASELINE"; exit 1; }
log "== new: $($KILN --version | head -1); baseline: $($BASELINE --version | head -1)"
start=$(date +%s)
PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" \
  --models "$(echo $models | tr ' ' ',')" --skip-preprocess --device cuda >"$OUT/goldens.log" 2>&1 \
  || tail -5 "$OUT/goldens.log"
log "full-size checkpoints: $(( $(date +%s) - start )) s"

family_of() { case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; esac; }

# build BINARY TAG MODEL PRECISION BATCH: prints the plan's path (empty on failure).
build() {
  local binary=$1 tag=$2 model=$3 precision=$4 batch=$5
  local plan="$WORK/$model.$precision.b$batch.$tag.kplan" cache="$WORK/tactics.$tag.txt"
  local args=(build "$(family_of "$model")" --checkpoint "$WORK/goldens/$model/model.safetensors"
              --precision "$precision" --batch "$batch" --backend cuda -o "$plan")
  [[ $precision == fp8 ]] && { cache="$WORK/tactics.fp8.txt"; args+=(--recipe "$recipe" --calib tests/data/photos --every 2); }
  local begin=$(date +%s)
  "$binary" "${args[@]}" --tactic-cache "$cache" >>"$OUT/build.log" 2>&1 \
    || { echo "  $tag $model $precision b$batch: build failed: $(tail -1 "$OUT/build.log")" | tee -a "$OUT/summary.txt" >&2; return; }
  echo "  $tag $model $precision b$batch: built in $(( $(date +%s) - begin )) s" >>"$OUT/build.log"
  echo "$plan"
}

# median_of JSON: the bench report's median latency.
median_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["latency"]["median_ms"])' "$1"; }

printf '%-11s %-5s %-3s %-12s %-12s %-7s %s\n' model prec b "new ms" "base ms" base/new "outputs" | tee -a "$OUT/summary.txt"
for model in $models; do
  [[ -f "$WORK/goldens/$model/model.safetensors" ]] || { log "  $model: no checkpoint"; continue; }
  for precision in $precisions; do
    for batch in $batches; do
      new_plan=$(build "$KILN" new "$model" "$precision" "$batch")
      base_plan=$(build "$BASELINE" base "$model" "$precision" "$batch")
      [[ -n "$new_plan" && -n "$base_plan" ]] || continue
      # Outputs: the same input through both binaries' plans (batch 1: the first photo's row).
      input="$WORK/goldens/$model/input.npy"
      python3 - "$input" "$batch" "$WORK/in.npy" <<'PY'
import numpy as np, sys
x = np.load(sys.argv[1]); b = int(sys.argv[2])
np.save(sys.argv[3], np.concatenate([x] * (b // len(x) + 1))[:b])
PY
      "$KILN" run "$new_plan" --backend cuda --input "$WORK/in.npy" --save-output "$WORK/y.new.npy" >>"$OUT/run.log" 2>&1
      "$BASELINE" run "$base_plan" --backend cuda --input "$WORK/in.npy" --save-output "$WORK/y.base.npy" >>"$OUT/run.log" 2>&1
      outputs=$(python3 - "$WORK/y.new.npy" "$WORK/y.base.npy" "$WORK/goldens/$model/logits.npy" "$batch" <<'PY'
import numpy as np, sys
try:
    new, base = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
    rel = np.linalg.norm(new - base) / np.linalg.norm(base)
    text = f"new vs base rel_l2 {rel:.1e}, top1 agree {np.mean(new.argmax(1) == base.argmax(1)):.2f}"
    ref = np.load(sys.argv[3]).astype(np.float64); n = min(len(ref), len(new))
    text += f"; new vs timm f64 {np.linalg.norm(new[:n] - ref[:n]) / np.linalg.norm(ref[:n]):.1e}"
    print(text + ("" if np.isfinite(new).all() else " NON-FINITE"))
except Exception as e:
    print(f"compare failed: {e}")
PY
)
      new_ms=() base_ms=()
      for ((r = 0; r < rounds; r++)); do
        "$KILN" bench "$new_plan" --backend cuda --warmup 1s --duration 2s --json "$WORK/bn.json" >>"$OUT/bench.log" 2>&1 \
          && new_ms+=("$(median_of "$WORK/bn.json")")
        "$BASELINE" bench "$base_plan" --backend cuda --warmup 1s --duration 2s --json "$WORK/bb.json" >>"$OUT/bench.log" 2>&1 \
          && base_ms+=("$(median_of "$WORK/bb.json")")
      done
      python3 - "$model" "$precision" "$batch" "${new_ms[*]:-}" "${base_ms[*]:-}" "$outputs" <<'PY' | tee -a "$OUT/summary.txt"
import statistics, sys
model, precision, batch, new, base, outputs = sys.argv[1:7]
new = [float(v) for v in new.split()]; base = [float(v) for v in base.split()]
if not new or not base:
    print(f"{model:11s} {precision:5s} {batch:3s} bench failed"); sys.exit()
n, b = statistics.median(new), statistics.median(base)
spread = lambda v: f"{min(v):.3f}-{max(v):.3f}"
print(f"{model:11s} {precision:5s} {batch:3s} {n:.3f} ({spread(new)}) {b:.3f} ({spread(base)}) {b / n:.3f}x  {outputs}")
PY
    done
  done
done
(cd "$OUT" && tar czf compare.tgz --exclude='*.tgz' --exclude=summary.txt ./* \
  && find . -mindepth 1 -maxdepth 1 ! -name '*.tgz' ! -name summary.txt -exec rm -rf {} +)
echo
echo "===== summary ====="
cat "$OUT/summary.txt"
