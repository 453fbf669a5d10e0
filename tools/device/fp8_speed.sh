#!/usr/bin/env bash
# Runs on the GPU machine (H200): FP8 against fp16 on the CUDA backend, the same plan kinds at the same
# batches in one call. Full-size timm models (random weights, made here by make_timm_goldens.py), FP8
# recipes calibrated on the shipped photos; every plan is benchmarked by `kiln bench --backend cuda`
# (device events around CUDA-graph replays) with --profile, and one table gives latency, throughput, the
# FP8 / fp16 ratio, the quantization group's share of kernel time and the build time.
#
# Usage: tools/device/fp8_speed.sh [--models resnet50,resnest50d] [--batches 1,32] [--recipes all,nose-L1]
#          [--opt-level N]
#   a recipe written RECIPE:strict builds with --strict-precision (every recipe layer FP8), e.g.
#   --recipes all,all:strict compares the precision tactic's plan with the all-FP8 one; RECIPE:residuals
#   with --quantize-residuals (the residual stream in E4M3); RECIPE:strict:residuals both; RECIPE:int8 an
#   int8 plan of the recipe (kiln's Hopper kernel), e.g. --recipes all,all:residuals,all:int8.
# Needs `carry: [".carry/bin"]` (kiln and the libraries the machine lacks: see bench_cuda.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-fp8-speed
rm -rf "$WORK" && mkdir -p "$WORK"
models="resnet50 resnest50d" batches="1 32" recipes="all" opt=3
while (( $# > 0 )); do
  case "$1" in
    --models) models="${2//,/ }"; shift ;;
    --batches) batches="${2//,/ }"; shift ;;
    --recipes) recipes="${2//,/ }"; shift ;;
    --opt-level) opt=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
[[ -n "${KILN:-}" ]] || source tools/device/cuda_env.sh

family_of() { case "$1" in resnest*) echo timm_resnest ;; resnet*) echo timm_resnet ;; esac; }

start=$(date +%s)
PYTHONUNBUFFERED=1 python3 tools/goldens/make_timm_goldens.py --photos tests/data/photos --out "$WORK/goldens" \
  --models "$(echo $models | tr ' ' ',')" --skip-preprocess --device cuda >"$OUT/fp8_goldens.log" 2>&1 \
  || tail -5 "$OUT/fp8_goldens.log"
log "== fp8 speed: goldens $(( $(date +%s) - start )) s"

# build_and_bench NAME BATCH TAG BUILD-ARGS...: one plan, benched; its JSON is OUT/fp8_NAME_bBATCH_TAG.json.
build_and_bench() {
  local name=$1 batch=$2 tag=$3; shift 3
  local plan="$WORK/$name.b$batch.$tag.kplan" began=$(date +%s)
  "$KILN" build "$(family_of "$name")" --checkpoint "$WORK/goldens/$name/model.safetensors" --batch "$batch" \
    --opt-level "$opt" --backend cuda --strict-backend --tactic-cache "$WORK/tactics.txt" "$@" -o "$plan" \
    >>"$OUT/fp8_build.log" 2>&1 || { log "  $name b$batch $tag: build failed: $(tail -1 "$OUT/fp8_build.log" | cut -c1-200)"; return; }
  echo "$name b$batch $tag $(( $(date +%s) - began ))" >>"$WORK/build_seconds.txt"
  log "  $name b$batch $tag: $(grep '^built' "$OUT/fp8_build.log" | tail -1 | cut -d: -f2-)"
  "$KILN" inspect "$plan" --json "$WORK/inspect_${name}_b${batch}_$tag.json" >/dev/null 2>&1
  "$KILN" bench "$plan" --backend cuda --warmup 1s --duration 3s --profile --profile-iterations 20 \
    --json "$WORK/fp8_${name}_b${batch}_$tag.json" --verbose >>"$OUT/fp8_bench.log" 2>&1 \
    || log "  $name b$batch $tag: bench failed: $(tail -1 "$OUT/fp8_bench.log" | cut -c1-200)"
}

for name in $models; do
  [[ -f "$WORK/goldens/$name/model.safetensors" ]] || { log "  $name: no checkpoint"; continue; }
  for batch in $batches; do
    build_and_bench "$name" "$batch" fp16 --precision fp16
    for recipe in $recipes; do
      # RECIPE:strict keeps every layer of the recipe FP8 (--strict-precision: no precision tactic);
      # RECIPE:residuals holds the residual stream in E4M3 (--quantize-residuals); both may be given.
      # RECIPE:int8 builds an int8 plan instead of an FP8 one.
      precision=fp8
      [[ $recipe == *:int8* ]] && precision=int8
      local_args=() tag="$precision-${recipe%%:*}"
      [[ $recipe == *:strict* ]] && local_args+=(--strict-precision) tag="$tag-strict"
      [[ $recipe == *:residuals* ]] && local_args+=(--quantize-residuals) tag="$tag-residuals"
      build_and_bench "$name" "$batch" "$tag" --precision "$precision" --recipe "${recipe%%:*}" \
        --calib tests/data/photos --every 1 "${local_args[@]}"
    done
  done
done

python3 - "$WORK" <<'PY' | tee -a "$OUT/summary.txt"
import glob, json, os, sys
work = sys.argv[1]
seconds = {}
for line in open(os.path.join(work, "build_seconds.txt")) if os.path.exists(os.path.join(work, "build_seconds.txt")) else []:
    name, batch, tag, s = line.split()
    seconds[(name, batch[1:], tag)] = int(s)
rows = {}
for path in sorted(glob.glob(os.path.join(work, "fp8_*.json"))):
    name, batch, tag = os.path.basename(path)[4:-5].split("_", 2)
    rows[(name, batch[1:], tag)] = json.load(open(path))
print("| model | batch | plan | median ms | img/s | vs fp16 | quantize share | build s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for (name, batch, tag), r in sorted(rows.items(), key=lambda kv: (kv[0][0], int(kv[0][1]), kv[0][2])):
    ms = r["latency"]["median_ms"]
    base = rows.get((name, batch, "fp16"))
    ratio = f"{base['latency']['median_ms'] / ms:.2f}x" if base else "-"
    groups = r.get("profile", {}).get("groups_ms", {})
    total = sum(groups.values()) or float("nan")
    share = groups.get("quantization", 0.0) / total
    print(f"| {name} | {batch} | {tag} | {ms:.3f} | {int(batch) * 1000 / ms:,.0f} | {ratio} | {share:.1%} | "
          f"{seconds.get((name, batch, tag), '-')} |")
PY
# What the precision tactic chose per FP8 plan: the layers it kept fp16, with both times.
python3 - "$WORK" "$OUT/precision_tactic.json" <<'PY' | tee -a "$OUT/summary.txt"
import glob, json, os, sys
chosen = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "inspect_*.json"))):
    tactic = json.load(open(path)).get("quantization", {}).get("precision_tactic")
    if tactic is None:
        continue
    name = os.path.basename(path)[8:-5]
    chosen[name] = tactic
    kept = tactic["kept_fp16"]
    print(f"precision tactic {name}: {len(kept)} of {tactic['compared']} compared layers kept fp16; "
          f"those take {sum(k['fp8_us'] for k in kept):.1f} us in FP8, {sum(k['fp16_us'] for k in kept):.1f} us in fp16")
json.dump(chosen, open(sys.argv[2], "w"), indent=1)
PY
cp "$WORK"/fp8_*.json "$OUT/" 2>/dev/null
cp "$WORK/tactics.txt" "$OUT/fp8_tactics.txt" 2>/dev/null
