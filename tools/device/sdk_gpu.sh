#!/usr/bin/env bash
# Runs on the GPU machine (H200): what the SDK's device runs add to the network's CUDA-graph replay, and
# the SDK's cuda concurrency test. For each full-size model and batch it builds a cuda plan, takes `kiln
# bench`'s replay median (device events around 20 graph replays per sample), then times the C API's
# context_run_device (sdk_device_run_bench; target: adds under 5 us) and kiln's Python module on torch
# CUDA tensors (tools/device/sdk_overhead.py; target: adds under 20 us, output checked against the host
# run). Prints one table last; the JSON and logs go under $OUT in one archive.
#
# Usage: tools/device/sdk_gpu.sh [--models resnet50,resnest50d] [--batches 1,32] [--precision fp16]
#          [--duration 3] [--no-python] [--tests-only] [--dry-run]
#   --tests-only  the carried tests only (cuda_backend_test when carried, the SDK's CUDA tests, `kiln run`
#                 through libkiln.so on cuda against cpu-reference), no measurement
#   --dry-run     check what is carried and what this machine has, print the steps, run nothing
# Needs `carry: [".carry"]`. Built on the CI machine (cmake -DKILN_BUILD_BENCHMARKS=ON) and carried:
#   .carry/bin/{kiln, libkiln.so.0.1, sdk_device_run_bench, sdk_cuda_concurrency_test,
#     sdk_cuda_device_run_test} and the libraries the GPU machine lacks (see bench_cuda.sh; any may be .xz)
#   .carry/include/toml++ (only if the Python module must be built here, see below)
#   .carry/python/kiln/ (build/release/python/kiln): used when its extension was built for this machine's
#     python3; else the module is built here (cmake, pybind11 from pip) while the plans are made.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-sdk-gpu
models="resnet50" batches="1 32" precision=fp16 duration=3 python=1 dry=0 tests_only=0
while (( $# > 0 )); do
  case "$1" in
    --models) models="${2//,/ }"; shift ;;
    --batches) batches="${2//,/ }"; shift ;;
    --precision) precision=$2; shift ;;
    --duration) duration=$2; shift ;;
    --no-python) python=0 ;;
    --tests-only) tests_only=1 ;;
    --dry-run) dry=1 ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
family_of() { case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; esac; }
BIN=.carry/bin
ext_suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)

# What the run needs, present or not; returns nonzero when a carried binary is missing.
preflight() {
  local missing=0 name
  for name in kiln libkiln.so.0.1 sdk_device_run_bench sdk_cuda_concurrency_test sdk_cuda_device_run_test; do
    if [[ -e $BIN/$name || -e $BIN/$name.xz ]]; then
      echo "  carried: $BIN/$name $(du -h "$BIN/$name"* | head -1 | cut -f1)"
    else
      echo "  MISSING: $BIN/$name"; missing=1
    fi
  done
  echo "  python3: $(python3 --version 2>&1), extension suffix ${ext_suffix:-?}"
  if ls .carry/python/kiln/_kiln"$ext_suffix" >/dev/null 2>&1; then
    echo "  Python module: carried, built for this python3"
  elif [[ -d .carry/python-link ]]; then
    echo "  Python module: to be linked here from the carried archives (.carry/python-link)"
  else
    echo "  Python module: $(ls .carry/python/kiln/_kiln*.so 2>/dev/null || echo none) carried: to be built here"
  fi
  return $missing
}

if (( dry )); then
  echo "== preflight"; preflight; status=$?
  echo "== steps: concurrency fixture + tests; timm goldens of: $models"
  for name in $models; do
    for batch in $batches; do
      echo "  $name b$batch $precision: kiln build --backend cuda; kiln bench --json; sdk_device_run_bench" \
        "--replay-ms; $( ((python)) && echo 'sdk_overhead.py --replay-ms' || echo 'no python')"
    done
  done
  exit $status
fi

rm -rf "$WORK" && mkdir -p "$WORK"
log "== preflight"
preflight | tee -a "$OUT/summary.txt" || log "  (a carried binary is missing: its rows will say so)"
source tools/device/cuda_env.sh

# The Python module: the carried one when built for this python3, else built here in the background.
PYDIR="" python_build="" python_build_start=0
start_python_module() {
  (( python )) || return 0
  if ls .carry/python/kiln/_kiln"$ext_suffix" >/dev/null 2>&1; then PYDIR=$PWD/.carry/python; return 0; fi
  python_build_start=$SECONDS
  if [[ -d .carry/python-link ]]; then
    PYDIR=$PWD/build/sdk-python-link
    link_python_module >"$OUT/python_build.log" 2>&1 &
    python_build=$!
    return 0
  fi
  PYDIR=$PWD/build/sdk-python/python
  ( cmake -S . -B build/sdk-python -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF \
      -DKILN_TOMLPP_INCLUDE_DIR="$PWD/.carry/include" -DKILN_CUDNN_ROOT="$CUDNN_ROOT" \
      -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DPython_EXECUTABLE="$(command -v python3)" \
      -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" -DKILN_PYTHON=ON \
    && timeout 420 cmake --build build/sdk-python -j 12 --target kiln_python ) >"$OUT/python_build.log" 2>&1 &
  python_build=$!
}
# The module's own five files compiled for this python3 and linked with kiln's archives built on the CI
# machine (.carry/python-link: lib*.a, any may be .xz; the headers it needs beyond the tree in
# .carry/include): seconds, where building all of kiln here takes minutes.
link_python_module() {
  local dir=.carry/python-link obj=build/sdk-python-link/obj out=build/sdk-python-link/kiln f archives=() pids=()
  mkdir -p "$obj" "$out" && cp python/kiln/__init__.py "$out/"
  for f in "$dir"/*.xz; do
    [[ -f $f ]] || continue
    python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$f"
  done
  for f in module py_arrays py_build py_device_array py_engine; do
    g++ -std=c++20 -O3 -DNDEBUG -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -fopenmp \
      -DKILN_HAVE_CUDA=1 -DKILN_HAVE_ONEDNN=1 -DKILN_HAVE_WEBP=1 -DKILN_VERSION='"0.1.0"' \
      -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -I. -Iinclude -Isrc -isystem .carry/include \
      $(python3 -m pybind11 --includes) -isystem /usr/local/cuda/include -c "python/$f.cpp" -o "$obj/$f.o" &
    pids+=($!)
  done
  for f in "${pids[@]}"; do wait "$f" || return 1; done
  for f in kiln_sdk kiln_pipeline kiln_families kiln_lib kiln_cuda_kernels; do archives+=("$dir/lib$f.a"); done
  g++ -shared -fopenmp -o "$out/_kiln$ext_suffix" "$obj"/*.o "${archives[@]}" \
    .carry/bin/libjpeg.so.62 .carry/bin/libpng16.so.16 .carry/bin/libtomlplusplus.so.3 .carry/bin/libwebp.so.7 \
    .carry/bin/libdnnl.so.2 .carry/bin/libOpenCL.so.1 -lz \
    "$(cuda_library libcudart.so)" "$(cuda_library libcublasLt.so)" "$(cuda_library libcudnn.so)" \
    -L/usr/local/cuda/lib64 -lcudadevrt -lcudart_static -lrt -lpthread -ldl -Wl,-rpath,"$PWD/.carry/bin"
}
# The first NAME* among the CUDA wheels' libraries (cuda_env.sh's NV) and the toolkit's.
cuda_library() { ls "$NV"/*/lib/"$1"* /usr/local/cuda/lib64/"$1"* 2>/dev/null | head -1; }
# Nonzero when there is no module to import.
wait_python_module() {
  [[ -n $python_build ]] || return 0
  wait "$python_build" && { log "  Python module built here in $(( SECONDS - python_build_start )) s"; return 0; }
  log "  Python module build failed: $(grep -m1 -iE 'error|not found' "$OUT/python_build.log" | cut -c1-160)"
  return 1
}

# The library's CUDA tests, carried (gtest is absent here), on a fixture made here: the tiny ResNeSt
# plan and input of sdk.make_fixture and the tiny ResNet plan of sdk.make_cuda_fixture.
run_sdk_tests() {
  local fixture=$WORK/fixture test rc
  mkdir -p "$fixture"
  {
    "$KILN" build timm_resnet --checkpoint tests/data/golden/resnet_tiny/model.safetensors --batch 2 \
      -o "$fixture/resnet_tiny.kplan"
    "$KILN" build timm_resnest --checkpoint tests/data/golden/resnest_tiny/model.safetensors -o "$fixture/plan.kplan"
    python3 -c 'import numpy as np, sys; np.load(sys.argv[1]).astype(np.float32).tofile(sys.argv[2])' \
      tests/data/golden/resnest_tiny/input.npy "$fixture/input.f32"
  } >>"$OUT/tests.log" 2>&1
  for test in sdk_cuda_concurrency_test sdk_cuda_device_run_test; do
    [[ -f $BIN/$test ]] || { log "  $test: not carried"; continue; }
    chmod +x "$BIN/$test"
    KILN_SDK_FIXTURE_DIR=$fixture timeout 300 "$BIN/$test" >"$OUT/$test.log" 2>&1
    rc=$?
    log "  $test (rc $rc): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?' "$OUT/$test.log" \
      | cut -d, -f1 | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]|Failure|differs|what\(\)' "$OUT/$test.log" | head -10 | tee -a "$OUT/summary.txt"
  done
  check_cli_through_library "$fixture/plan.kplan"
}

# `kiln run` classifies through libkiln.so: the same top-5 on cuda (fp32 plan) as on cpu-reference.
check_cli_through_library() {
  local plan=$1 backend
  for backend in cuda cpu-reference; do
    "$KILN" run "$plan" --input tests/data/photos/dog.jpg --backend "$backend" --json "$WORK/run_$backend.json" \
      >>"$OUT/tests.log" 2>&1 || { log "  kiln run --backend $backend failed: $(tail -1 "$OUT/tests.log")"; return; }
  done
  log "  kiln run through $(ldd "$KILN" | grep -o 'libkiln.so[^ ]* => [^ ]*'): $(python3 - "$WORK" <<'PY'
import json, sys
top = {b: [e["class"] for e in json.load(open(f"{sys.argv[1]}/run_{b}.json"))["results"][0]["top"]]
       for b in ("cuda", "cpu-reference")}
print("top-5 cuda", top["cuda"], "cpu-reference", top["cpu-reference"],
      "SAME" if top["cuda"] == top["cpu-reference"] else "DIFFERENT")
PY
)"
}

replay_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["latency"]["median_ms"])' "$1"; }

# build NAME BATCH: the cuda plan; kiln bench's replay; the C API's device run.
measure_c() {
  local name=$1 batch=$2 tag=$1_b$2 plan=$WORK/$1.$precision.b$2.kplan replay
  "$KILN" build "$(family_of "$name")" --checkpoint "$WORK/goldens/$name/model.safetensors" --precision "$precision" \
    --batch "$batch" --backend cuda --tactic-cache "$WORK/tactics.txt" -o "$plan" >>"$OUT/build.log" 2>&1 \
    || { log "  $tag: kiln build failed: $(tail -1 "$OUT/build.log")"; return; }
  "$KILN" bench "$plan" --backend cuda --warmup 1s --duration "${duration}s" --json "$OUT/bench_$tag.json" \
    >>"$OUT/bench.log" 2>&1 || { log "  $tag: kiln bench failed: $(tail -1 "$OUT/bench.log")"; return; }
  replay=$(replay_of "$OUT/bench_$tag.json")
  [[ -f $BIN/sdk_device_run_bench ]] || { log "  $tag: sdk_device_run_bench not carried"; return; }
  chmod +x "$BIN/sdk_device_run_bench"
  "$BIN/sdk_device_run_bench" "$plan" --replay-ms "$replay" --duration "$duration" >"$OUT/c_$tag.json" \
    2>>"$OUT/bench.log" || log "  $tag: sdk_device_run_bench failed: $(tail -1 "$OUT/bench.log")"
}

measure_python() {
  local name=$1 batch=$2 tag=$1_b$2 plan=$WORK/$1.$precision.b$2.kplan
  [[ -f $plan && -f $OUT/bench_$tag.json ]] || return
  PYTHONUNBUFFERED=1 PYTHONPATH=$PYDIR python3 tools/device/sdk_overhead.py "$plan" \
    --replay-ms "$(replay_of "$OUT/bench_$tag.json")" --duration "$duration" \
    --json "$OUT/py_$tag.json" >>"$OUT/python.log" 2>&1 \
    || log "  $tag: sdk_overhead.py rc $?: $(grep -m1 -E 'sdk_overhead:|Error' "$OUT/python.log" | cut -c1-160)"
}

(( tests_only )) || start_python_module
log "== SDK CUDA tests (carried gtest binaries)"
run_sdk_tests
if (( tests_only )); then
  run_carried_unit_tests
  echo; echo "===== summary ====="; cat "$OUT/summary.txt"
  exit 0
fi
start=$(date +%s)
PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" \
  --models "$(echo "$models" | tr ' ' ',')" --skip-preprocess --device cuda >"$OUT/goldens.log" 2>&1 || tail -5 "$OUT/goldens.log"
echo "full-size goldens: $(( $(date +%s) - start )) s"
log "== measurements"
for name in $models; do for batch in $batches; do measure_c "$name" "$batch"; done; done
if (( python )) && wait_python_module; then
  for name in $models; do for batch in $batches; do measure_python "$name" "$batch"; done; done
fi

log "== SDK device runs vs graph replay (cuda $precision; ms per run; +us: added over the replay; alt +us:"
log "   added when each call alternates between two buffer pairs; host us: the enqueue loop's time per call)"
tags=()
for name in $models; do for batch in $batches; do tags+=("${name}_b$batch"); done; done
python3 - "$OUT" "${tags[@]}" <<'PY' \
  | tee -a "$OUT/summary.txt"
import json, os, sys
out, tags = sys.argv[1], sys.argv[2:]
def load(kind, tag):
    try:
        return json.load(open(os.path.join(out, f"{kind}_{tag}.json")))
    except (OSError, ValueError):
        return None
def added(r, target):
    if not r or r.get("added_us") is None:
        return "-"
    verdict = "OK" if r["added_us"] < target else "OVER"
    return f"{r['added_us']:+.1f} {verdict}" + (" host-bound" if r.get("host_bound") else "")
def ms(r):
    return f"{r['device_ms_per_call']['median']:.4f}" if r else "-"
def host(r):
    return f"{r['host_us_per_call']['median']:.1f}" if r else "-"
def check(r):
    if not r:
        return "-"
    c = r["check"]
    kind = "bit-identical" if c["bit_identical"] else f"rel_l2 {c['rel_l2']:.1e} (tol {c['tol']:.0e})"
    return f"{kind} {'OK' if c['ok'] else 'FAIL'}"
def alternating(r):
    return f"{r['alternating_added_us']:+.1f}" if r and r.get("alternating_added_us") is not None else "-"
print(f"  {'model':14s} {'replay':>8s} {'C run':>8s} {'C +us(<5)':>16s} {'alt +us':>9s} {'C host us':>9s} "
      f"{'Py run':>8s} {'Py +us(<20)':>16s} {'Py host us':>10s}  Py output vs host run")
for tag in tags:
    bench, c, py = load("bench", tag), load("c", tag), load("py", tag)
    replay = f"{bench['latency']['median_ms']:.4f}" if bench else "-"
    print(f"  {tag:14s} {replay:>8s} {ms(c):>8s} {added(c, 5):>16s} {alternating(c):>9s} {host(c):>9s} "
          f"{ms(py):>8s} {added(py, 20):>16s} {host(py):>10s}  {check(py)}")
PY
cp "$WORK/tactics.txt" "$OUT/tactics.txt" 2>/dev/null
# At most 8 files come back from the machine: everything but the summary goes into one archive.
(cd "$OUT" && tar czf results.tgz --exclude=results.tgz --exclude=summary.txt ./* \
  && find . -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt -delete)
echo
echo "===== summary ====="
cat "$OUT/summary.txt"
