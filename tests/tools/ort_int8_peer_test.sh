#!/bin/sh
# tools/peers on a full-size ResNet-50 with random weights: ONNX Runtime's fp32 model must be kiln's fp32
# network and its int8 (QDQ) model kiln's int8 quantization (compare_outputs.py's bounds), and the timing
# tables must come out. Skipped (77) where node, onnxruntime-node, numpy or python3-onnx is missing.
#   ort_int8_peer_test.sh KILN SOURCE_DIR
set -eu
kiln=$1 src=$2
if ! command -v node >/dev/null || ! node -e "require('onnxruntime-node')" 2>/dev/null; then
  echo "skipped: node cannot load onnxruntime-node (npm install --ignore-scripts onnxruntime-node, then NODE_PATH)"
  exit 77
fi
/usr/bin/python3 -c "import numpy, onnx" 2>/dev/null || { echo "skipped: /usr/bin/python3 lacks numpy or onnx (python3-onnx)"; exit 77; }
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$src/tools/random_checkpoint.py" resnet50 "$work/resnet50"
"$src/tools/peers/ort_int8_peer.sh" --kiln "$kiln" --batches 1 --rounds 1 --duration 0.2 \
  --photos "$src/tests/data/photos" resnet50 "$work/resnet50" >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; exit 1; }
cat "$work/out.txt"
grep -q "| 1 | ONNX Runtime | int8 |" "$work/out.txt"
grep -q "52 int8 convolutions" "$work/out.txt"
