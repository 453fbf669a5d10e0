#!/usr/bin/env bash
# Runs on the GPU machine (H200): trains a yolov10n on Fashion-MNIST items pasted on photos with the
# YOLOv10 authors' ultralytics package (tools/goldens/train_yolo_fashion.py), then runs the detector
# study on it on the CUDA backend, measured on the shipped fashion_detect val set.
#   1. a fashion_detect *training* split made here by tools/goldens/make_fashion_detection.py from the
#      Fashion-MNIST training items (the IDX pair carried in --idx; its test items make the val set,
#      which is tests/data/fashion_detect, so no training item appears in it);
#   2. yolov10n trained from scratch for --minutes, at 320 x 320 (the images' longer side), exported in
#      the Hub layout kiln's yolov10 family loads;
#   3. `kiln study yolov10 --backend cuda` on the trained checkpoint and tests/data/fashion_detect.
#
# Usage: tools/device/yolo_train.sh [--idx DIR] [--peer DIR] [--train-images N] [--minutes M]
#   --idx           train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz (default .carry/fashion)
#   --peer          the YOLOv10 authors' repository (default shared/peers/yolov10)
#   --train-images  training images to make (default 4000)
#   --minutes       training time budget (default 3)
# Needs python3 with torch (CUDA), safetensors, PyYAML, cv2 and PIL, and a kiln with the CUDA backend
# (tools/device/cuda_env.sh: .carry/gpubin or a build here). Writes under $OUT: summary.txt, train.log,
# train_summary.json, model/ (model.safetensors, config.json), study/ (STUDY.md, study.json, charts).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kiln-out}
mkdir -p "$OUT"
WORK=/tmp/kiln-yolo
rm -rf "$WORK" && mkdir -p "$WORK"
idx=.carry/fashion peer=shared/peers/yolov10 train_images=4000 minutes=3
while (( $# > 0 )); do
  case "$1" in
    --idx) idx=$2; shift ;;
    --peer) peer=$2; shift ;;
    --train-images) train_images=$2; shift ;;
    --minutes) minutes=$2; shift ;;
    *) echo "unknown option $1"; exit 2 ;;
  esac
  shift
done
start=$(date +%s)
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(( $(date +%s) - start )); }
[[ -d $peer/ultralytics ]] || { log "no ultralytics package under $peer"; exit 1; }

if [[ -f .carry/gpubin/kiln.xz ]]; then
  mkdir -p .carry/bin && cp .carry/gpubin/* .carry/bin/
  python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' \
    .carry/bin/kiln.xz .carry/bin/kiln && chmod +x .carry/bin/kiln && rm .carry/bin/kiln.xz
fi
source tools/device/cuda_env.sh

python3 tools/goldens/make_fashion_detection.py --out "$WORK/fashion_train" --train "$train_images" --val 0 \
  --size 320 --seed 7 --quality 85 --idx "$idx" >"$OUT/make_data.log" 2>&1 \
  || { log "make_fashion_detection failed"; tail -5 "$OUT/make_data.log" | tee -a "$OUT/summary.txt"; exit 1; }
log "training split: $(ls "$WORK/fashion_train/images/train" | wc -l) images at $(elapsed) s"

PYTHONUNBUFFERED=1 python3 tools/goldens/train_yolo_fashion.py --peer "$peer" --train "$WORK/fashion_train" \
  --val tests/data/fashion_detect --out "$WORK/model" --minutes "$minutes" --imgsz 320 --batch 64 \
  --workers 12 >"$OUT/train.log" 2>&1
rc=$?
log "training rc $rc at $(elapsed) s"
(( rc == 0 )) || { tail -20 "$OUT/train.log" | tee -a "$OUT/summary.txt"; exit 1; }
mkdir -p "$OUT/model"
cp "$WORK/model/model.safetensors" "$WORK/model/config.json" "$OUT/model/"
cp "$WORK/model/summary.json" "$OUT/train_summary.json"
tail -1 "$OUT/train.log" | tee -a "$OUT/summary.txt"

# The study: every held-out image of the val set (200 sampled, 50 calibrate, 150 held out); a trained
# model's boxes are compared from score 0.25, as `kiln eval` compares them.
timeout 420 "$KILN" study families/yolov10 --checkpoint "$OUT/model/model.safetensors" \
  --data tests/data/fashion_detect --backend cuda --images 200 --every 4 --rounds 5 --seconds-per-round 1 \
  --min-score 0.25 --resamples 1000 -o "$OUT/study" >"$OUT/study.log" 2>&1
rc=$?
log "kiln study rc $rc at $(elapsed) s"
(( rc == 0 )) || tail -20 "$OUT/study.log" | tee -a "$OUT/summary.txt"
rm -rf "$OUT/study/plans"  # the plans are rebuilt from the checkpoint; the report lists them
sed -n '/## Summary and decision/,/## Recipe/p' "$OUT/study/STUDY.md" 2>/dev/null | head -40 | tee -a "$OUT/summary.txt"
log "done at $(elapsed) s"
