#!/usr/bin/env bash
# Run by without_cuda_test.sh inside a mount namespace of its own (unshare --mount): hides the CUDA
# toolkit's folder under an empty tmpfs, so that the installed plugin cannot find the CUDA libraries, as on
# a machine without CUDA; then the installed kiln and Python module build and run every family on the CPU,
# and the cuda backend is refused in one line naming the library that is missing.
#   cuda_hidden_checks.sh PREFIX CUDA_DIR SOURCE_DIR PYTHON
set -euo pipefail
prefix=$1 cuda_dir=$2 source=$3 python=$4
fail() { echo "FAILED (CUDA hidden): $*"; exit 1; }
mount -t tmpfs -o size=1m kiln-no-cuda "$cuda_dir"
[[ -z $(ls -A "$cuda_dir") ]] || fail "$cuda_dir is still visible"
kiln=$prefix/bin/kiln work=$(mktemp -d)
cd "$work"  # a folder without families/: the installed manifests are used
trap 'rm -rf "$work"' EXIT
missing='libcu[A-Za-z]*\.so\.[0-9]+: cannot open shared object file: No such file or directory'

version=$("$kiln" --version) || fail "kiln --version failed"
echo "$version"
grep -Eq "^cuda: the cuda backend cannot be loaded from .*libkiln_cuda\.so\.[0-9.]+: $missing$" <<<"$version" \
  || fail "--version does not name the missing CUDA library"

photo=$source/tests/data/photos/dog.jpg golden=$source/tests/data/golden
for entry in timm_resnest:resnest_tiny timm_resnet:resnet_tiny timm_efficientnet:efficientnet_tiny yolov10:yolov10n; do
  family=${entry%%:*} checkpoint=$golden/${entry#*:}/model.safetensors plan=$work/${entry#*:}.kplan
  "$kiln" build "$family" --checkpoint "$checkpoint" -o "$plan" --backend cpu >"$work/build.txt" 2>&1 \
    || fail "$family: build on the CPU failed: $(tail -1 "$work/build.txt")"
  "$kiln" run "$plan" --input "$photo" --backend cpu >"$work/run.txt" 2>&1 \
    || fail "$family: run on the CPU failed: $(tail -1 "$work/run.txt")"
  echo "$family: built and ran on the CPU ($(head -1 "$work/run.txt"))"
  if "$kiln" run "$plan" --input "$photo" --backend cuda >"$work/cuda.txt" 2>&1; then fail "$family ran on cuda"; fi
  [[ $(wc -l <"$work/cuda.txt") == 1 ]] || fail "$family: not one line: $(cat "$work/cuda.txt")"
  grep -Eq "^kiln: error: the cuda backend cannot be loaded from .*: $missing$" "$work/cuda.txt" \
    || fail "$family: --backend cuda said: $(cat "$work/cuda.txt")"
done
cat "$work/cuda.txt"

module=$(find "$prefix" -name '_kiln*.so' | head -n1)
[[ -n $module ]] || { echo "(no Python module in this build)"; exit 0; }
PYTHONPATH=$(dirname "$(dirname "$module")") "$python" - "$work/resnet_tiny.kplan" "$photo" <<'PY'
import sys
import kiln
plan, photo = sys.argv[1:3]
assert "cuda" in kiln.backends(), kiln.backends()  # installed, though it cannot load here
top = kiln.load(plan, backend="cpu").classify(open(photo, "rb").read(), top_k=1)
try:
    kiln.load(plan, backend="cuda")
    raise SystemExit("the cuda backend loaded without CUDA")
except kiln.Error as error:
    assert "cannot be loaded" in str(error) and "cannot open shared object file" in str(error), error
    print(f"python: cpu top-1 {top[0]['class']}; cuda refused: {error}")
PY
