#!/usr/bin/env bash
# Throughput of `kiln bench` on the demo plan (the shipped reduced ResNeSt trained on Fashion-MNIST, built
# with the manifest's defaults) at batch 1 with default options, on an idle machine and beside two busy
# processes: images over the wall time of the timed runs, the worse of two runs each. Prints one table.
#
#   tools/bench_under_load.sh [--kiln PATH] [--spinning]
#
# --kiln: the kiln program (default build/release/kiln). By default kiln chooses how its OpenMP threads
# wait and how many run when it starts (src/sdk/wait_choice.h); each condition's line ends with the choice
# of its worse run. --spinning: run kiln as it ran before it chose, with libgomp's own default spin count
# and a thread per core (GOMP_SPINCOUNT=300000; kiln then leaves OpenMP's settings to libgomp).
set -euo pipefail
cd "$(dirname "$0")/.."

kiln=build/release/kiln
mode=default
while [ $# -gt 0 ]; do
  case "$1" in
    --kiln) kiln="$2"; shift 2 ;;
    --spinning) mode=spinning; shift ;;
    *) echo "usage: $0 [--kiln PATH] [--spinning]" >&2; exit 2 ;;
  esac
done
run_kiln() {
  if [ "$mode" = spinning ]; then env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000 "$kiln" "$@"
  else env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$kiln" "$@"; fi
}

scratch=$(mktemp -d)
busy=()
cleanup() { for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$scratch"; }
trap cleanup EXIT
run_kiln build timm_resnest --checkpoint tests/data/trained/resnest_fashion_tiny/model.safetensors \
  -o "$scratch/demo.kplan" >/dev/null

# images/s of one `kiln bench` run (its JSON's latency.images_per_second), the worse of two, and how that
# run's threads waited (environment.openmp_wait), tab-separated.
worse_of_two() {
  for run in 1 2; do
    run_kiln bench "$scratch/demo.kplan" --json "$scratch/b$run.json" >/dev/null 2>"$scratch/err$run" || {
      cat "$scratch/err$run" >&2; exit 1; }
  done
  python3 -c 'import json,sys
runs = [json.load(open(f)) for f in sys.argv[1:]]
worse = min(runs, key=lambda r: r["latency"]["images_per_second"])
print("%.1f\t%s" % (worse["latency"]["images_per_second"], worse.get("environment", {}).get("openmp_wait", "-")))' \
    "$scratch/b1.json" "$scratch/b2.json"
}
warned() { cat "$scratch/err1" "$scratch/err2" | grep -c "machine was loaded" || true; }

# Other work on the machine when a condition starts: runnable tasks (besides this script) and the load.
others() { awk '{split($4, r, "/"); printf "%d runnable, load %s", r[1] - 1, $1}' /proc/loadavg; }
idle_others=$(others)
idle_run=$(worse_of_two); idle_warnings=$(warned)
idle=${idle_run%%$'\t'*}; idle_waits=${idle_run#*$'\t'}
for _ in 1 2; do sh -c 'while :; do :; done' & busy+=("$!"); done
sleep 2
loaded_others=$(others)
loaded_run=$(worse_of_two); loaded_warnings=$(warned)
loaded=${loaded_run%%$'\t'*}; loaded_waits=${loaded_run#*$'\t'}

printf '%s UTC, %s waits, %s hardware threads, %s\n' "$(date -u '+%F %H:%M')" "$mode" "$(nproc)" "$kiln"
printf '%-20s %10s %20s   %s\n' "machine" "images/s" "runs warned loaded" "other work at the start"
printf '%-20s %10.1f %15s of 2   %s\n' "idle" "$idle" "$idle_warnings" "$idle_others"
printf '%-20s %10.1f %15s of 2   %s\n' "two busy processes" "$loaded" "$loaded_warnings" "$loaded_others"
python3 -c 'import sys; i,l=map(float,sys.argv[1:]); print(f"loaded / idle: {l/i:.3f}")' "$idle" "$loaded"
printf 'threads (idle):   %s\nthreads (loaded): %s\n' "$idle_waits" "$loaded_waits"
