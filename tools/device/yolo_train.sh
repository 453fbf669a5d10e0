#!/usr/bin/env bash
# A trained detector's FP8 study in ONE GPU call (H200, at most 9.5 minutes): trains a yolov10n on
# Fashion-MNIST items pasted on photos with the YOLOv10 authors' ultralytics package
# (tools/goldens/train_yolo_fashion.py), then runs `kiln study yolov10 --backend cuda` on it.
#   1. a training split (--train-images) and a validation split (--val-images) made here by
#      tools/goldens/make_fashion_detection.py: training items from Fashion-MNIST's training set, validation
#      items from its test set, so no training item appears in the validation images;
#   2. yolov10n trained from scratch for --minutes at 320 x 320 (the images' longer side), exported in
#      the Hub layout kiln's yolov10 family loads (also kept in .device/yolo-model for a later call on the
#      same, still warm machine: a full checkpoint with kiln's bundle does not fit in what travels);
#   3. `kiln study yolov10 --backend cuda` on the trained checkpoint and the validation split, given what
#      is left of --deadline.
#
# Usage (GPU machine):   tools/device/yolo_train.sh [--train-images N] [--val-images N] [--minutes M]
#                          [--deadline S] [--model DIR] [--peer DIR]
#   --train-images  training images to make (default 4000)
#   --val-images    validation images to make; the study samples all of them (default 1000)
#   --minutes       training time budget (default 3)
#   --deadline      seconds from the start by which the study must end (default 560)
#   --model DIR     no training: study the checkpoint in DIR (model.safetensors, config.json, and
#                   summary.json naming its validation split), e.g. .device/yolo-model of an earlier call
#   --peer          the YOLOv10 authors' repository (default .carry/shared/peers/yolov10)
#   --variants LIST the study's variants instead of the manifest's (kiln study --variants)
#   --strict-precision  every recipe layer FP8 (kiln study --strict-precision); by default layers cuda has
#                   no FP8 kernel for, or whose fp16 convolution times faster, stay fp16
#   --no-study      train only and bring the checkpoint back ($OUT/model/model.safetensors, about 11 MB):
#                   needs no kiln, so only `carry: [".carry/fashion", ".carry/shared"]`
# Usage (build machine): tools/device/yolo_train.sh --prepare [--train-items N] [--test-items N]
#   --prepare       writes .carry/fashion: the first N items of Fashion-MNIST's training and test IDX pairs
#                   (defaults 6000 and 2500, gzip) from /usr/share/datasets/fashion-mnist, copies
#                   ../shared/peers/yolov10 into .carry/shared/peers, and checks what travels
# Needs `carry: [".carry/gpubin", ".carry/fashion", ".carry/shared"]`, python3 with torch (CUDA),
# safetensors, PyYAML, cv2 and PIL, and the kiln bundle (.carry/gpubin, as for fashion_gpu.sh).
# Writes under $OUT: summary.txt, train_summary.json, model/config.json, study/ (STUDY.md, study.json, the
# charts) and logs.tgz (make_data.log, train.log, study.log, gpu.txt).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-yolo
IDX_CARRY=.carry/fashion
PEER_CARRY=.carry/shared/peers/yolov10
KEEP=.device/yolo-model

# Truncated IDX pairs: the header's item count is rewritten, the body cut after the first `count` items.
truncate_idx() {
  python3 - "$@" <<'PY'
import gzip, sys
source, target, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = gzip.open(source, "rb").read()
rank = data[3]
dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
item = 1
for d in dims[1:]:
    item *= d
count = min(count, dims[0])
header = data[:4] + count.to_bytes(4, "big") + data[8:4 + 4 * rank]
with open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out:
    out.write(header + data[4 + 4 * rank:4 + 4 * rank + count * item])
PY
}

prepare() {
  local train_items=6000 test_items=2500 source=/usr/share/datasets/fashion-mnist
  while (( $# > 0 )); do
    case "$1" in
      --train-items) train_items=$2; shift ;;
      --test-items) test_items=$2; shift ;;
      *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
  done
  [[ -f $source/train-images-idx3-ubyte.gz ]] || { echo "error: $source: install dataset-fashion-mnist" >&2; exit 1; }
  [[ -d ../shared/peers/yolov10/ultralytics ]] || { echo "error: ../shared/peers/yolov10: no ultralytics package" >&2; exit 1; }
  rm -rf "$IDX_CARRY" "$PEER_CARRY" && mkdir -p "$IDX_CARRY" "$(dirname "$PEER_CARRY")"
  for part in images-idx3 labels-idx1; do
    truncate_idx "$source/train-$part-ubyte.gz" "$IDX_CARRY/train-$part-ubyte.gz" "$train_items" || exit 1
    truncate_idx "$source/t10k-$part-ubyte.gz" "$IDX_CARRY/t10k-$part-ubyte.gz" "$test_items" || exit 1
  done
  cp -r ../shared/peers/yolov10 "$PEER_CARRY" && find "$PEER_CARRY" -name __pycache__ -prune -exec rm -rf {} +
  source tools/device/carry_size.sh
  local total
  total=$(( $(tree_archived_bytes) + $(folders_archived_bytes .carry/gpubin "$IDX_CARRY" .carry/shared) ))
  echo "travels: $(( total / 1000 )) kB of $(( CARRY_LIMIT_BYTES / 1000 )) kB (tree, .carry/gpubin, $IDX_CARRY, .carry/shared)"
  (( total < CARRY_LIMIT_BYTES - 300000 )) \
    || { echo "error: over the limit less a 0.3 MB margin: give fewer --train-items or --test-items" >&2; exit 1; }
  echo "ok: carry [\".carry/gpubin\", \"$IDX_CARRY\", \".carry/shared\"]"
}

[[ ${1:-} == --prepare ]] && { shift; prepare "$@"; exit $?; }

train_images=4000 val_images=1000 minutes=3 deadline=560 model="" peer=$PEER_CARRY study_args=() study=1
while (( $# > 0 )); do
  case "$1" in
    --train-images) train_images=$2; shift ;;
    --val-images) val_images=$2; shift ;;
    --minutes) minutes=$2; shift ;;
    --deadline) deadline=$2; shift ;;
    --model) model=$2; shift ;;
    --peer) peer=$2; shift ;;
    --variants) study_args+=(--variants "$2"); shift ;;
    --strict-precision) study_args+=(--strict-precision) ;;
    --no-study) study=0 ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
start=$(date +%s)
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(( $(date +%s) - start )); }
pack_logs() { (cd "$OUT" && tar czf logs.tgz --ignore-failed-read make_data.log train.log study.log gpu.txt 2>/dev/null \
  && rm -f make_data.log train.log study.log gpu.txt); }
trap pack_logs EXIT
# cuda_env.sh unpacks what is in .carry/bin (xz) and finds kiln there; training alone needs no kiln.
if (( study )); then
  [[ -d .carry/gpubin ]] && mkdir -p .carry/bin && cp .carry/gpubin/* .carry/bin/
  source tools/device/cuda_env.sh
else
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
fi

# Makes the validation split and trains; leaves the checkpoint in $KEEP.
make_data_and_train() {
  [[ -d $peer/ultralytics ]] || { log "no ultralytics package under $peer"; return 1; }
  rm -rf "$WORK" && mkdir -p "$WORK"
  # Seeds: the training split draws from stream (7, 0), the validation split from (8, 1), neither the
  # stream of the committed tests/data/fashion_detect (7, 1).
  python3 tools/goldens/make_fashion_detection.py --out "$WORK/fashion_val" --train 0 --val "$val_images" \
    --size 320 --seed 8 --quality 85 --idx "$IDX_CARRY" >"$OUT/make_val.log" 2>&1 &
  local val_pid=$!
  python3 tools/goldens/make_fashion_detection.py --out "$WORK/fashion_train" --train "$train_images" --val 0 \
    --size 320 --seed 7 --quality 85 --idx "$IDX_CARRY" >"$OUT/make_data.log" 2>&1
  local train_rc=$?
  wait "$val_pid"
  local val_rc=$?
  cat "$OUT/make_val.log" >>"$OUT/make_data.log" && rm -f "$OUT/make_val.log"
  (( train_rc == 0 && val_rc == 0 )) \
    || { log "make_fashion_detection failed"; tail -5 "$OUT/make_data.log" | tee -a "$OUT/summary.txt"; return 1; }
  log "data: $(ls "$WORK/fashion_train/images/train" | wc -l) training, $(ls "$WORK/fashion_val/images/val" | wc -l) validation images ($(cat "$WORK"/fashion_val/labels/val/*.txt | wc -l) boxes) at $(elapsed) s"

  PYTHONUNBUFFERED=1 timeout $(( deadline - $(elapsed) - 60 )) python3 tools/goldens/train_yolo_fashion.py \
    --peer "$peer" --train "$WORK/fashion_train" --val "$WORK/fashion_val" --out "$WORK/model" \
    --minutes "$minutes" --imgsz 320 --batch 64 --workers 12 >"$OUT/train.log" 2>&1
  local rc=$?
  log "training rc $rc at $(elapsed) s"
  (( rc == 0 )) || { tail -20 "$OUT/train.log" | tee -a "$OUT/summary.txt"; return 1; }
  rm -rf "$KEEP" && mkdir -p "$KEEP"
  cp "$WORK/model/model.safetensors" "$WORK/model/config.json" "$WORK/model/summary.json" "$KEEP/"
  cp -r "$WORK/fashion_val" "$KEEP/fashion_val"
  tail -1 "$OUT/train.log" | tee -a "$OUT/summary.txt"
}

if [[ -z $model ]]; then
  make_data_and_train || exit 1
  model=$KEEP
fi
[[ -f $model/model.safetensors && -d $model/fashion_val ]] || { log "$model: no model.safetensors or fashion_val"; exit 1; }
mkdir -p "$OUT/model" && cp "$model/config.json" "$OUT/model/" && cp "$model/summary.json" "$OUT/train_summary.json"
sha256sum "$model/model.safetensors" | tee -a "$OUT/summary.txt"
if (( ! study )); then
  cp "$model/model.safetensors" "$OUT/model/" && log "checkpoint in \$OUT/model at $(elapsed) s"
  exit 0
fi

# The study: every validation image (one in ten calibrates, the rest are held out); a trained model's
# boxes are compared from score 0.25, as `kiln eval` compares them. The plans stay on the machine.
left=$(( deadline - $(elapsed) ))
log "kiln study with $left s left"
timeout "$left" "$KILN" study families/yolov10 --checkpoint "$model/model.safetensors" \
  --data "$model/fashion_val" --backend cuda --images "$(ls "$model/fashion_val/images/val" | wc -l)" --every 10 \
  --rounds 5 --seconds-per-round 1s --min-score 0.25 --resamples 1000 ${study_args[@]+"${study_args[@]}"} -o "$OUT/study" >"$OUT/study.log" 2>&1
rc=$?
log "kiln study rc $rc at $(elapsed) s"
(( rc == 0 )) || tail -20 "$OUT/study.log" | tee -a "$OUT/summary.txt"
rm -rf "$OUT/study/plans"
sed -n '/## Summary and decision/,/## Recipe/p' "$OUT/study/STUDY.md" 2>/dev/null | head -40 | tee -a "$OUT/summary.txt"
log "done at $(elapsed) s"
