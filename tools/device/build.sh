#!/usr/bin/env bash
# Builds kiln on the GPU machine (no gtest, toml++ carried in .carry/include): prints the binary's path.
# Usage: KILN=$(tools/device/build.sh LOG) || exit 1
set -uo pipefail
cd "$(dirname "$0")/../.."
log=${1:-/dev/null}
cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF \
  -DKILN_TOMLPP_INCLUDE_DIR="$PWD/.carry/include" >"$log" 2>&1 \
  && cmake --build build/device -j "$(nproc)" --target kiln >>"$log" 2>&1 \
  || { tail -50 "$log" >&2; exit 1; }
echo "$PWD/build/device/kiln"
