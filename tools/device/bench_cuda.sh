#!/usr/bin/env bash
# Runs on the GPU machine (H200; nvcc, python3 with torch + timm there): builds kiln with the CUDA
# backend, checks it (against the CPU reference backend and timm's float64 logits) and benchmarks it
# against PyTorch peers timed in the same call. Prints a short table last; logs and JSON go under $OUT.
#
# Usage: tools/device/bench_cuda.sh [--compile] [--quick] [--models resnest50d,resnet50]
#   --compile  also time torch.compile (max-autotune at batch 1: 4 to 6 minutes per model)
#   --quick    tiny goldens only: no full-size models, no benchmarks
#   --models   the full-size models to check and benchmark (default both)
#   --no-checks  benchmarks only (for a --compile call that must fit the machine's time limit)
# A kiln binary built elsewhere with the CUDA backend (same toolkit major version) may be carried as
# .carry/bin/kiln, with the libraries the GPU machine lacks (libdnnl.so.2, libOpenCL.so.1) beside it;
# the build here is then skipped.
# Needs `carry: [".carry"]` (toml++ headers: mkdir -p .carry/include && cp -r /usr/include/toml++ .carry/include/).
# gtest is absent there: to run the CUDA backend's unit tests too, build them on the CI machine and carry
# the binary (and kiln itself, to skip the build there) with the libraries the GPU machine lacks:
#   mkdir -p .carry/bin && cp -L build/release/kiln build/release/tests/backends/cuda_backend_test \
#     /lib/x86_64-linux-gnu/{libdnnl.so.2,libOpenCL.so.1,libjpeg.so.62,libpng16.so.16,libwebp.so.7} \
#     /lib/x86_64-linux-gnu/libtomlplusplus.so.3 .carry/bin/
#   xz -9 .carry/bin/libdnnl.so.2   # 40 MB: what travels to the machine is limited to 64 MiB in all
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-cuda
rm -rf "$WORK" && mkdir -p "$WORK"
compile=0 quick=0 checks=1 models="resnest50d resnet50"
while (( $# > 0 )); do
  case "$1" in
    --compile) compile=1 ;;
    --quick) quick=1 ;;
    --no-checks) checks=0 ;;
    --models) models="${2//,/ }"; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
log() { echo "$*" | tee -a "$OUT/summary.txt"; }

source tools/device/cuda_env.sh

family_of() { case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; esac; }

# compare NAME Y REF TOL: one line of the accuracy table (tools/goldens/compare.py's measure).
compare() {
  local result
  result=$(python3 tools/goldens/compare.py "$2" "$3" --tol "$4" --json 2>&1)
  python3 - "$1" "$4" "$result" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
name, tol, text = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    r = json.loads(text)
    rel = r.get("rel_l2", float("nan")); agree = r.get("top1_agree")
    top1 = all(agree) if isinstance(agree, list) else "?"
    verdict = "OK" if r.get("ok") else "FAIL " + "; ".join(r.get("failures", []))[:120]
    print(f"  {name:52s} rel_l2 {rel:.2e} (tol {float(tol):.0e})  top1 {top1}  {verdict}")
except Exception:
    print(f"  {name:52s} compare failed: {text[-200:]}")
PY
}

# check DIR NAME: fp32 and fp16 plans of one golden model, on cuda and on the CPU reference.
check_model() {
  local dir=$1 name=$2 family batch
  family=$(family_of "$name")
  batch=$(python3 -c "import numpy as np; print(np.load('$dir/input.npy').shape[0])")
  for precision in fp32 fp16; do
    for opt in 0 3; do
      local plan="$WORK/$name.$precision.o$opt.kplan" tag="$name $precision O$opt"
      # Built for cuda: the build times the tactics (opt 3) or takes cuDNN's heuristics (opt 0) and the
      # plan stores them; the run below reuses them.
      "$KILN" build "$(family_of "$name")" --checkpoint "$dir/model.safetensors" --precision $precision \
        --opt-level $opt --batch "$batch" --backend cuda --tactic-cache "$WORK/tactics.txt" -o "$plan" \
        >>"$OUT/checks.log" 2>&1 || { log "  $tag: build failed: $(tail -1 "$OUT/checks.log")"; continue; }
      "$KILN" run "$plan" --backend cuda --input "$dir/input.npy" --save-output "$WORK/y.cuda.npy" \
        >>"$OUT/checks.log" 2>&1 || { log "  $tag: cuda run failed: $(tail -1 "$OUT/checks.log")"; continue; }
      # fp32 (TF32 off) must meet the project's fp32 bar. fp16 stores every activation with a unit
      # roundoff of 2^-11 (4.9e-4) and rounds again after each of the ~50-160 layers; against float64
      # that gives a few 1e-3 on the small models and about 1.3e-2 on full-size ResNet-50 (random
      # weights, large logits), which the CPU reference's own fp16 simulation reaches too (printed
      # below for the full-size models): 2e-2 is the bar, and top-1 must agree.
      local tol=1e-4; [[ $precision == fp16 ]] && tol=2e-2
      compare "$tag cuda vs timm float64" "$WORK/y.cuda.npy" "$dir/logits.npy" $tol
      if [[ "$name" == *tiny* || ( $precision == fp16 && $opt == 3 ) ]]; then
        "$KILN" run "$plan" --backend cpu-reference --input "$dir/input.npy" --save-output "$WORK/y.ref.npy" \
          >>"$OUT/checks.log" 2>&1 || { log "  $tag: reference run failed"; continue; }
        # The reference simulates the same fp16 storage; the two differ by accumulation order, which
        # moves values across fp16 rounding boundaries independently on each side: a few 1e-3 on the
        # small models, and on the full-size ones about half of each side's own 1.1-1.2e-2 distance to
        # float64 (5.9e-3 measured on ResNet-50), hence 1e-2 there.
        local rtol=1e-4; [[ $precision == fp16 ]] && rtol=5e-3
        [[ $precision == fp16 && "$name" != *tiny* ]] && rtol=1e-2
        compare "$tag cuda vs cpu-reference" "$WORK/y.cuda.npy" "$WORK/y.ref.npy" $rtol
        [[ "$name" != *tiny* ]] && compare "$tag cpu-reference vs timm float64" "$WORK/y.ref.npy" "$dir/logits.npy" $tol
      fi
    done
  done
}

log "== accuracy (kiln cuda backend)"
# The CUDA backend covers the two ResNet families; EfficientNet's and YOLOv10's operators have no CUDA
# kernels yet (and detectors have no plans), so their goldens are not checked here.
for dir in tests/data/golden/*/; do
  [[ $checks == 1 && -n "$(family_of "$(basename "$dir")")" ]] && check_model "$dir" "$(basename "$dir")"
done
[[ $checks == 1 ]] && run_carried_unit_tests
[[ $quick == 1 ]] && { echo; echo "===== summary ====="; cat "$OUT/summary.txt"; exit 0; }

start=$(date +%s)
PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" \
  --models "$(echo $models | tr ' ' ',')" --skip-preprocess --device cuda >"$OUT/goldens.log" 2>&1 || tail -5 "$OUT/goldens.log"
echo "full-size goldens: $(( $(date +%s) - start )) s"
for name in $models; do
  [[ $checks == 1 && -f "$WORK/goldens/$name/model.safetensors" ]] && check_model "$WORK/goldens/$name" "$name"
done

log "== latency (fp16, NHWC, ms; kiln: $($KILN --version 2>/dev/null | head -1))"
for name in $models; do
  ckpt="$WORK/goldens/$name/model.safetensors"
  [[ -f "$ckpt" ]] || continue
  for batch in 1 32; do
    plan="$WORK/$name.fp16.b$batch.kplan"
    "$KILN" build "$(family_of "$name")" --checkpoint "$ckpt" --precision fp16 --batch $batch --backend cuda \
      --tactic-cache "$WORK/tactics.txt" -o "$plan" >>"$OUT/bench.log" 2>&1
    "$KILN" inspect "$plan" | sed -n '/^tactics:/,$p' >"$OUT/tactics_${name}_b$batch.txt"
    "$KILN" bench "$plan" --backend cuda --warmup 1s --duration 3s --profile --profile-iterations 20 \
      --json "$OUT/kiln_${name}_b$batch.json" --verbose >>"$OUT/bench.log" 2>&1 \
      || { log "  $name b$batch: kiln bench failed"; tail -3 "$OUT/bench.log"; }
  done
done
peer_args=(--models "$(echo $models | tr ' ' ',')" --batches 1,32)
[[ $compile == 1 ]] && peer_args+=(--compile)
PYTHONUNBUFFERED=1 python3 tools/device/torch_peers.py "${peer_args[@]}" >"$OUT/peers.jsonl" 2>"$OUT/peers.log" \
  || tail -5 "$OUT/peers.log"
python3 tools/device/cuda_report.py --out "$OUT" | tee -a "$OUT/summary.txt" >/dev/null
cp "$WORK/tactics.txt" "$OUT/tactics.txt" 2>/dev/null
# At most 8 files come back from the machine: everything but the summary goes into one archive.
(cd "$OUT" && tar czf results.tgz --exclude=results.tgz --exclude=summary.txt --exclude=all.log ./* \
  && find . -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt ! -name all.log -delete)
echo
echo "===== summary ====="
cat "$OUT/summary.txt"
