#!/usr/bin/env bash
# Builds the fuzz preset (clang, libFuzzer, ASan + UBSan) and runs fuzz targets on their seed corpora
# (tests/fuzz/corpus/<target>/, with <target>.dict where there is one).
# Usage: tools/fuzz.sh [--seconds N] [--runs N] [--jobs N] [--fork N] [--bin DIR] [--work DIR] [--list]
#          [target...]
#   --seconds N  run each target for at most N seconds (default 10)
#   --runs N     stop each target after N inputs (with --seconds: whichever comes first; 0: build only)
#   --jobs N     run N targets at once, one process each (default 1)
#   --fork N     each target fuzzes in N worker processes (libFuzzer's -fork; --runs does not apply)
#   --bin DIR    use the <target>_fuzz binaries in DIR instead of building (a machine without clang)
#   --work DIR   where corpora, findings and logs go (default build/fuzz)
#   target       safetensors, npy, ... (default: every target; --list prints them)
# New inputs a run finds go to WORK/corpus/<target>/, never into the committed seeds; a finding (crash,
# sanitizer report, an exception other than kiln::Error, a leak, an allocation over 512 MiB, an input
# taking over 10 s) stops the target, leaves the reproducer in WORK/findings/<target>/ and makes the
# script exit 1 after the other targets ran. Ends with a table: executions, rate, peak memory per target.
set -euo pipefail
cd "$(dirname "$0")/.."

targets_all=(safetensors npy plan_header plan_file manifest timm_config yolo_config jpeg png webp webdataset
  labels calibration_cache tactic_cache idx yolo_labels)
seconds=10 runs="" jobs=1 fork="" bin="" work=build/fuzz
targets=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --fork) fork=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --list) printf '%s\n' "${targets_all[@]}"; exit 0 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${targets_all[@]}")
for target in "${targets[@]}"; do
  [[ " ${targets_all[*]} " == *" $target "* ]] || { echo "fuzz.sh: unknown target '$target'" >&2; exit 2; }
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs must be a positive number, not '$jobs'" >&2; exit 2; }
[[ -z $fork || $fork =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --fork must be a positive number" >&2; exit 2; }
[[ -z $fork || -z $runs ]] || { echo "fuzz.sh: --runs does not apply with --fork; give --seconds" >&2; exit 2; }

if [[ -z $bin ]]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$(nproc)" --target "${targets[@]/%/_fuzz}"
  bin=build/fuzz/tests/fuzz
fi
[[ $runs == 0 ]] && exit 0
# The targets hand their input to kiln's readers as a file: on a memory file system that costs
# microseconds, on a disk-backed /tmp it can cost milliseconds of waiting per input.
[[ -d /dev/shm && -w /dev/shm ]] && export TMPDIR=/dev/shm

limit=(-max_total_time="$seconds")
[[ -n $runs ]] && limit+=(-runs="$runs")
[[ -n $fork ]] && limit+=(-fork="$fork")
mkdir -p "$work"

# One target: its log in WORK/<target>.log, exit status in WORK/<target>.rc.
fuzz_one() {
  local target=$1 corpus=$work/corpus/$1 findings=$work/findings/$1 dict=()
  mkdir -p "$corpus" "$findings"
  [[ -f tests/fuzz/corpus/$target.dict ]] && dict=(-dict="tests/fuzz/corpus/$target.dict")
  echo "fuzz.sh: $target (started $(date -u +%FT%TZ))"
  local rc=0 start=$SECONDS
  "$bin/${target}_fuzz" "${limit[@]}" "${dict[@]}" -malloc_limit_mb=512 -rss_limit_mb=2048 \
    -timeout=10 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
    "$corpus" "tests/fuzz/corpus/$target" >"$work/$target.log" 2>&1 || rc=$?
  echo "$rc $((SECONDS - start))" >"$work/$target.rc"
}

for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  fuzz_one "$target" &
done
wait

failed=()
printf '%-18s %12s %9s %8s %8s %s\n' target executions exec/s seconds rss_mb result
for target in "${targets[@]}"; do
  log=$work/$target.log
  read -r rc took <"$work/$target.rc"
  final_stat() { grep -m1 "^stat::$1:" "$log" | awk '{print $2}' || true; }
  executions=$(final_stat number_of_executed_units) rate=$(final_stat average_exec_per_sec)
  if [[ -n $fork ]]; then  # the parent's last progress line holds the total over its workers
    executions=$(grep -oE '^#[0-9]+:' "$log" | tail -1 | tr -d '#:' || true)
    rate=$((${executions:-0} / (took > 0 ? took : 1)))
  fi
  result=ok
  if ((rc != 0)); then
    failed+=("$target")
    result="FINDING ($(grep -m1 -E 'SUMMARY|==ERROR|deadly signal|Test unit written' "$log" | cut -c1-80))"
  fi
  printf '%-18s %12s %9s %8s %8s %s\n' "$target" "$executions" "$rate" "$took" \
    "$(final_stat peak_rss_mb)" "$result"
done
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in ${failed[*]} (reproducers in $work/findings/, logs in $work/<target>.log)" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets ran without findings"
