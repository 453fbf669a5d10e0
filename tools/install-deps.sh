#!/usr/bin/env bash
# Installs what kiln needs to build and test on Debian 12 (idempotent: does nothing when all is there).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libcli11-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev libwebp-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev
  clang libclang-rt-14-dev llvm  # the fuzz preset: clang, libFuzzer and the sanitizers' symbolizer
  pybind11-dev python3-dev python3-numpy
  python3-venv  # venv with ensurepip (Debian keeps them apart): the Python wheel's test installs into one
  dataset-fashion-mnist  # Fashion-MNIST's IDX files in /usr/share/datasets/fashion-mnist (kiln dataset import-idx)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
