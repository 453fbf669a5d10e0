#!/usr/bin/env bash
# Installs kiln's Debian packages on a fresh Debian 12 and uses them from another folder: a minimal
# bookworm made by debootstrap (root, network to deb.debian.org), then
#   0. each package has a summary line of its own;
#   1. `apt-get install ./kiln_*.deb` on a system without CUDA: `kiln --version` says the cuda backend is
#      not installed, `kiln study timm_resnest` and the Python module work;
#   2. `apt-get install ./kiln-dev_*.deb` with cmake and g++: the examples build against the packages with
#      find_package(kiln), choosing no C++ standard, and run;
#   3. `apt-get install ./kiln-cuda_*.deb` still without CUDA: the plugin is listed but cannot load
#      (`kiln --version` names the missing CUDA library), a CPU run still works, `--backend cuda` is
#      refused in one line;
#   4. the machine's CUDA toolkit and cuDNN bound in at /usr/local/cuda (a machine of the CI kind has them
#      there; they are not Debian packages): the plugin loads.
# Takes 5 to 10 minutes on 2 cores.
#   tools/check_deb_fresh.sh BUILD_DIR [ROOT]   (the packages made by `cpack -G DEB` in BUILD_DIR;
#                                                ROOT: where the fresh system goes; default a temp folder)
set -euo pipefail
build=$(readlink -f "${1:?usage: $0 BUILD_DIR [ROOT]}")
root=${2:-$(mktemp -d /tmp/kiln-fresh.XXXXXX)}
[[ $(id -u) == 0 ]] || { echo "$0: needs root (debootstrap, chroot, mount)"; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y debootstrap >/dev/null
shopt -s nullglob
runtime=("$build"/kiln_*.deb) cuda=("$build"/kiln-cuda_*.deb) dev=("$build"/kiln-dev_*.deb)
(( ${#runtime[@]} == 1 )) || { echo "$0: expected one kiln_*.deb in $build (run cpack -G DEB there)"; exit 2; }
# Each package says in its own summary line (the description's first line, what apt lists) what it holds.
summaries=$(for deb in "${runtime[0]}" ${cuda[@]+"${cuda[@]}"} ${dev[@]+"${dev[@]}"}; do
  dpkg-deb -f "$deb" Description | head -1; done)
echo "$summaries"
[[ $(sort -u <<<"$summaries" | wc -l) == $(wc -l <<<"$summaries") ]] || { echo "$0: packages share a summary"; exit 1; }
cleanup() { for m in usr/local/cuda dev proc; do umount "$root/$m" 2>/dev/null || true; done; }
trap cleanup EXIT

[[ -x $root/usr/bin/apt-get ]] || debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/"
cp "${runtime[0]}" ${cuda[@]+"${cuda[@]}"} ${dev[@]+"${dev[@]}"} "$root/root/"
in_root() { chroot "$root" bash -euo pipefail -c "cd /root; $1"; }

in_root "
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y ./$(basename "${runtime[0]}") >apt.log
  echo \"installed: \$(dpkg-query -W kiln)\"
  kiln --version
  kiln --version | grep -q '^cuda: the cuda backend is not installed here'
  rm -rf elsewhere && mkdir elsewhere && cd elsewhere  # a ROOT given again is reused
  start=\$SECONDS
  kiln study timm_resnest -o study >study.log 2>&1
  echo \"kiln study timm_resnest: \$(( SECONDS - start )) s, \$(ls study | tr '\n' ' ')\"
  grep -m1 -E '^\*\*(Ship|Do not ship|Cannot tell)' study/STUDY.md || true
  python3 -c 'import kiln; print(\"python: import kiln\", kiln.__version__, kiln.backends())'
"
# kiln-dev: the examples built against the installed package with find_package(kiln), choosing no C++
# standard, and run on a plan the installed kiln builds.
if (( ${#dev[@]} == 1 )); then
  rm -rf "$root/root/examples" "$root/root/examples-build"
  cp -r "$(dirname "$0")/../examples" "$root/root/examples"
  in_root "
    DEBIAN_FRONTEND=noninteractive apt-get install -y ./$(basename "${dev[0]}") cmake g++ make pkg-config >>apt.log
    echo \"installed: \$(dpkg-query -W kiln-dev)\"
    cmake -S examples -B examples-build -DCMAKE_BUILD_TYPE=Release >examples.log
    cmake --build examples-build >>examples.log
    kiln build timm_resnest --checkpoint /usr/share/kiln/tests/data/trained/resnest_fashion_tiny/model.safetensors \
      -o resnest.kplan >/dev/null
    photo=/usr/share/kiln/tests/data/fashion_detect/images/val/val_000000.jpg
    examples-build/classify_c resnest.kplan \$photo | head -n 2
    examples-build/run_cpp resnest.kplan \$photo | head -n 2
  "
fi
(( ${#cuda[@]} == 1 )) || { echo "ok: ${runtime[0]} (no kiln-cuda package in $build)"; exit 0; }
in_root "
  DEBIAN_FRONTEND=noninteractive apt-get install -y ./$(basename "${cuda[0]}") >>apt.log
  echo \"installed: \$(dpkg-query -W kiln-cuda)\"
  kiln --version
  kiln --version | grep -q '^cuda: the cuda backend cannot be loaded from .*: libcud.*: cannot open shared object file'
  checkpoint=/usr/share/kiln/tests/data/trained/resnest_fashion_tiny/model.safetensors
  kiln run --family timm_resnest --checkpoint \$checkpoint --input /usr/share/kiln/tests/data/fashion_detect/images/val/val_000000.jpg --backend cpu | head -n 3
  if kiln run --family timm_resnest --checkpoint \$checkpoint --input /usr/share/kiln/tests/data/fashion_detect/images/val/val_000000.jpg --backend cuda 2>err.txt; then exit 1; fi
  cat err.txt; [[ \$(wc -l <err.txt) == 1 ]]
"
mkdir -p "$root/usr/local/cuda"
mount --bind "$(readlink -f /usr/local/cuda)" "$root/usr/local/cuda"
ln -sfn cuda "$root/usr/local/$(basename "$(readlink -f /usr/local/cuda)")"
in_root "kiln --version; kiln --version | grep -q '^cuda: loaded from /usr/lib/.*libkiln_cuda.so'"
echo "ok: the packages in $build install and run on a fresh bookworm ($root)"
