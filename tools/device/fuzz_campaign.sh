#!/usr/bin/env bash
# A fuzzing campaign on a many-core machine that has no clang: runs fuzz targets built elsewhere
# (`cmake --build --preset fuzz`, then packed by --pack) through tools/fuzz.sh, one core per target
# (or --fork N workers each), and brings back the table, the grown corpora and any reproducer.
#
# Here (build machine):  tools/device/fuzz_campaign.sh --pack      -> .carry/fuzzbin/fuzz.tar.xz
# There (many cores):    tools/device/fuzz_campaign.sh [fuzz.sh options] [target...]
#   e.g. --jobs 16 --seconds 540 --runs 10000000, or --jobs 2 --fork 7 --seconds 540 plan_header plan_file
# A corpus brought back earlier (.carry/fuzzbin/corpus.tar.xz) is where each target starts.
# Writes $OUT/campaign.txt, $OUT/corpus.tar.xz and $OUT/findings.tar.xz (logs and reproducers).
set -uo pipefail
cd "$(dirname "$0")/../.."
pack=.carry/fuzzbin
if [[ ${1:-} == --pack ]]; then
  mkdir -p "$pack" /tmp/kiln-fuzzbin
  for binary in build/fuzz/tests/fuzz/*_fuzz; do
    strip --strip-debug -o "/tmp/kiln-fuzzbin/$(basename "$binary")" "$binary"  # symbols stay for reports
  done
  tar -C /tmp/kiln-fuzzbin -cf - . | xz -9 -T0 >"$pack/fuzz.tar.xz"
  for lib in libpng16.so.16 libjpeg.so.62 libwebp.so.7 libtomlplusplus.so.3; do
    cp "/lib/x86_64-linux-gnu/$lib" "$pack/"
  done
  ls -l "$pack"
  exit 0
fi
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT" /tmp/kiln-fuzzbin
work=/tmp/kiln-fuzzwork
tar -C /tmp/kiln-fuzzbin -xJf "$pack/fuzz.tar.xz"
export LD_LIBRARY_PATH="$PWD/$pack:${LD_LIBRARY_PATH:-}"
[[ -f $pack/corpus.tar.xz ]] && mkdir -p "$work" && tar -C "$work" -xJf "$pack/corpus.tar.xz"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)" | tee "$OUT/campaign.txt"
echo "started $(date -u +%FT%TZ): tools/fuzz.sh $*" | tee -a "$OUT/campaign.txt"
tools/fuzz.sh --bin /tmp/kiln-fuzzbin --work "$work" "$@" 2>&1 | tee -a "$OUT/campaign.txt"
echo "ended $(date -u +%FT%TZ)" | tee -a "$OUT/campaign.txt"
tar -C "$work" -cJf "$OUT/corpus.tar.xz" corpus
tar -C "$work" -cJf "$OUT/findings.tar.xz" findings $(cd "$work" && ls ./*.log)
