#!/usr/bin/env bash
# Runs on the CPU machine: packs what a GPU call needs into .carry/bin (then `carry: [".carry/bin"]`):
# kiln, its libraries and the cuda plugin, the named test programs and benchmarks of a build folder, and the
# system libraries the GPU machine lacks. Programs and the large libraries travel xz-compressed;
# tools/device/cuda_env.sh unpacks them there. Prints the size of what will travel with the tree.
#
# Usage: tools/device/pack.sh [--build-dir build/release] [PROGRAM ...]
#   PROGRAM  a program of the build folder by name, e.g. cuda_backend_test, backend_ops_test,
#            sdk_cuda_device_run_test, sdk_make_fixture (gpu_tests.sh makes the SDK fixture with it),
#            hopper_conv_bench (configure with -DKILN_BUILD_BENCHMARKS=ON)
# Build them first, e.g. `ninja -C build/release kiln kiln_cuda cuda_backend_test`.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build/release
if [[ "${1:-}" == "--build-dir" ]]; then build=$2; shift 2; fi
[[ -x $build/kiln ]] || { echo "pack.sh: no $build/kiln: build kiln first" >&2; exit 2; }
[[ -f $build/lib/libkiln_cuda.so.0.1 ]] || { echo "pack.sh: $build has no cuda plugin (libkiln_cuda)" >&2; exit 2; }

files=("$build/kiln" "$build"/lib/libkiln_core.so.0.1 "$build"/lib/libkiln_cuda.so.0.1 "$build"/lib/libkiln.so.0.1)
for name in "$@"; do
  # A build configured without benchmarks has no benchmarks folder: search the folders it has.
  found=$(find "$build/tests" "$build/benchmarks" -name "$name" -type f -perm -u+x 2>/dev/null | head -1 || true)
  [[ -n $found ]] || { echo "pack.sh: no program '$name' under $build (build it first)" >&2; exit 2; }
  files+=("$found")
done

rm -rf .carry/bin && mkdir -p .carry/bin
for file in "${files[@]}"; do xz -T2 -6 -c "$file" >".carry/bin/$(basename "$file").xz"; done
cp "$build"/lib/libkiln_waits.so.0.1 .carry/bin/
# The GPU machine's image lacks oneDNN and these; libdnnl (40 MB) travels compressed.
for lib in libdnnl.so.2 libOpenCL.so.1 libjpeg.so.62 libpng16.so.16 libwebp.so.7 libtomlplusplus.so.3; do
  cp -L "/lib/x86_64-linux-gnu/$lib" .carry/bin/
done
xz -T2 -6 .carry/bin/libdnnl.so.2

source tools/device/carry_size.sh
tree=$(tree_archived_bytes) carried=$(folders_archived_bytes .carry/bin)
echo "packed $(ls .carry/bin | wc -l) files for $("$build/kiln" --version | head -1)"
echo "travels: tree $(( tree / 1048576 )) MiB + .carry/bin $(( carried / 1048576 )) MiB of $(( CARRY_LIMIT_BYTES / 1048576 )) MiB"
(( tree + carried <= CARRY_LIMIT_BYTES )) || { echo "pack.sh: over the limit" >&2; exit 1; }
