#!/usr/bin/env bash
# Runs on the GPU machine (H200): preprocessing on the GPU checked and timed.
#   1. cuda_backend_test's CudaPreprocess tests: the eval transform and the letterbox made on the device
#      equal the CPU path's bit for bit on every shipped photo;
#   2. pipeline_detector_engine_test: a detector on cuda (device letterbox) gives the outputs of the same
#      engine on the host-letterboxed batch; sdk_cuda_device_run_test on a fixture made here by
#      sdk_make_fixture: classify on cuda (device preprocessing) gives the logits of a host run on the
#      host-preprocessed input;
#   3. preprocess_bench on every shipped photo: decode, host and device eval transform, host and device
#      letterbox, ms per photo (JSON in $OUT/preprocess_bench.json).
# Needs `carry: [".carry/bin"]` with kiln, libkiln.so.0.1, cuda_backend_test, pipeline_detector_engine_test,
# sdk_cuda_device_run_test,
# sdk_make_fixture, preprocess_bench (built with -DKILN_BUILD_BENCHMARKS=ON) and the libraries the machine
# lacks, any of them xz-compressed (tools/device/cuda_env.sh unpacks them).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-preprocess-gpu
rm -rf "$WORK" && mkdir -p "$WORK/fixture"
BIN=.carry/bin
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
gtest_line() { grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?' "$1" | cut -d, -f1 | tr '\n' ' '; }
source tools/device/cuda_env.sh

timeout 300 "$BIN/cuda_backend_test" --gtest_filter='CudaPreprocess*' >"$OUT/preprocess_test.log" 2>&1
log "CudaPreprocess tests (rc $?): $(gtest_line "$OUT/preprocess_test.log")"
grep -E '^\[  FAILED  \]|Failure|Expected|Which is' "$OUT/preprocess_test.log" | head -10 | tee -a "$OUT/summary.txt"

timeout 300 "$BIN/pipeline_detector_engine_test" >"$OUT/detector_test.log" 2>&1
log "pipeline_detector_engine_test (rc $?): $(gtest_line "$OUT/detector_test.log")"
grep -E '^\[  FAILED  \]|Failure|Expected|Which is' "$OUT/detector_test.log" | head -10 | tee -a "$OUT/summary.txt"

"$BIN/sdk_make_fixture" "$WORK/fixture" tests/data >"$OUT/fixture.log" 2>&1 \
  || log "fixture failed: $(tail -2 "$OUT/fixture.log")"
KILN_SDK_FIXTURE_DIR=$WORK/fixture timeout 300 "$BIN/sdk_cuda_device_run_test" >"$OUT/sdk_test.log" 2>&1
log "sdk_cuda_device_run_test (rc $?): $(gtest_line "$OUT/sdk_test.log")"
grep -E '^\[  FAILED  \]|Failure|Expected|Which is' "$OUT/sdk_test.log" | head -10 | tee -a "$OUT/summary.txt"

mapfile -t photos < <(ls tests/data/photos/*.jpg tests/data/photos/*.png)
timeout 200 "$BIN/preprocess_bench" "${photos[@]}" --size 224 --letterbox 640 --reps 30 >"$OUT/preprocess_bench.json" \
  2>"$OUT/bench.log" || log "preprocess_bench failed: $(tail -2 "$OUT/bench.log")"
python3 - "$OUT/preprocess_bench.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, statistics, sys
rows = json.load(open(sys.argv[1]))["photos"]
print("| photo | pixels | decode ms | eval host ms | eval device ms | letterbox host ms | letterbox device ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    print(f"| {r['photo'].split('/')[-1]} | {r['width']}x{r['height']} | {r['decode_ms']:.2f} | {r['host_eval_ms']:.2f} "
          f"| {r['device_eval_ms']:.3f} | {r['host_letterbox_ms']:.2f} | {r['device_letterbox_ms']:.3f} |")
for key in ("decode_ms", "host_eval_ms", "device_eval_ms", "host_letterbox_ms", "device_letterbox_ms"):
    print(f"median {key}: {statistics.median(r[key] for r in rows):.3f}")
PY
(cd "$OUT" && tar czf logs.tgz --ignore-failed-read fixture.log bench.log gpu.txt 2>/dev/null && rm -f fixture.log bench.log gpu.txt)
