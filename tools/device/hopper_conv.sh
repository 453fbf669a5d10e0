#!/usr/bin/env bash
# Runs on the GPU machine: kiln's Hopper convolution kernel against cuDNN and cuBLASLt per layer
# (benchmarks/hopper_conv_bench.cu): checks that its SASS has the Hopper matrix instructions, runs its
# correctness pass under compute-sanitizer, then the timed table. Leaves conv.json and the logs in $OUT.
# Needs `carry: [".carry/bin"]` with hopper_conv_bench (built on the CPU machine), or builds it here.
# Usage: tools/device/hopper_conv.sh [--quick] [BENCH OPTIONS...]   --quick: no compute-sanitizer, no ncu
#   PROFILE_LAYERS="C,K,HW ...", PROFILE_BATCH and PROFILE_OPERAND (f16, e4m3, int8) choose what ncu profiles.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
quick=0
if [[ "${1:-}" == "--quick" ]]; then quick=1; shift; fi
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
NV=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0] + "/"))')
export LD_LIBRARY_PATH="$(ls -d "$NV"/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}"
# Logs go into one archive at the end: what comes back from $OUT is at most 8 files.
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
bench=.carry/bin/hopper_conv_bench
if [[ -f $bench.xz ]]; then  # packed by tools/device/pack.sh
  python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$bench.xz" \
    && rm -f "$bench.xz" && chmod +x "$bench"
fi
if [[ ! -x $bench ]]; then
  # Each source compiles on its own (the kernels' register allocation takes a while), then one link.
  mkdir -p build/hopper && bench=build/hopper/hopper_conv_bench
  for source in benchmarks/hopper_conv_bench.cu src/backends/cuda/kernels/hopper/{gemm_conv,gemm_conv_f16,gemm_conv_e4m3,gemm_conv_s8}.cu \
                src/backends/cuda/kernels/hopper/tensor_map.cpp; do
    /usr/local/cuda/bin/nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -I"$NV/cudnn/include" \
      -Xptxas -v -c "$source" -o "build/hopper/$(basename "$source").o" >"$OUT/logs/nvcc_$(basename "$source").log" 2>&1 &
  done
  wait
  cat "$OUT"/logs/nvcc_*.log | grep -E 'error|spill|registers' | sort | uniq -c | head -20
  /usr/local/cuda/bin/nvcc build/hopper/*.o -o $bench -L"$NV/cudnn/lib" -l:libcudnn.so.9 -L"$NV/cublas/lib" -lcublasLt \
    >"$OUT/logs/nvcc_link.log" 2>&1 || { cat "$OUT"/logs/nvcc_link.log; exit 1; }
fi
echo "matrix instructions in the SASS: $(cuobjdump --dump-sass $bench | grep -cE 'HGMMA|QGMMA') wgmma," \
  "$(cuobjdump --dump-sass $bench | grep -cE ' HMMA') mma.sync"
# A kernel that deadlocks on its barriers hangs: each step has a short limit, and the timed table runs
# only after the kernels were right on every batch.
timeout 150 $bench --check-only > "$OUT/logs/check.txt"
check=${PIPESTATUS[0]}
echo "check (rc $check): $(grep -c FAIL "$OUT/logs/check.txt") failures"; grep FAIL "$OUT/logs/check.txt" | head -5
if (( !quick )); then
  timeout 120 compute-sanitizer --tool memcheck --print-limit 5 $bench --batches 1 --check-only >"$OUT/logs/memcheck.log" 2>&1
  echo "memcheck (rc $?): $(grep -E 'ERROR SUMMARY' "$OUT/logs/memcheck.log")"
fi
(( check == 0 )) || exit 1
# Where the time of a memory-bound pointwise layer and of the 3x3 layers of 128 channels goes: the first
# launch of the timed run (so the epilogue is the timed one: a checked run also writes the fp16 values
# beside codes) of PROFILE_OPERAND's kernel (e4m3 unless set), with the epilogue and tile the table is given
# (give --tile, else the first tile that takes the layer), at PROFILE_BATCH (32 unless set), and per SASS
# instruction where its warps stall.
profile_args=()
for (( i = 1; i <= $#; ++i )); do
  case "${!i}" in --epilogue|--tile) j=$(( i + 1 )); profile_args+=("${!i}" "${!j}") ;; esac
done
(( quick )) || for layer in ${PROFILE_LAYERS:-64,256,56 128,128,28}; do
  timeout 200 ncu --clock-control none -k regex:gemm_conv_kernel --launch-count 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    --section SchedulerStats --section SourceCounters \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' -o "$OUT/logs/ncu_${layer//,/_}" \
    $bench --batches "${PROFILE_BATCH:-32}" --layer "$layer" --operand "${PROFILE_OPERAND:-e4m3}" "${profile_args[@]}" \
    >"$OUT/logs/ncu_${layer//,/_}.log" 2>&1
  echo "ncu $layer: rc $?"
  ncu --import "$OUT/logs/ncu_${layer//,/_}.ncu-rep" --csv --page details >"$OUT/logs/ncu_${layer//,/_}.csv" 2>&1
  ncu --import "$OUT/logs/ncu_${layer//,/_}.ncu-rep" --csv --page source --print-source sass \
    >"$OUT/logs/ncu_${layer//,/_}_sass.csv" 2>&1
done
timeout 300 $bench "$@" --json "$OUT/conv.json" | tee "$OUT/conv.txt"
# The profiler's reports stay behind (too large to come back); their pages are in the csv files.
rm -f "$OUT"/logs/*.ncu-rep
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$OUT/logs"
