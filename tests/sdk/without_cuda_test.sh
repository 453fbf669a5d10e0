#!/usr/bin/env bash
# The CUDA backend is a plugin (libkiln_cuda.so) that nothing else links: an install without it, or with
# one that cannot load, runs every CPU command and refuses the cuda backend in one line naming the
# library and why. Installs kiln into a temporary prefix, then
#   - checks that the kiln program, libkiln.so, libkiln_core.so and the Python module load no CUDA
#     library (ldd, which follows every dependency);
#   - removes the plugin, as on a machine given the CPU packages only: `kiln --version`, a CPU run and
#     the Python module work, `--backend cuda` is refused;
#   - puts plugins there that cannot serve: one needing a library the machine lacks, one without kiln's
#     entry points, one from another kiln build;
#   - puts the real plugin back and hides the CUDA toolkit's folder in a mount namespace
#     (cuda_hidden_checks.sh): every family builds and runs on the CPU, --backend cuda names the missing
#     CUDA library.
#   without_cuda_test.sh BUILD_DIR SOURCE_DIR CMAKE FIXTURE_DIR PYTHON
set -euo pipefail
build=$1 source=$2 cmake=$3 fixture=$4 python=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
photo=$source/tests/data/photos/dog.jpg
fail() { echo "FAILED: $*"; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
core=$(find "$prefix" -name 'libkiln_core.so.*.*.*' | head -n1)
[[ -n $core ]] || fail "libkiln_core.so not installed"
libdir=$(dirname "$core")
module=$(find "$prefix" -name '_kiln*.so' | head -n1)
plugin_name=$(basename "$core" | sed -E 's/^libkiln_core\.so\.([0-9]+\.[0-9]+)\..*/libkiln_cuda.so.\1/')

for binary in "$prefix/bin/kiln" "$libdir"/libkiln.so.*.*.* "$core" $module; do
  if ldd "$binary" | grep -E 'lib(cuda|cudart|cudnn|cublas|cublasLt)\.so'; then
    fail "$binary loads a CUDA library"
  fi
done

# No plugin: the CPU packages alone.
rm -f "$libdir"/libkiln_cuda.so*
version=$("$prefix/bin/kiln" --version)
echo "$version"
grep -q '^backends: cpu, cpu-reference$' <<<"$version" || fail "--version lists other backends"
grep -q "^cuda: the cuda backend is not installed here: its plugin $plugin_name is not in $libdir" <<<"$version" \
  || fail "--version does not say the plugin is missing"
"$prefix/bin/kiln" run "$fixture/plan.kplan" --input "$photo" --backend cpu >"$work/run.txt" \
  || fail "a CPU run failed without the plugin"
grep -q '^ *1\.' "$work/run.txt" || fail "the CPU run printed no top-1: $(cat "$work/run.txt")"
refuse() {  # refuse EXPECTED_MESSAGE_REGEX: `--backend cuda` fails with status 1 and that one line
  if "$prefix/bin/kiln" run "$fixture/plan.kplan" --input "$photo" --backend cuda >"$work/out.txt" 2>&1; then
    fail "--backend cuda ran: $(cat "$work/out.txt")"
  fi
  [[ $(wc -l <"$work/out.txt") == 1 ]] || fail "not one line: $(cat "$work/out.txt")"
  grep -Eq "$1" "$work/out.txt" || fail "expected /$1/, got: $(cat "$work/out.txt")"
  cat "$work/out.txt"
}
refuse "^kiln: error: unknown backend 'cuda' \(built in: cpu, cpu-reference; the cuda backend is the plugin $plugin_name, which is not in $libdir\)$"
if [[ -n $module ]]; then
  PYTHONPATH=$(dirname "$(dirname "$module")") "$python" -c '
import kiln
assert kiln.backends() == ["cpu", "cpu-reference"], kiln.backends()
try:
    kiln.load("'"$fixture/plan.kplan"'", backend="cuda")
    raise SystemExit("the cuda backend loaded")
except kiln.Error as error:
    assert "unknown backend '"'"'cuda'"'"'" in str(error), error
print("python without the plugin: ok")'
fi

# A plugin needing a library this machine lacks.
printf 'int kiln_fake_vendor_call(void) { return 0; }\n' >"$work/vendor.c"
cc -shared -fPIC -o "$work/libkiln_fake_vendor.so" "$work/vendor.c"
printf 'int kiln_fake_vendor_call(void);\nint kiln_fake_plugin(void) { return kiln_fake_vendor_call(); }\n' >"$work/needs.c"
cc -shared -fPIC -o "$libdir/$plugin_name" "$work/needs.c" -L"$work" -lkiln_fake_vendor
rm "$work/libkiln_fake_vendor.so"
"$prefix/bin/kiln" --version | grep -q "^backends: cpu, cpu-reference, cuda$" || fail "an installed plugin is not listed"
"$prefix/bin/kiln" --version | grep -q "^cuda: the cuda backend cannot be loaded from .*$plugin_name: libkiln_fake_vendor.so: cannot open shared object file" \
  || fail "--version does not name the missing library: $("$prefix/bin/kiln" --version)"
"$prefix/bin/kiln" run "$fixture/plan.kplan" --input "$photo" --backend cpu >/dev/null \
  || fail "a CPU run failed beside a plugin that cannot load"
refuse "^kiln: error: the cuda backend cannot be loaded from $libdir/$plugin_name: libkiln_fake_vendor.so: cannot open shared object file: No such file or directory$"

# A library that is not a kiln plugin, and a plugin from another build.
printf 'int unrelated(void) { return 0; }\n' >"$work/other.c"
cc -shared -fPIC -o "$libdir/$plugin_name" "$work/other.c"
refuse "^kiln: error: $libdir/$plugin_name is not a kiln backend plugin \(it lacks kiln_plugin_build or kiln_plugin_make_backend\)$"
printf 'const char* kiln_plugin_build(void) { return "0.0.1 (commit 000000000000)"; }\nvoid* kiln_plugin_make_backend(void) { return 0; }\n' >"$work/old.c"
cc -shared -fPIC -o "$libdir/$plugin_name" "$work/old.c"
refuse "^kiln: error: $libdir/$plugin_name was built with kiln 0.0.1 \(commit 000000000000\), not with this kiln .*: install the plugin of the same build$"
# The real plugin on a machine without CUDA: the toolkit's folder hidden in a mount namespace of its own.
cuda_dir=$(readlink -f /usr/local/cuda 2>/dev/null || true)
if [[ ! -e $build/lib/$plugin_name ]]; then
  echo "(this build has no cuda plugin: the parts above are the machine without it)"
elif [[ -z $cuda_dir || ! -d $cuda_dir ]]; then
  echo "(no /usr/local/cuda here to hide)"
elif ! unshare --mount true 2>/dev/null; then
  echo "skipped: the CUDA-hidden part needs a mount namespace (unshare --mount, as root) to hide $cuda_dir"
  exit 77
else
  cp "$build/lib/$plugin_name" "$libdir/$plugin_name"
  unshare --mount "$source/tests/sdk/cuda_hidden_checks.sh" "$prefix" "$cuda_dir" "$source" "$python"
fi
echo "without-cuda test: passed"
