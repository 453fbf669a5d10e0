#!/usr/bin/env bash
# Runs on the GPU machine: kiln's FP8 simulation against PyTorch fake quantization of the same scales
# on timm's own modules (tools/goldens/fp8_fake_quant.py), for the committed reduced models and for
# full-size resnest50d (random weights, BN statistics re-estimated on the photos).
#
# Reduced models use the committed calibration caches (tests/data/golden/MODEL/fp8_calibration.json),
# so the scales are those CI builds with; the fake-quantized logits they give are written to
# $WORK/fp8_goldens/MODEL/fp8_RECIPE_fake_quant.npy for committing. kiln's plans are built with
# --fp8-fallback fp32, matching the script's float32 for every non-FP8 layer.
#
# Usage: tools/device/fp8_check.sh [--full]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
WORK=/tmp/kiln-fp8
rm -rf "$WORK" && mkdir -p "$WORK/fp8_goldens"
KILN=$(tools/device/build.sh "$WORK/cmake.log") || exit 1
log() { echo "== $*" | tee -a "$OUT/fp8_summary.txt"; }

family_of() { case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; esac; }

# check MODEL_DIR NAME RECIPE [build flags...]: build, run kiln, fake-quantize in PyTorch, compare.
check() {
  local dir=$1 name=$2 recipe=$3
  shift 3
  local family plan="$WORK/$name.$recipe.kplan" report="$WORK/$name.$recipe.json"
  family=$(family_of "$name")
  "$KILN" build "$family" --checkpoint "$dir/model.safetensors" --precision fp8 --recipe "$recipe" \
    --fp8-fallback fp32 --json "$report" -o "$plan" "$@" >"$WORK/$name.$recipe.build.log" 2>&1 \
    || { log "$name $recipe: kiln build failed"; tail -5 "$WORK/$name.$recipe.build.log"; return; }
  "$KILN" run "$plan" --input "$dir/input.npy" --save-output "$WORK/$name.$recipe.kiln.npy" --topk 1 \
    >/dev/null 2>&1 || { log "$name $recipe: kiln run failed"; return; }
  mkdir -p "$WORK/fp8_goldens/$name"
  local fake="$WORK/fp8_goldens/$name/fp8_${recipe}_fake_quant.npy"
  # On the CPU: the GPU's convolutions sum in other orders and flip E4M3 roundings (see the goldens' README).
  PYTHONUNBUFFERED=1 python3 tools/goldens/fp8_fake_quant.py --golden "$dir" --report "$report" --out "$fake" \
    --device cpu 2>&1 | tail -1
  local vs_fake vs_fp32
  vs_fake=$(python3 tools/goldens/compare.py "$WORK/$name.$recipe.kiln.npy" "$fake" --tol 3e-2 2>&1 | grep -E "^\|\|y|^OK|^MISMATCH" | tr '\n' ' ')
  vs_fp32=$(python3 tools/goldens/compare.py "$fake" "$dir/logits.npy" --tol 1 2>&1 | grep -E "^\|\|y" | tr '\n' ' ')
  log "$name $recipe: kiln vs PyTorch fake-quant: $vs_fake | fake-quant vs fp64: $vs_fp32"
}

for name in resnest_tiny resnest_tiny_4s2x resnet_tiny; do
  dir=tests/data/golden/$name
  for recipe in all nose; do
    check "$dir" "$name" "$recipe" --calib-cache "$dir/fp8_calibration.json"
  done
done

if [[ "${1:-}" == "--full" ]]; then
  PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" \
    --models resnest50d --skip-preprocess --device cuda >"$WORK/goldens_full.log" 2>&1 || tail -5 "$WORK/goldens_full.log"
  dir="$WORK/goldens/resnest50d"
  for recipe in all nose-L1; do
    check "$dir" resnest50d "$recipe" --calib tests/data/photos --images 4 --every 4
  done
  # The checkpoint travels back as fp16 in parts ($OUT takes files of 16 MiB at most).
  python3 - "$dir" "$WORK/resnest50d_f16.safetensors" <<'PY'
import sys, torch
from safetensors.torch import load_file, save_file
state = load_file(sys.argv[1] + "/model.safetensors")
save_file({k: (v.half() if v.is_floating_point() else v) for k, v in state.items()}, sys.argv[2])
PY
  split -b 15M -d "$WORK/resnest50d_f16.safetensors" "$OUT/resnest50d_f16.part"
  cp "$dir/config.json" "$OUT/resnest50d_config.json"
fi
# $OUT takes 8 files at most: the fake-quantized logits travel as one archive.
tar -C "$WORK/fp8_goldens" -czf "$OUT/fp8_goldens.tgz" .
echo "===== fp8 summary ====="
cat "$OUT/fp8_summary.txt"
