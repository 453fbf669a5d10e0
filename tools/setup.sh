#!/usr/bin/env bash
# Installs what kiln needs, builds it, and runs its main job on the embedded default (the CPU):
# classify the shipped photos with the shipped reduced-size ResNeSt checkpoint.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)" --target kiln

golden=tests/data/golden/resnest_tiny
echo
echo "kiln run: a reduced-size ResNeSt with random weights (batch-norm statistics estimated on these photos),"
echo "so the classes are not meaningful; pass a real Hub checkpoint (timm/resnest50d.in1k) for real answers."
build/release/kiln run --family timm_resnest --checkpoint "$golden/model.safetensors" \
  --input tests/data/photos/dog.jpg tests/data/photos/kite.jpg tests/data/photos/giraffe.jpg --topk 3
