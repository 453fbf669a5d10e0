#!/usr/bin/env bash
# A full-size trained FP8 study in ONE GPU call (H200, at most 9.5 minutes): trains one full-size timm
# classifier on Fashion-MNIST (tools/goldens/train_fashion_mnist.py), records timm's top-1 on the whole
# 10k test set, then runs `kiln study FAMILY --backend cuda` on that checkpoint and the same 10k test
# images, calibrating on the committed 500 training images (never trained on, never tested on). A
# full-size checkpoint cannot come back from the machine (returned files are at most 16 MiB), so the
# call that studies a model trains it first.
#
# Usage (GPU machine):   tools/device/trained_studies.sh MODEL [--deadline S] [--stages 112:30,224:6]
#                          [--variants 'fp32,fp16,fp8 all max'] [--fake-quant-images N] [--no-strict]
#                          [--study-reserve S] [--precision strict|tactic] [--keep | --model-dir DIR]
#                          [--tactics FILE]
#   MODEL                resnet50 | resnest50d | efficientnet_b0
#   --stages             the requested (side:epochs) stages, scaled down to fit the training budget
#   --study-reserve      seconds kept for the study after training (default 360); training gets the rest
#   --precision          strict: every recipe layer FP8 (--strict-precision; the default but for
#                        efficientnet_b0); tactic: layers cuda has no FP8 kernel for, or whose fp16
#                        convolution times faster, stay fp16
#   --keep               also leave the trained checkpoint in .device/trained/MODEL, where a next call on the
#                        same machine (it stays warm for about 30 s) finds it: a full-size checkpoint does
#                        not fit in what travels, so a study longer than one call is split this way
#                        (and, after the study, the study's tactic cache: a next study's builds skip the
#                        tactic search the first one made)
#   --model-dir DIR      no training: study the checkpoint in DIR (model.safetensors, config.json, train.json;
#                        DIR/tactics.txt, when there, seeds the study's tactic cache)
#   --cuda-option N=V    passed to kiln study (repeatable): a cuda option every variant is built with,
#                        e.g. fp8-gemm=off
#   --tactics FILE       seed the study's tactic cache from FILE (plain or .xz): the tactics a study on
#                        another trained checkpoint of the same model timed (a cache entry names shapes,
#                        precisions and epilogues, never weights or scales, so it applies to any
#                        checkpoint); every call returns its cache as $OUT/tactics-MODEL.txt.xz, which
#                        `.carry/tactics/` carries to the next call
# Usage (build machine): tools/device/trained_studies.sh --prepare [--train-limit N] [--train-bits B]
#                        tools/device/trained_studies.sh --dry-run [MODEL]
#   --prepare            writes .carry/fashion-subset (tools/device/fashion_subset.py pack) with as many
#                        training images as the 64 MiB limit leaves room for, and checks the total
#   --dry-run            every step but training and the GPU: the reduced checkpoint of MODEL's family
#                        (tests/data/trained) stands in, kiln studies it on the cpu backend, into $OUT
# Needs `carry: [".carry/gpubin", ".carry/fashion-subset"]` (and ".carry/tactics" with --tactics): .carry/gpubin as for fashion_gpu.sh (kiln.xz
# and the libraries the machine lacks, libdnnl.so.2 xz'd among them) and what --prepare wrote.
# Training gets a time budget (--max-seconds: what is left of the deadline less the study's reserve and
# the trainer's own start and evaluation): it times steps at each side, fits --stages into the budget
# and saves a checkpoint even when the budget runs out; `timeout` only backs that up.
# Writes $OUT/summary.txt (each step and its time), $OUT/train.json (timm's top-1 on the 10k test
# images, the recipe, epoch times, the budget: planned and done epochs, seconds per epoch at each side,
# whether it was cut), $OUT/study/ (STUDY.md, study.json, the two SVGs; the plans stay on the machine)
# and $OUT/logs.tgz (train.log, study.log, gpu.txt).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=${WORK:-/tmp/kiln-trained-study}
CARRY=.carry/fashion-subset
CALIB=tests/data/fashion_mnist/train-first500-calibration
TRAIN_SKIP=500  # the carried training file starts with the calibration subset, which training skips

# Per image, xz'd: 374 bytes at 8 bits per pixel, 274 at 6, 219 at 5 (measured on training images 500..3499).
bytes_per_image() { case "$1" in 8) echo 374 ;; 7) echo 325 ;; 6) echo 275 ;; 5) echo 220 ;; *) echo 170 ;; esac; }

# The bytes left for the training images after the tree, .carry/gpubin and the test images, less a 0.5 MB
# margin for the tree growing before the call.
source tools/device/carry_size.sh
carry_room() {
  local test_bytes=2850000  # t10k-rest-images (2.84 MB) and all test labels
  echo $(( CARRY_LIMIT_BYTES - $(tree_archived_bytes) - $(folders_archived_bytes .carry/gpubin .carry/tactics) \
    - test_bytes - 500000 ))
}

prepare() {
  local limit="" bits=5
  while (( $# > 0 )); do
    case "$1" in --train-limit) limit=$2; shift ;; --train-bits) bits=$2; shift ;; *) echo "unknown option $1"; exit 2 ;; esac
    shift
  done
  # Without the kiln bundle the room cannot be known: give --train-limit then (a dry run needs few).
  [[ -f .carry/gpubin/kiln.xz || -n $limit ]] \
    || { echo "error: make .carry/gpubin first (its size decides how many training images fit)" >&2; exit 1; }
  local room
  room=$(carry_room)
  # The calibration subset travels exact (8 bits); the rest at `bits`.
  [[ -n $limit ]] || limit=$(( (room - TRAIN_SKIP * 374) / $(bytes_per_image "$bits") / 100 * 100 ))
  echo "room for training images: $(( room / 1000 )) kB; packing $limit at $bits bits per pixel"
  rm -rf "$CARRY"
  python3 tools/device/fashion_subset.py pack --out "$CARRY" --train-skip $TRAIN_SKIP --train-limit "$limit" \
    --train-bits "$bits" || exit 1
  echo "$limit" >"$CARRY/train-limit" && echo "$bits" >"$CARRY/train-bits"
  local used
  used=$(du -cb "$CARRY" | tail -1 | cut -f1)
  if (( used > room + 2850000 )); then
    echo "error: $CARRY is $used bytes, over the $(( room + 2850000 )) left: give a smaller --train-limit" >&2
    exit 1
  fi
  echo "ok: $CARRY $used bytes; carry [\".carry/gpubin\", \"$CARRY\"]"
}

case "${1:-}" in
  --prepare) shift; prepare "$@"; exit $? ;;
esac

dry_run=0
[[ ${1:-} == --dry-run ]] && { dry_run=1; shift; }
model=${1:-}
[[ $model == resnet50 || $model == resnest50d || $model == efficientnet_b0 ]] \
  || { [[ $dry_run == 1 && -z $model ]] && model=resnest50d; } \
  || { echo "usage: $0 resnet50|resnest50d|efficientnet_b0 [options]"; exit 2; }
shift || true
deadline=570 stages="" variants="" fake_quant=48 strict=--strict-backend study_reserve=360 precision="" keep=0 model_dir=""
tactics="" cuda_options=()
while (( $# > 0 )); do
  case "$1" in
    --deadline) deadline=$2; shift ;;
    --stages) stages="--stages $2"; shift ;;
    --variants) variants=$2; shift ;;
    --precision) precision=$2; shift ;;
    --fake-quant-images) fake_quant=$2; shift ;;
    --study-reserve) study_reserve=$2; shift ;;
    --no-strict) strict="" ;;
    --keep) keep=1 ;;
    --model-dir) model_dir=$2; shift ;;
    --tactics) tactics=$2; shift ;;
    --cuda-option) cuda_options+=(--cuda-option "$2"); shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done

start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
left() { echo $(( deadline - $(date +%s) + start )); }
log() { echo "[$(elapsed) s] $*" | tee -a "$OUT/summary.txt"; }
rm -rf "$WORK" && mkdir -p "$WORK"

case $model in
  resnet50) family=timm_resnet tiny=resnet_fashion_tiny ;;
  resnest50d) family=timm_resnest tiny=resnest_fashion_tiny ;;
  efficientnet_b0) family=timm_efficientnet tiny=efficientnet_fashion_tiny ;;
esac
# What the study builds, fp32 and fp16 included, at batch 32 (where FP8 convolutions are bound by compute,
# not launch latency). The study shares one tactic cache between its variants (out/plans/tactics.txt),
# yet an FP8 plan's build still times runtime-compiled cuDNN engines: 40-58 s per plan at batch 1 and
# 153 s for resnest50d `all` at batch 32 without the cache (docs/log/PERFORMANCE_LOG.md). So two FP8 recipes fit
# beside training: `all` and the family's fastest partial recipe. The `entropy` calibrator and the `auto`
# search (many per-layer builds) are for a call with time to spare (--variants). The shipped level
# (opt_level 3: timed tactics) is kept, so the timings are the ones a user's build gets; level 0 would
# take cuDNN's heuristic choice and time engines no user runs.
if [[ -z $variants ]]; then
  case $family in
    timm_resnet | timm_resnest) variants="fp32,fp16,fp8 all max,fp8 nose-L1 max" ;;
    # cuDNN's FP8 convolutions need channel counts that are multiples of 16: on cuda the builder keeps the
    # recipe's other layers fp16 (the stem's 3 inputs, the squeeze-excitation convolutions, the 24- and
    # 40-channel stages) and the plan lists them; the precision tactic keeps fp16 where it timed faster.
    timm_efficientnet) variants="fp32,fp16,fp8 all max" ;;
  esac
fi
# One --variants with the whole list: kiln splits it at the commas that start another variant, so a
# pattern recipe's own commas (exclude=*.conv_dw,*.se.*) stay in it.
variant_args=(--variants "$variants")

if (( dry_run )); then
  KILN=${KILN:-build/release/kiln}
  backend=cpu strict=""
else
  if [[ -f .carry/gpubin/kiln.xz ]]; then
    mkdir -p .carry/bin && cp .carry/gpubin/* .carry/bin/
    python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' \
      .carry/bin/kiln.xz .carry/bin/kiln && chmod +x .carry/bin/kiln && rm .carry/bin/kiln.xz
  fi
  source tools/device/cuda_env.sh
  backend=cuda
fi
log "model $model (family $family), backend $backend, deadline $deadline s"

# 1. The data: the 10k test set reassembled (the first 2500 from the tree) and checked, the training subset.
python3 tools/device/fashion_subset.py unpack --carry "$CARRY" --out "$WORK/fashion" >>"$OUT/summary.txt" 2>&1 \
  || { log "data: unpack failed"; tail -3 "$OUT/summary.txt"; exit 1; }
"$KILN" dataset import-idx --idx-images "$WORK/fashion/t10k-images-idx3-ubyte" --idx-labels "$WORK/fashion/t10k-labels-idx1-ubyte" \
  --names tests/data/fashion_mnist/classes.txt --prefix fashion-mnist-t10k -o "$WORK/t10k" >"$WORK/import.log" 2>&1 \
  || { log "data: import-idx failed: $(tail -1 "$WORK/import.log")"; exit 1; }
log "data ready: 10000 test images as $WORK/t10k, $(( $(stat -c %s "$WORK/fashion/train-labels-idx1-ubyte") - 8 )) training images"

# 2. Training (timm), within a budget that leaves the study its share of the call.
train_limit=$(( $(cat "$CARRY/train-limit" 2>/dev/null || echo 0) ))
# The study's share (--study-reserve, default 360 s): builds (~250 s: fp32 twice, the second from the
# tactic cache; fp16; two FP8), four evaluations of 10k images (~40 s), timing (~20 s), the fake-quant
# check (~20 s), margin.
# The trainer's time outside its budget: importing torch and timm, loading the data and the model
# (~15 s), then saving and timm's evaluation of the 10k test images as PIL images (~20 s).
trainer_outside=40
budget=$(( $(left) - study_reserve - trainer_outside ))
# The backstop for a trainer that hangs: it may take 30 s of the study's reserve, no more.
backstop=$(( budget + trainer_outside + 30 ))
log "training: budget $budget s (--max-seconds), backstop timeout $backstop s, $train_limit training images"
if [[ -n $model_dir ]]; then
  [[ -f $model_dir/model.safetensors ]] || { log "$model_dir: no model.safetensors (the machine may have gone cold)"; exit 1; }
  checkpoint_dir=$model_dir
  cp "$checkpoint_dir/train.json" "$OUT/train.json"
  log "no training: the checkpoint in $model_dir"
  if [[ -f $model_dir/tactics.txt ]]; then
    mkdir -p "$WORK/study/plans" && cp "$model_dir/tactics.txt" "$WORK/study/plans/tactics.txt"
    log "tactic cache seeded from $model_dir/tactics.txt ($(wc -l <"$model_dir/tactics.txt") lines)"
  fi
elif (( dry_run )); then
  checkpoint_dir=tests/data/trained/$tiny
  cp "$checkpoint_dir/train.json" "$OUT/train.json"
  log "dry run: no training; the reduced $tiny stands in"
else
  (( train_limit > 0 )) || { log "no $CARRY/train-limit: run --prepare on the build machine"; exit 1; }
  (( budget >= 60 )) || { log "only $budget s left for training: stopping"; exit 1; }
  # shellcheck disable=SC2086 # $stages is an optional option and its value
  PYTHONUNBUFFERED=1 timeout $backstop python3 tools/goldens/train_fashion_mnist.py \
    --data "$WORK/fashion" --out "$WORK/models" --models "${model}_fashion" --train-skip $TRAIN_SKIP \
    --train-limit "$train_limit" --workers 12 --max-seconds "$budget" $stages >"$OUT/train.log" 2>&1
  rc=$?
  checkpoint_dir=$WORK/models/${model}_fashion
  cp "$checkpoint_dir/train.json" "$OUT/train.json" 2>/dev/null
  grep -E "ms per step|budget" "$OUT/train.log" | sed 's/^ *//' | tee -a "$OUT/summary.txt"
  log "training rc $rc$( (( rc == 124 )) && echo ' (backstop timeout)'): $(grep -E 'timm top-1' "$OUT/train.log" | tail -1)"
  [[ -f $checkpoint_dir/model.safetensors ]] || { log "no checkpoint: stopping"; tail -5 "$OUT/train.log" >>"$OUT/summary.txt"; exit 1; }
  if (( keep )); then
    rm -rf ".device/trained/$model" && mkdir -p ".device/trained/$model"
    cp "$checkpoint_dir"/{model.safetensors,config.json,train.json} ".device/trained/$model/" \
      && log "kept in .device/trained/$model"
  fi
fi

# 3. The study on the whole test set, ended cleanly before the call's deadline.
if [[ -n $tactics ]]; then
  mkdir -p "$WORK/study/plans"
  python3 -c 'import lzma, sys; data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(lzma.decompress(data) if sys.argv[1].endswith(".xz") else data)' \
    "$tactics" "$WORK/study/plans/tactics.txt" \
    && log "tactic cache seeded from $tactics ($(wc -l <"$WORK/study/plans/tactics.txt") lines)" \
    || log "$tactics: could not be read; the study times its tactics"
fi
study_limit=$(( $(left) - 10 ))
(( study_limit > 60 )) || { log "study skipped: $study_limit s left"; exit 0; }
# The whole test set at batch 32, one speed-matrix cell (the study's own: no extra builds), 3 short rounds.
images=10000 rounds=3 round=500ms
(( dry_run )) && images=400 fake_quant=16 rounds=1 round=50ms  # the reduced model on the CPU: a short run
study_args=(study "families/$family" --checkpoint "$checkpoint_dir/model.safetensors" --data "$WORK/t10k"
  --calib "$CALIB" --backend "$backend" --batch 32 --batches 32 --opt-levels 3 --images "$images"
  --rounds "$rounds" --seconds-per-round "$round" --fake-quant-images "$fake_quant" "${variant_args[@]}"
  -o "$WORK/study")
[[ -n $strict ]] && study_args+=("$strict")
study_args+=("${cuda_options[@]}")
# Every recipe layer stays FP8 (no precision tactic): the study measures what FP8 costs in accuracy on
# the layers the recipe names, and its fp16 compiles would take the time the evaluation needs. Not for
# EfficientNet: a third of its convolutions have channel counts cuDNN's FP8 kernels cannot take, which a
# strict-precision build refuses; without it they stay fp16 and the report lists them.
[[ -n $precision ]] || { [[ $family == timm_efficientnet ]] && precision=tactic || precision=strict; }
(( dry_run )) || [[ $precision == tactic ]] || study_args+=(--strict-precision)
log "study: timeout $study_limit s: kiln ${study_args[*]}"
timeout "$study_limit" "$KILN" "${study_args[@]}" >"$OUT/study.log" 2>&1
rc=$?
log "study rc $rc$( (( rc == 124 )) && echo ' (timed out: no report; study.log has how far it got)')"
mkdir -p "$OUT/study"
cp "$WORK"/study/{STUDY.md,study.json,latency.svg,accuracy_vs_speed.svg} "$OUT/study/" 2>/dev/null
# The tactics travel back (xz'd, a few MB) so that a later call's study can start from them (--tactics).
if [[ -f $WORK/study/plans/tactics.txt ]]; then
  python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.compress(open(sys.argv[1], "rb").read()))' \
    "$WORK/study/plans/tactics.txt" "$OUT/tactics-$model.txt.xz" \
    && log "tactic cache returned: tactics-$model.txt.xz ($(stat -c %s "$OUT/tactics-$model.txt.xz") bytes)"
fi
# Kept even when the study timed out: the tactics it found spare the next study on this machine their search.
if (( keep )) && [[ -f $WORK/study/plans/tactics.txt ]]; then
  cp "$WORK/study/plans/tactics.txt" ".device/trained/$model/tactics.txt" && log "tactic cache kept in .device/trained/$model"
fi
[[ -f $OUT/study/STUDY.md ]] && sed -n '/^## Summary/,/^## Recipe/p' "$OUT/study/STUDY.md" | head -20 | tee -a "$OUT/summary.txt"
log "done"
# At most 8 files come back from the machine: the logs travel as one archive so that study.json fits.
(cd "$OUT" && tar czf logs.tgz --ignore-failed-read train.log study.log gpu.txt 2>/dev/null \
  && rm -f train.log study.log gpu.txt)
