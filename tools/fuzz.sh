#!/usr/bin/env bash
# Builds the fuzz preset (clang, libFuzzer, ASan + UBSan) and runs fuzz targets on their seed corpora
# (tests/fuzz/corpus/<target>/, with <target>.dict where there is one).
# Usage: tools/fuzz.sh [--seconds N] [--runs N] [--list] [target...]
#   --seconds N  run each target for N seconds (default 10)
#   --runs N     stop each target after N inputs instead (0: build only)
#   target       safetensors, npy, ... (default: every target; --list prints them)
# New inputs a run finds go to build/fuzz/corpus/<target>/, never into the committed seeds; a finding
# (crash, sanitizer report, an exception other than kiln::Error, a leak, an allocation over 512 MiB, an
# input taking over 10 s) stops the target, leaves the reproducer in build/fuzz/findings/<target>/ and
# makes the script exit 1 after the other targets ran.
set -euo pipefail
cd "$(dirname "$0")/.."

targets_all=(safetensors npy plan_header plan_file manifest timm_config yolo_config jpeg png webp webdataset
  labels calibration_cache tactic_cache yolo_labels)
seconds=10
runs=""
targets=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --list) printf '%s\n' "${targets_all[@]}"; exit 0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${targets_all[@]}")
for target in "${targets[@]}"; do
  [[ " ${targets_all[*]} " == *" $target "* ]] || { echo "fuzz.sh: unknown target '$target'" >&2; exit 2; }
done

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)" --target "${targets[@]/%/_fuzz}"
[[ $runs == 0 ]] && exit 0

limit=(-max_total_time="$seconds")
[[ -n $runs ]] && limit=(-runs="$runs")
failed=()
for target in "${targets[@]}"; do
  work=build/fuzz/corpus/$target findings=build/fuzz/findings/$target
  mkdir -p "$work" "$findings"
  dict=()
  [[ -f tests/fuzz/corpus/$target.dict ]] && dict=(-dict="tests/fuzz/corpus/$target.dict")
  echo "fuzz.sh: $target (started $(date -u +%FT%TZ))"
  rc=0
  build/fuzz/tests/fuzz/"$target"_fuzz "${limit[@]}" "${dict[@]}" -malloc_limit_mb=512 -rss_limit_mb=2048 \
    -timeout=10 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
    "$work" "tests/fuzz/corpus/$target" >"build/fuzz/$target.log" 2>&1 || rc=$?
  grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|SUMMARY|==[0-9]+==ERROR|artifact_prefix|Test unit written)' \
    "build/fuzz/$target.log" | tail -n 8 || true
  if ((rc != 0)); then failed+=("$target"); fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in ${failed[*]} (reproducers in build/fuzz/findings/, logs in build/fuzz/<target>.log)" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets ran without findings"
