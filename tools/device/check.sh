#!/usr/bin/env bash
# Runs on the GPU machine (python3 with torch + timm there): builds kiln, makes golden data with timm,
# checks kiln against it and measures the preprocessing gap. Prints a short table last; full logs and
# the golden files go under $OUT.
#
# Usage: tools/device/check.sh [--full]     (--full adds full-size resnest50d / resnet50 / efficientnet_b0 checks)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-work
rm -rf "$WORK" && mkdir -p "$WORK"
full=0
[[ "${1:-}" == "--full" ]] && full=1

log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

KILN=$(tools/device/build.sh "$OUT/cmake.log") || exit 1

args=(--photos tests/data/photos --out "$WORK/goldens" --device cuda)
[[ $full == 1 ]] && args+=(--full)
PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py "${args[@]}" 2>&1 | tee "$OUT/goldens.log"

family_of() {
  case "$1" in
    resnest*) echo timm_resnest ;;
    resnet*) echo timm_resnet ;;
    efficientnet*) echo timm_efficientnet ;;
    *) echo unknown ;;
  esac
}

for dir in "$WORK"/goldens/*/; do
  name=$(basename "$dir")
  [[ -f "$dir/model.safetensors" ]] || continue
  family=$(family_of "$name")
  start=$(date +%s.%N)
  "$KILN" run --family "$family" --checkpoint "$dir/model.safetensors" --input "$dir/input.npy" \
    --save-output "$WORK/$name.y.npy" --topk 1 >"$OUT/run_$name.log" 2>&1 || { log "$name: kiln run failed"; tail -5 "$OUT/run_$name.log"; continue; }
  end=$(date +%s.%N)
  result=$(python3 tools/goldens/compare.py "$WORK/$name.y.npy" "$dir/logits.npy" --tol 1e-4 2>&1 | grep -E "^\|\|y|^OK|^MISMATCH|^FAIL" | tr '\n' ' ')
  log "$name ($family): $result  [kiln run $(python3 -c "print(f'{$end-$start:.1f}')") s]"
done

# Preprocessing: kiln's tensor against timm's own transform, per photo.
for dir in "$WORK"/goldens/preprocess/*/; do
  [[ -d "$dir" ]] || continue
  name=$(basename "$dir")
  PYTHONUNBUFFERED=1 python3 tools/device/compare_preprocess.py --kiln "$KILN" --photos tests/data/photos \
    --timm-dir "$dir" 2>&1 | tee -a "$OUT/preprocess.log" | tail -1 | sed "s/^/$name: /" | tee -a "$OUT/summary.txt"
done

# The small goldens travel back for committing (the full-size ones stay here).
tar -C "$WORK/goldens" -czf "$OUT/goldens.tgz" --exclude='*full*' --exclude='resnest50d' --exclude='resnet50' \
  --exclude='efficientnet_b0' . 2>/dev/null
echo
echo "===== summary ====="
cat "$OUT/summary.txt"
