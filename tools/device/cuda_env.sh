# Sourced by the GPU-machine scripts: puts the CUDA libraries of the Python wheels (cuDNN, cuBLAS) on the
# library path and sets KILN to a kiln with the CUDA backend: the carried one (.carry/bin/kiln, with the
# libraries the machine lacks beside it; any of these files, programs too, may be xz-compressed) or one
# built here. Needs OUT.
NV=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0] + "/"))')
CUDNN_ROOT="$NV/cudnn"
export LD_LIBRARY_PATH="$(ls -d "$NV"/*/lib | tr '\n' ':')${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"

kiln_start=$(date +%s)
# Anything carried may be xz-compressed, programs too (what travels is limited to 64 MiB with the tree):
# unpack it, the programs made executable again, before looking for kiln.
for packed in .carry/bin/*.xz; do
  [[ -f "$packed" ]] || continue
  python3 -c 'import lzma, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read())' "$packed" \
    && rm -f "$packed" && chmod +x "${packed%.xz}"
done
# The shared peers and anchors may travel as one archive, .carry/shared.tar.xz (of the folder shared/).
if [[ -f .carry/shared.tar.xz ]]; then tar xJf .carry/shared.tar.xz -C .carry && rm -f .carry/shared.tar.xz; fi
if [[ -x .carry/bin/kiln ]]; then
  KILN=.carry/bin/kiln
  export LD_LIBRARY_PATH="$PWD/.carry/bin:$LD_LIBRARY_PATH"
  echo "kiln: carried binary ($($KILN --version | head -1))"
else
  cmake -S . -B build/cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF \
    -DKILN_TOMLPP_INCLUDE_DIR="$PWD/.carry/include" -DKILN_CUDNN_ROOT="$CUDNN_ROOT" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >"$OUT/cmake.log" 2>&1 \
    && cmake --build build/cuda -j 16 --target kiln >>"$OUT/cmake.log" 2>&1 \
    || { tail -40 "$OUT/cmake.log"; exit 1; }
  KILN=build/cuda/kiln
  grep -E "kiln: CUDA" "$OUT/cmake.log"
fi
echo "kiln ready: $(( $(date +%s) - kiln_start )) s"

# The CUDA backend's unit tests, when a binary built on the CI machine was carried (gtest is absent here).
run_carried_unit_tests() {
  [[ -x .carry/bin/cuda_backend_test ]] || return 0
  timeout 300 .carry/bin/cuda_backend_test >"$OUT/gtest.log" 2>&1
  log "== unit tests (carried cuda_backend_test, rc $?): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/gtest.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|Failure|error' "$OUT/gtest.log" | head -20 | tee -a "$OUT/summary.txt"
}
