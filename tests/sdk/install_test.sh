#!/usr/bin/env bash
# Installs kiln into a temporary prefix and uses it as a user would, from another folder: the C and C++
# examples built with find_package(kiln) (and classify.c with pkg-config), each giving the top-k or the
# boxes the installed `kiln run` gives; the installed kiln finding its family manifests; the Python module
# imported from the installed tree and the Python examples run with it, checked the same way.
#   install_test.sh BUILD_DIR SOURCE_DIR CMAKE FIXTURE_DIR PYTHON
set -euo pipefail
[[ -n ${KILN_TRACE:-} ]] && set -x
build=$1 source=$2 cmake=$3 fixture=$4 python=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
photo=$source/tests/data/photos/dog.jpg

"$cmake" --install "$build" --prefix "$prefix" >/dev/null
for path in bin/kiln include/kiln/kiln.h include/kiln/kiln.hpp share/kiln/families/timm_resnest/manifest.toml; do
  [[ -e $prefix/$path ]] || { echo "not installed: $path"; exit 1; }
done
libkiln=$(find "$prefix" -name 'libkiln.so.*.*.*' | head -n1)
[[ -n $libkiln ]] || { echo "libkiln.so not installed"; exit 1; }
libdir=$(dirname "$libkiln")
# The installed kiln runs classifiers through the installed libkiln.so (found by its RPATH, no
# LD_LIBRARY_PATH).
loaded=$(ldd "$prefix/bin/kiln" | awk '$1 ~ /^libkiln\.so/ {print $3}')
[[ -n $loaded && $(readlink -f "$loaded") == $(readlink -f "$libkiln") ]] \
  || { echo "the installed kiln loads '${loaded}', not $libkiln"; exit 1; }

# find_package(kiln CONFIG): the examples project; each example's results as the installed `kiln run`
# gives them on the same plan, photo and backend.
"$cmake" -S "$source/examples" -B "$work/examples" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$work/examples" >/dev/null
compare() { "$python" "$source/tests/sdk/compare_with_kiln_run.py" "$@"; }
"$prefix/bin/kiln" run "$fixture/plan.kplan" --input "$photo" --backend cpu-reference --json "$work/top.json" >/dev/null
"$prefix/bin/kiln" run "$fixture/det.kplan" --input "$photo" --backend cpu-reference --min-score 0.005 \
  --json "$work/boxes.json" >/dev/null
"$work/examples/classify_c" "$fixture/plan.kplan" "$photo" | tee "$work/classify_c.txt"
compare classify "$work/classify_c.txt" "$work/top.json"
"$work/examples/run_cpp" "$fixture/plan.kplan" "$photo" | tee "$work/run_cpp.txt"
grep -q ': 10 values$' "$work/run_cpp.txt"
compare classify "$work/run_cpp.txt" "$work/top.json"
"$work/examples/detect_c" "$fixture/det.kplan" "$photo" 0.005 >"$work/detect_c.txt"
compare detect "$work/detect_c.txt" "$work/boxes.json"
"$work/examples/detect_cpp" "$fixture/det.kplan" "$photo" 0.005 >"$work/detect_cpp.txt"
compare detect "$work/detect_cpp.txt" "$work/boxes.json"
if "$work/examples/classify_c" "$work/missing.kplan" "$photo" 2>"$work/error.txt"; then exit 1; fi
grep -q "^kiln: error: $work/missing.kplan: no such file$" "$work/error.txt"

# pkg-config.
export PKG_CONFIG_PATH=$libdir/pkgconfig
cc -std=c11 -o "$work/classify_pc" "$source/examples/classify.c" $(pkg-config --cflags --libs kiln)
LD_LIBRARY_PATH=$libdir "$work/classify_pc" "$fixture/plan.kplan" "$photo" | cmp - "$work/classify_c.txt"

# The installed kiln from another folder finds its manifests under <prefix>/share/kiln/families.
mkdir "$work/elsewhere" && cd "$work/elsewhere"
"$prefix/bin/kiln" validate >/dev/null
"$prefix/bin/kiln" validate timm_resnest >/dev/null
"$prefix/bin/kiln" build timm_resnest --help >/dev/null
"$prefix/bin/kiln" build timm_resnest --checkpoint "$source/tests/data/golden/resnest_tiny/model.safetensors" \
  -o "$work/elsewhere/tiny.kplan" --precision fp32 --backend cpu-reference >/dev/null
[[ -s $work/elsewhere/tiny.kplan ]]

# The Python module from the installed tree, and the Python examples run with it from another folder.
module=$(find "$prefix" -name '_kiln*.so' | head -n1)
if [[ -n $module ]]; then
  export PYTHONPATH=$(dirname "$(dirname "$module")")
  "$python" -c 'import kiln; assert "cpu-reference" in kiln.backends(); print("python", kiln.__version__)'
  "$python" "$source/examples/classify.py" "$source/tests/data/golden/resnest_tiny/model.safetensors" "$photo" \
    "$work/elsewhere" | tee "$work/classify_py.txt"
  "$prefix/bin/kiln" run "$work/elsewhere/model.kplan" --input "$photo" --backend cpu-reference \
    --json "$work/py_top.json" >/dev/null
  compare classify "$work/classify_py.txt" "$work/py_top.json"
  grep -q "^kiln: error: .*missing.kplan: no such file$" "$work/classify_py.txt"
  "$python" "$source/examples/detect.py" "$fixture/det.kplan" "$photo" 0.005 >"$work/detect_py.txt"
  compare detect "$work/detect_py.txt" "$work/boxes.json"
fi
echo "install test: passed"
