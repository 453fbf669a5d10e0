#!/bin/sh
# kiln's fp32 and int8 plans beside ONNX Runtime's fp32 and static int8 (QDQ) models of the same checkpoint, on the
# CPU, in one run: the int8 model is quantized with the scales of kiln's calibration cache (tools/peers/qdq_model.py
# says what it holds), its output is checked against kiln's int8 output on the images of --photos, then all
# four are timed in interleaved rounds (each round times each once, in turn, so the machine's drift hits them
# alike) at each batch.
#
#   tools/peers/ort_int8_peer.sh [--ort DIR] [--kiln build/cpu/kiln] [--batches 1,8] [--threads 2] [--rounds 2] \
#       [--duration 3] [--photos tests/data/photos] [--quantize-residuals] [--recipe all] \
#       resnet50|resnest50d CHECKPOINT_DIR
#
# --quantize-residuals: kiln's int8 plans hold the residual stream in int8 codes (`kiln build
# --quantize-residuals`), as ONNX Runtime's model does with its quantized adds.
# --recipe: kiln's int8 recipe (default all: every convolution but the stem), e.g. 'include=*' to quantize
# the stem too; ONNX Runtime's model quantizes the convolutions kiln's build report lists.
# --ort: a folder where `npm install --ignore-scripts onnxruntime-node` ran (default: where node finds the
# package itself, e.g. through NODE_PATH or a global install). Needs node, /usr/bin/python3 with
# numpy and python3-onnx (Debian). CHECKPOINT_DIR: model.safetensors + config.json (tools/random_checkpoint.py).
# int8 is calibrated (max) on 8 of the photos, as tools/cpu_precisions.sh does.
set -eu
kiln=build/cpu/kiln batches=1,8 threads=2 rounds=2 duration=3 photos=tests/data/photos ort= residuals= recipe=all
while [ $# -gt 0 ]; do
  case "$1" in
    --kiln) kiln=$2; shift 2 ;;
    --ort) ort=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --photos) photos=$2; shift 2 ;;
    --quantize-residuals) residuals=--quantize-residuals; shift ;;
    --recipe) recipe=$2; shift 2 ;;
    *) break ;;
  esac
done
usage="usage: $0 [--ort DIR] [--kiln K] [--batches 1,8] [--threads T] [--rounds N] [--duration S] [--photos DIR] [--quantize-residuals] [--recipe R] resnet50|resnest50d CHECKPOINT_DIR"
[ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
arch=$1 checkpoint=$2
case "$arch" in resnet50) family=timm_resnet ;; resnest50d) family=timm_resnest ;; *) echo "$usage" >&2; exit 2 ;; esac
[ -z "$ort" ] || export NODE_PATH="$ort/node_modules"
node -e "require('onnxruntime-node')" 2>/dev/null ||
  { echo "$0: node cannot load onnxruntime-node; run \`npm install --ignore-scripts onnxruntime-node\` in a folder and give it with --ort" >&2; exit 2; }
here=$(dirname "$0")
family_dir=$here/../../families/$family
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT

# Plans (one per batch and precision, batch 1 always: the accuracy check runs it); the int8 ones share one
# calibration cache, written by the first.
int8="--precision int8 --calib $photos --images 8 --every 1 --calib-cache $work/calib.json $residuals"
for b in $(echo "1,$batches" | tr , '\n' | sort -nu); do
  "$kiln" build "$family_dir" --checkpoint "$checkpoint/model.safetensors" --precision fp32 --batch "$b" \
    -o "$work/fp32.b$b.kplan" >/dev/null
  # shellcheck disable=SC2086  # the quantization options are separate words
  "$kiln" build "$family_dir" --checkpoint "$checkpoint/model.safetensors" --batch "$b" --recipe "$recipe" $int8 \
    --json "$work/int8.b$b.build.json" -o "$work/int8.b$b.kplan" >/dev/null 2>"$work/int8.b$b.build.err" ||
    { cat "$work/int8.b$b.build.err" >&2; exit 1; }
done
/usr/bin/python3 "$here/qdq_model.py" "$arch" "$checkpoint" "$work/fp32.onnx"
set --
for f in "$photos"/*.jpg "$photos"/*.jpeg "$photos"/*.png "$photos"/*.webp; do [ ! -f "$f" ] || set -- "$@" --input "$f"; done
"$kiln" preprocess --config "$checkpoint/config.json" -o "$work/x.npy" "$@" >/dev/null
# The outputs ONNX Runtime quantizes and kiln does not (qdq_model.py says which) take the max of |x| over the photos.
quant="--int8 $work/int8.b1.build.json --calib-cache $work/calib.json"
# shellcheck disable=SC2086  # the options are separate words
/usr/bin/python3 "$here/qdq_model.py" "$arch" "$checkpoint" "$work/probe.onnx" $quant --output-amax probe
node "$here/ort_run.js" amax "$work/probe.onnx" "$work/x.npy" "$work/amax.json" --threads "$threads"
# shellcheck disable=SC2086
/usr/bin/python3 "$here/qdq_model.py" "$arch" "$checkpoint" "$work/int8.onnx" $quant --output-amax "$work/amax.json"

# Accuracy: every photo through each model, one at a time.
for p in fp32 int8; do
  "$kiln" run "$work/$p.b1.kplan" --input "$work/x.npy" --save-output "$work/kiln.$p.npy" >/dev/null
  node "$here/ort_run.js" run "$work/$p.onnx" "$work/x.npy" "$work/ort.$p.npy" --threads "$threads"
done
/usr/bin/python3 "$here/compare_outputs.py" "$work"

echo "$arch, $threads threads, $(date -u +%H:%M) UTC, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in $(echo "$batches" | tr , ' '); do
  for r in $(seq "$rounds"); do
    for p in fp32 int8; do
      "$kiln" bench "$work/$p.b$b.kplan" --threads "$threads" --warmup 0.5s --duration "${duration}s" \
        --json "$work/kiln.$p.b$b.$r.json" >/dev/null 2>"$work/kiln.$p.b$b.$r.err"
      node "$here/ort_run.js" bench "$work/$p.onnx" --batch "$b" --threads "$threads" --warmup 0.5 \
        --duration "$duration" --json "$work/ort.$p.b$b.$r.json" >/dev/null
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); oneDNN ISA: $(sed -n 's/.*ISA: //p' "$work/kiln.fp32.b$(echo "$batches" | cut -d, -f1).1.err" | head -1); $(node -e "console.log('onnxruntime-node ' + require('onnxruntime-node/package.json').version)")"
/usr/bin/python3 "$here/compare_outputs.py" "$work" --timings "$batches" "$rounds"
