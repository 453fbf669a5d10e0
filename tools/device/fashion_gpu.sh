#!/usr/bin/env bash
# Runs on the GPU machine (H200): trains the Fashion-MNIST classifiers with timm
# (tools/goldens/train_fashion_mnist.py: the reduced models kiln commits and the full-size ones), then
# builds kiln plans of each full-size model on the CUDA backend (fp32, fp16, FP8 `all`) and evaluates
# them on all 10k test images, so kiln's top-1 stands beside timm's for the same checkpoint.
#
# Usage: tools/device/fashion_gpu.sh [--data DIR] [--train-limit N] [--models a,b,...] [--deadline S]
#   --data         the four IDX files (.gz or .xz); default .carry/fashion
#   --train-limit  train on the first N training images (what travels to the machine is limited)
#   --deadline     seconds after which remaining kiln steps are skipped (default 540)
# Needs .carry/gpubin (kiln as kiln.xz and the libraries the machine lacks) and .carry/fashion.
# Writes $OUT/summary.txt, $OUT/train.log, $OUT/kiln_eval.json and $OUT/reduced.tar (the reduced models).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-fashion
rm -rf "$WORK" && mkdir -p "$WORK"
data=.carry/fashion train_limit="" deadline=540 models=""
while (( $# > 0 )); do
  case "$1" in
    --data) data=$2; shift ;;
    --train-limit) train_limit="--train-limit $2"; shift ;;
    --models) models="--models ${2//,/ }"; shift ;;
    --deadline) deadline=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
start=$(date +%s)
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(( $(date +%s) - start )); }

if [[ -f .carry/gpubin/kiln.xz ]]; then
  mkdir -p .carry/bin && cp .carry/gpubin/* .carry/bin/
  python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' \
    .carry/bin/kiln.xz .carry/bin/kiln && chmod +x .carry/bin/kiln && rm .carry/bin/kiln.xz
fi
source tools/device/cuda_env.sh

# shellcheck disable=SC2086 # word splitting of the optional arguments is meant
PYTHONUNBUFFERED=1 python3 tools/goldens/train_fashion_mnist.py --data "$data" --out "$WORK/models" \
  --workers 12 --test-shard "$WORK/test.tar" --calib-shard "$WORK/calib.tar" $train_limit $models 2>&1 | tee "$OUT/train.log" | grep -E "top-1|wrote|Error|error"
cp "$WORK/models/summary.json" "$OUT/train_summary.json" 2>/dev/null
log "training done at $(elapsed) s"
tar -C "$WORK/models" -cf "$OUT/reduced.tar" $(cd "$WORK/models" && ls -d *_tiny 2>/dev/null)

family_of() {
  case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; efficientnet*) echo timm_efficientnet ;; esac
}
# kiln eval of one plan on the whole test set; the fp32 plan is every variant's reference.
eval_plan() {
  local name=$1 variant=$2 plan=$3 ref=$4
  timeout 120 "$KILN" eval "$plan" --data "$WORK/test.tar" --reference "$ref" --backend cuda --strict-backend \
    --no-stress --json "$WORK/eval_${name}_${variant}.json" >"$WORK/eval_${name}_${variant}.log" 2>&1
  log "$name $variant: eval rc $? $(grep -iE 'top-1|agree' "$WORK/eval_${name}_${variant}.log" | tr '\n' ' ')"
}
# One build and eval; the fp32 plan of the same model is the reference of every variant.
build_and_eval() {
  local name=$1 variant=$2 dir="$WORK/models/$1" extra=()
  [[ -d $dir ]] || return 0
  if (( $(elapsed) > deadline )); then log "$name $variant: skipped (deadline)"; return 0; fi
  [[ $variant == fp8 ]] && extra=(--recipe all --calib "$WORK/calib.tar" --images 500 --every 1)
  local plan="$WORK/${name}_${variant}.kplan"
  timeout 150 "$KILN" build "$(family_of "$name")" --checkpoint "$dir/model.safetensors" --precision "$variant" \
    --backend cuda --strict-backend --batch 32 "${extra[@]}" -o "$plan" >"$WORK/build_${name}_${variant}.log" 2>&1
  local rc=$?
  log "$name $variant: build rc $rc at $(elapsed) s"
  (( rc == 0 )) || tail -3 "$WORK/build_${name}_${variant}.log" | tee -a "$OUT/summary.txt"
  [[ -f $plan ]] && eval_plan "$name" "$variant" "$plan" "$WORK/${name}_fp32.kplan"
}
full_models="resnet50_fashion resnest50d_fashion efficientnet_b0_fashion"
for variant in fp32 fp16; do for name in $full_models; do build_and_eval "$name" "$variant"; done; done
for name in $full_models; do build_and_eval "$name" fp8; done
python3 - "$WORK" "$OUT/kiln_eval.json" <<'EOF'
import glob, json, os, sys
work, out = sys.argv[1], sys.argv[2]
evals = {os.path.basename(p)[5:-5]: json.load(open(p)) for p in sorted(glob.glob(f"{work}/eval_*.json"))}
json.dump(evals, open(out, "w"), indent=1)
EOF
log "done at $(elapsed) s"
