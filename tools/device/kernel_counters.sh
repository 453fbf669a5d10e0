#!/usr/bin/env bash
# Runs on the GPU machine (H200): hardware counters of chosen kernels of a full-size fp16 plan, read by
# Nsight Compute (ncu, clocks left alone as METHOD.md asks), one line per kernel launch: duration, DRAM
# traffic and its share of the peak, SM throughput, achieved occupancy, registers and launch shape.
#
# Usage: tools/device/kernel_counters.sh --model efficientnet_b0 --batch 32 --kernels 'excite|pool' \
#          [--count 40] [--during bench|build] [--stalls]
#   --kernels  ncu's kernel-name regex ('' = every kernel, in launch order)
#   --count    launches profiled (matching ones only)
#   --during   bench: the plan's first (eager) run and its replays; build: the build's tactic race, where
#              candidates that may lose (kiln's own kernels) run
#   --stalls   also Nsight Compute's pages on where the warps wait (warp states, memory and compute
#              workload, occupancy, launch) for the same launches, to $OUT/stalls_MODEL_bBATCH_DURING.txt
# Needs `carry: [".carry"]` (kiln, and .carry/shared for the YOLOv10 peer; see cuda_env.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-counters
mkdir -p "$WORK"
model="" batch=1 kernels="" count=20 during=bench stalls=0
while (( $# > 0 )); do
  case "$1" in
    --model) model=$2; shift ;;
    --batch) batch=$2; shift ;;
    --kernels) kernels=$2; shift ;;
    --count) count=$2; shift ;;
    --during) during=$2; shift ;;
    --stalls) stalls=1 ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
[[ -n $model ]] || { echo "--model is required"; exit 2; }
[[ $during == bench || $during == build ]] || { echo "--during: expected bench or build, got '$during'"; exit 2; }
source tools/device/cuda_env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[[ -x $NCU ]] || { echo "ncu not found"; exit 1; }

family=timm_efficientnet
case "$model" in resnest*) family=timm_resnest ;; resnet*) family=timm_resnet ;; yolov10*) family=yolov10 ;; esac
ckpt="$WORK/goldens/$model/model.safetensors"
if [[ ! -f $ckpt ]]; then
  if [[ $family == yolov10 ]]; then
    python3 tools/goldens/make_yolo_goldens.py --peer .carry/shared/peers/yolov10 --photos tests/data/photos \
      --out "$WORK/goldens" --models "${model#yolov10}" >"$WORK/goldens.log" 2>&1
  else
    python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" --models "$model" \
      --skip-preprocess --device cuda >"$WORK/goldens.log" 2>&1
  fi
  [[ -f $ckpt ]] || { tail -5 "$WORK/goldens.log"; exit 1; }
fi

plan="$WORK/$model.fp16.b$batch.kplan"
build=("$KILN" build "$family" --checkpoint "$ckpt" --precision fp16 --batch "$batch" --backend cuda
  --tactic-cache "$WORK/tactics.txt" -o "$plan")
filter=(); [[ -n $kernels ]] && filter=(--kernel-name "regex:$kernels")
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size
metrics+=,launch__block_size,launch__shared_mem_per_block_dynamic
ncu=("$NCU" --clock-control none --launch-count "$count" "${filter[@]}" --metrics "$metrics" --csv --page raw --print-units base)
csv="$OUT/counters_${model}_b${batch}_$during.csv"
bench=("$KILN" bench "$plan" --backend cuda --warmup 0s --duration 0.2s)
if [[ $during == build ]]; then
  rm -f "$WORK/tactics.txt"  # a cached tactic would skip the race
  "${ncu[@]}" "${build[@]}" >"$csv" 2>"$WORK/ncu.log"
else
  "${build[@]}" >"$WORK/build.log" 2>&1 || { tail -3 "$WORK/build.log"; exit 1; }
  "${ncu[@]}" "${bench[@]}" >"$csv" 2>"$WORK/ncu.log"
fi
if (( stalls )); then
  pages=()
  for page in SpeedOfLight WarpStateStats MemoryWorkloadAnalysis ComputeWorkloadAnalysis Occupancy LaunchStats; do
    pages+=(--section "$page")
  done
  profiled=("${bench[@]}")
  if [[ $during == build ]]; then rm -f "$WORK/tactics.txt"; profiled=("${build[@]}"); fi
  "$NCU" --clock-control none --launch-count "$count" "${filter[@]}" "${pages[@]}" "${profiled[@]}" \
    >"$OUT/stalls_${model}_b${batch}_$during.txt" 2>>"$WORK/ncu.log"
fi
grep -E '^==ERROR|^==WARNING' "$WORK/ncu.log" | head -5
python3 - "$csv" <<'PY' | tee -a "$OUT/summary.txt"
import csv, sys
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
rows = list(csv.DictReader(lines))[1:]  # the second row holds the units
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {len(rows)} launches")
print(f"  {'kernel':46s} {'us':>8s} {'DRAM MB':>8s} {'GB/s':>7s} {'dram%':>6s} {'sm%':>6s} {'occ%':>6s} "
      f"{'regs':>4s} {'grid':>7s} {'block':>5s} {'smem':>6s}")
for r in rows:
    f = lambda k: float(r.get(k, "0").replace(",", "") or 0)
    ns = f("gpu__time_duration.sum")
    mb = (f("dram__bytes_read.sum") + f("dram__bytes_write.sum")) / 1e6
    name = r["Kernel Name"].split("(")[0].removeprefix("void ")
    while name.endswith(">"):  # drop the trailing template arguments, however nested
        depth, i = 0, len(name) - 1
        while i >= 0:
            depth += {">": 1, "<": -1}.get(name[i], 0)
            if depth == 0:
                break
            i -= 1
        name = name[:max(i, 0)]
    name = name.split("::")[-1][-46:]
    print(f"  {name:46s} {ns / 1e3:8.2f} {mb:8.2f} {mb * 1e6 / max(ns, 1):7.0f} "
          f"{f('dram__throughput.avg.pct_of_peak_sustained_elapsed'):6.1f} "
          f"{f('sm__throughput.avg.pct_of_peak_sustained_elapsed'):6.1f} "
          f"{f('sm__warps_active.avg.pct_of_peak_sustained_active'):6.1f} {int(f('launch__registers_per_thread')):4d} "
          f"{int(f('launch__grid_size')):7d} {int(f('launch__block_size')):5d} "
          f"{int(f('launch__shared_mem_per_block_dynamic')):6d}")
PY
