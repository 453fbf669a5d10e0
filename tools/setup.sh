#!/usr/bin/env bash
# Installs what kiln needs, builds it, and runs its main job on the embedded default (the CPU): the FP8
# study of timm_resnest on the shipped reduced-size checkpoint and photos. The report is written to
# study-timm_resnest/ (STUDY.md, study.json, charts).
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)" --target kiln

# --force: a second run replaces this script's own earlier report (a study removes only what a study made).
build/release/kiln study timm_resnest -o study-timm_resnest --force
