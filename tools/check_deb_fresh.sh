#!/usr/bin/env bash
# Installs kiln's Debian package on a fresh Debian 12 and uses it from another folder: a minimal
# bookworm made by debootstrap (root, network to deb.debian.org), the machine's CUDA toolkit and cuDNN
# bound in at /usr/local/cuda (a machine of the CI kind has them there; they are not Debian packages, so
# the package does not declare them), `apt-get install ./kiln_*.deb`, then `kiln study timm_resnest` and
# the Python module from an empty folder. Takes 5 to 10 minutes on 2 cores.
#   tools/check_deb_fresh.sh PACKAGE.deb [ROOT]    (ROOT: where the fresh system goes; default a temp folder)
set -euo pipefail
deb=$(readlink -f "${1:?usage: $0 PACKAGE.deb [ROOT]}")
root=${2:-$(mktemp -d /tmp/kiln-fresh.XXXXXX)}
[[ $(id -u) == 0 ]] || { echo "$0: needs root (debootstrap, chroot, mount)"; exit 2; }
command -v debootstrap >/dev/null || apt-get install -y debootstrap >/dev/null
cleanup() { for m in usr/local/cuda dev proc; do umount "$root/$m" 2>/dev/null || true; done; }
trap cleanup EXIT

[[ -x $root/usr/bin/apt-get ]] || debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log"
mkdir -p "$root/usr/local/cuda"
mount --bind "$(readlink -f /usr/local/cuda)" "$root/usr/local/cuda"
ln -sfn cuda "$root/usr/local/$(basename "$(readlink -f /usr/local/cuda)")"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/"
cp "$deb" "$root/root/"
chroot "$root" bash -euo pipefail -c "
  cd /root
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y ./$(basename "$deb") >apt.log
  echo \"installed: \$(dpkg-query -W kiln)\"
  mkdir -p elsewhere && cd elsewhere
  start=\$SECONDS
  kiln study timm_resnest -o study >study.log 2>&1
  echo \"kiln study timm_resnest: \$(( SECONDS - start )) s, \$(ls study | tr '\n' ' ')\"
  grep -m1 -E '^\*\*(Ship|Do not ship|Cannot tell)' study/STUDY.md || true
  python3 -c 'import kiln; print(\"python: import kiln\", kiln.__version__)'
"
echo "ok: $deb installs and runs on a fresh bookworm ($root)"
