#!/usr/bin/env bash
# Installs dependencies, builds kiln and runs every test. Usage: tools/test.sh [--sanitize]
#   --sanitize   also build and test under AddressSanitizer + UndefinedBehaviorSanitizer
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
jobs=$(nproc)

cmake --preset release
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"
build/release/kiln validate  # every families/*/manifest.toml
tools/fuzz.sh --seconds 15   # every fuzz target on its seed corpus; any finding fails

if [[ "${1:-}" == "--sanitize" ]]; then
  cmake --preset sanitize
  cmake --build --preset sanitize -j "$jobs"
  ctest --preset sanitize -j "$jobs"
fi
