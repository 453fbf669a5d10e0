#!/bin/sh
# The detector plan the library tests load, and the boxes `kiln run` gives with it for a photo: what
# the SDK's detect calls must reproduce. Run from the source root (kiln build finds ./families).
#   make_detector_fixture.sh KILN CHECKPOINT PHOTO OUT_DIR
set -eu
kiln=$1 checkpoint=$2 photo=$3 out=$4
mkdir -p "$out"
"$kiln" build yolov10 --checkpoint "$checkpoint" -o "$out/det.kplan"
# The golden checkpoint finds Fashion-MNIST items, which the photo lacks: its scores are low.
"$kiln" run "$out/det.kplan" --input "$photo" --min-score 0.005 --json "$out/det_boxes.json"
