#!/usr/bin/env bash
# Runs on the GPU machine: every GPU test, then writes one dated JSON record of what passed (the commit the
# carried programs were built at, the GPU, its driver, passed / failed / skipped per program, the family
# checks' verdicts). Copy the record from $OUT into tests/gpu_records/ so the repository keeps it; a
# change to GPU code names the record that covers it.
#
# Usage: tools/device/gpu_tests.sh [--families LIST] [--no-families] [PROGRAM[:FILTER] ...]
#   PROGRAM[:FILTER]  carried gtest programs (default: cuda_backend_test and backend_ops_test:*cuda*,
#                     whichever were carried)
#   --families LIST   the family checks of tools/device/families_gpu.sh (fp32 and fp16 plans on cuda against
#                     timm / the YOLOv10 authors' code) for these models (default resnet50,efficientnet_b0;
#                     yolov10 models need .carry/shared, see families_gpu.sh)
#   --no-families     the test programs only
# Needs `carry: [".carry/bin"]` with the programs, kiln and the libraries the machine lacks (cuda_env.sh);
# tools/device/pack.sh packs them, e.g. `tools/device/pack.sh cuda_backend_test backend_ops_test
# pipeline_detector_plan_test sdk_cuda_device_run_test sdk_cuda_concurrency_test sdk_make_fixture`.
# The SDK's programs (sdk_cuda_*) read the fixture sdk_make_fixture writes: carry sdk_make_fixture too and it
# is made here (the build's fixture folder is not part of the tree that travels).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
families=resnet50,efficientnet_b0 programs=()
while (( $# > 0 )); do
  case "$1" in
    --families) families=$2; shift ;;
    --no-families) families= ;;
    -*) echo "unknown option $1"; exit 2 ;;
    *) programs+=("$1") ;;
  esac
  shift
done
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
# The programs read tests/data through the absolute path they were built with.
[[ -e /work/main ]] || { mkdir -p /work && ln -s "$PWD" /work/main; }
source tools/device/cuda_env.sh
if [[ -x .carry/bin/kiln && ! -e build/release/kiln ]]; then
  mkdir -p build/release && ln -s "$PWD/.carry/bin/kiln" build/release/kiln
fi
if (( ${#programs[@]} == 0 )); then
  for default in cuda_backend_test 'backend_ops_test:*cuda*'; do
    [[ -x .carry/bin/${default%%:*} ]] && programs+=("$default")
  done
fi

if [[ " ${programs[*]} " == *" sdk_cuda_"* ]]; then
  if [[ -x .carry/bin/sdk_make_fixture ]]; then
    export KILN_SDK_FIXTURE_DIR=/tmp/kiln-sdk-fixture
    rm -rf "$KILN_SDK_FIXTURE_DIR" && mkdir -p "$KILN_SDK_FIXTURE_DIR"
    .carry/bin/sdk_make_fixture "$KILN_SDK_FIXTURE_DIR" tests/data >"$OUT/sdk_make_fixture.log" 2>&1 \
      || log "sdk fixture failed: $(tail -1 "$OUT/sdk_make_fixture.log")"
    # The concurrency test's ResNet plan, as the sdk.make_cuda_fixture test makes it.
    "$KILN" build timm_resnet --checkpoint tests/data/golden/resnet_tiny/model.safetensors --batch 2 \
      -o "$KILN_SDK_FIXTURE_DIR/resnet_tiny.kplan" >>"$OUT/sdk_make_fixture.log" 2>&1 \
      || log "sdk fixture failed: $(tail -1 "$OUT/sdk_make_fixture.log")"
  else
    log "sdk_make_fixture was not carried: the sdk_cuda_* programs will not find their fixture"
  fi
fi

record_args=()
for spec in "${programs[@]}"; do
  program=${spec%%:*} filter='*'
  [[ $spec == *:* ]] && filter=${spec#*:}
  report="$OUT/$program.gtest.json"
  timeout 400 ".carry/bin/$program" --gtest_filter="$filter" --gtest_output="json:$report" >"$OUT/$program.log" 2>&1
  record_args+=(--program "$program:$filter:$report:$?")
done
if [[ -n $families ]]; then
  OUT="$OUT/families" tools/device/families_gpu.sh --models "$families" --no-bench >/dev/null 2>&1
  record_args+=(--families "$OUT/families/summary.txt")
fi
commit=$("$KILN" --version | sed -n 's/.*(commit \([^)]*\)).*/\1/p')
record="$OUT/$(date -u +%Y-%m-%d)-${commit:-unknown}.json"
python3 tools/device/gpu_test_record.py --out "$record" --kiln-version "$("$KILN" --version | head -1)" \
  --gpu "$(head -1 "$OUT/gpu.txt" | cut -d, -f1,2)" "${record_args[@]}" | tee -a "$OUT/summary.txt"
status=${PIPESTATUS[0]}
# Only a few files come back from the GPU machine: the logs travel as one archive beside the record.
(cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz --exclude="$(basename "$record")" --exclude=summary.txt ./* \
  && find . -mindepth 1 -maxdepth 1 ! -name logs.tgz ! -name "$(basename "$record")" ! -name summary.txt \
    -exec rm -rf {} +)
exit "$status"
