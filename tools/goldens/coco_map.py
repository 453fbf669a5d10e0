#!/usr/bin/python3
"""COCO box mAP in numpy, written after pycocotools' COCOeval (evaluateImg, then accumulate), as a check
on kiln's C++ (src/eval/detection_map.cpp) that shares none of its code.

Per (image, class): detections sorted by score (stable), the IoU matrix against the ground truth, and
COCOeval's greedy loop at each threshold of np.linspace(0.5, 0.95, 10). Per class: every image's
matches concatenated, ranked with a stable argsort of -score, cumulative true and false positives,
precision made non-increasing, read at np.linspace(0, 1, 101) with np.searchsorted.

Commands (numpy only):

  # mAP of `kiln run --json` output on a YOLO-layout set (labels found by /images/ -> /labels/)
  coco_map.py detections --data tests/data/fashion_detect --boxes boxes1.json boxes2.json \
      [--min-score 0.001] [--kiln-eval eval.json]
  # a fixture for kiln's test: the set's ground truth in pixels, jittered and spurious detections,
  # and this implementation's mAP of them
  coco_map.py fixture --data tests/data/fashion_detect --images 60 --seed 3 --out FIXTURE.json
"""
import argparse
import json
import struct
from pathlib import Path

import numpy as np

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
RECALL_THRESHOLDS = np.linspace(0.0, 1.0, 101)


def iou_matrix(dets, gts):
    """IoU of [D, 4] against [G, 4] corner boxes; 0 where they do not overlap (as maskUtils.iou)."""
    if len(dets) == 0 or len(gts) == 0:
        return np.zeros((len(dets), len(gts)))
    d, g = dets[:, None, :], gts[None, :, :]
    w = np.minimum(d[..., 2], g[..., 2]) - np.maximum(d[..., 0], g[..., 0])
    h = np.minimum(d[..., 3], g[..., 3]) - np.maximum(d[..., 1], g[..., 1])
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    area_d = (d[..., 2] - d[..., 0]) * (d[..., 3] - d[..., 1])
    area_g = (g[..., 2] - g[..., 0]) * (g[..., 3] - g[..., 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(inter > 0, inter / (area_d + area_g - inter), 0.0)


def evaluate_image(dets, scores, gts):
    """COCOeval.evaluateImg for one image and class: (sorted scores, matched [T, D] booleans)."""
    order = np.argsort(-scores, kind="mergesort")
    dets, scores = dets[order], scores[order]
    ious = iou_matrix(dets, gts)
    matched = np.zeros((len(IOU_THRESHOLDS), len(dets)), dtype=bool)
    for t_index, t in enumerate(IOU_THRESHOLDS):
        taken = np.zeros(len(gts), dtype=bool)
        for d_index in range(len(dets)):
            best, best_iou = -1, min(t, 1 - 1e-10)
            for g_index in range(len(gts)):
                if taken[g_index] or ious[d_index, g_index] < best_iou:
                    continue
                best, best_iou = g_index, ious[d_index, g_index]
            if best >= 0:
                taken[best] = True
                matched[t_index, d_index] = True
    return scores, matched


def average_precision(scores, matched, ground_truth):
    """COCOeval.accumulate for one class: AP per IoU threshold [T]."""
    order = np.argsort(-scores, kind="mergesort")
    tps = np.cumsum(matched[:, order], axis=1).astype(float)
    fps = np.cumsum(~matched[:, order], axis=1).astype(float)
    aps = np.zeros(len(IOU_THRESHOLDS))
    for t_index in range(len(IOU_THRESHOLDS)):
        tp, fp = tps[t_index], fps[t_index]
        recall = tp / ground_truth
        precision = list(tp / (fp + tp + np.spacing(1)))
        for i in range(len(precision) - 1, 0, -1):
            if precision[i] > precision[i - 1]:
                precision[i - 1] = precision[i]
        q = np.zeros(len(RECALL_THRESHOLDS))
        for r_index, p_index in enumerate(np.searchsorted(recall, RECALL_THRESHOLDS, side="left")):
            if p_index >= len(precision):
                break
            q[r_index] = precision[p_index]
        aps[t_index] = q.mean()
    return aps


def coco_map(images, num_classes):
    """images: [(gt [G, 5] label x1 y1 x2 y2, dets [D, 6] label x1 y1 x2 y2 score)] -> summary dict."""
    per_class = []
    for c in range(num_classes):
        all_scores, all_matched, ground_truth = [], [], 0
        for gt, dets in images:
            gts = gt[gt[:, 0] == c, 1:5]
            mine = dets[dets[:, 0] == c]
            ground_truth += len(gts)
            scores, matched = evaluate_image(mine[:, 1:5], mine[:, 5], gts)
            all_scores.append(scores)
            all_matched.append(matched)
        if ground_truth == 0:
            per_class.append(None)
            continue
        per_class.append(average_precision(np.concatenate(all_scores), np.concatenate(all_matched, axis=1),
                                           ground_truth))
    valid = np.array([aps for aps in per_class if aps is not None])
    return {
        "map50": float(valid[:, 0].mean()) if len(valid) else 0.0,
        "map50_95": float(valid.mean()) if len(valid) else 0.0,
        "per_class_ap50": [None if aps is None else float(aps[0]) for aps in per_class],
        "per_class_ap50_95": [None if aps is None else float(aps.mean()) for aps in per_class],
    }


def image_size(path):
    """Width and height from a JPEG's SOF marker or a PNG's IHDR (no image library needed)."""
    data = Path(path).read_bytes()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    i = 2
    while i < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise SystemExit(f"{path}: no image size found")


def images_folder(data):
    data = Path(data)
    if (data / "data.yaml").exists():
        for line in (data / "data.yaml").read_text().splitlines():
            if line.startswith("val:"):
                return data / line.split(":", 1)[1].strip().strip("'\"")
    return data / "images" / "val" if (data / "images" / "val").is_dir() else data


def ground_truth(image):
    """The image's label file as [G, 5] pixel boxes."""
    text = str(image.resolve())
    head, tail = text.rsplit("/images/", 1)
    label = Path(head + "/labels/" + tail).with_suffix(".txt")
    width, height = image_size(image)
    rows = []
    if label.exists():
        for line in label.read_text().splitlines():
            if line.strip():
                c, cx, cy, w, h = (float(v) for v in line.split())
                rows.append([c, (cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width,
                             (cy + h / 2) * height])
    return np.array(rows, dtype=float).reshape(-1, 5), (width, height)


def command_detections(args):
    found = {}
    for path in args.boxes:
        for result in json.loads(Path(path).read_text())["results"]:
            rows = [[d["label"], *d["box"], d["score"]] for d in result["detections"] if d["score"] >= args.min_score]
            found[Path(result["input"]).resolve()] = np.array(rows, dtype=float).reshape(-1, 6)
    images = []
    for image in sorted(images_folder(args.data).iterdir()):
        if image.resolve() in found:
            images.append((ground_truth(image)[0], found[image.resolve()]))
    summary = coco_map(images, args.classes)
    print(f"numpy      {len(images)} images: mAP@0.5 {summary['map50']:.10f}, mAP@0.5:0.95 {summary['map50_95']:.10f}")
    if args.kiln_eval:
        kiln = json.loads(Path(args.kiln_eval).read_text())["map"]
        print(f"kiln       mAP@0.5 {kiln['map50']:.10f}, mAP@0.5:0.95 {kiln['map50_95']:.10f}")
        worst = max(abs(kiln["map50"] - summary["map50"]), abs(kiln["map50_95"] - summary["map50_95"]))
        for c, entry in enumerate(kiln["per_class"]):
            if summary["per_class_ap50"][c] is not None:
                worst = max(worst, abs(entry["ap50"] - summary["per_class_ap50"][c]),
                            abs(entry["ap50_95"] - summary["per_class_ap50_95"][c]))
        print(f"largest difference (mAP and per-class AP): {worst:.3g}")


def command_fixture(args):
    rng = np.random.default_rng(args.seed)
    images, entries = [], []
    for image in sorted(images_folder(args.data).iterdir())[:args.images]:
        gt, (width, height) = ground_truth(image)
        dets = []
        for c, x1, y1, x2, y2 in gt:
            for _ in range(int(rng.integers(0, 3))):  # 0, 1 or 2 detections of each object
                w, h = x2 - x1, y2 - y1
                jitter = rng.normal(0, 0.08, size=4) * [w, h, w, h]
                label = c if rng.random() < 0.9 else float(rng.integers(args.classes))
                dets.append([label, x1 + jitter[0], y1 + jitter[1], x2 + jitter[2], y2 + jitter[3],
                             round(float(rng.uniform(0.05, 1.0)), 2)])  # rounded: ties happen
        for _ in range(int(rng.integers(0, 4))):  # spurious boxes
            x, y = rng.uniform(0, width - 20), rng.uniform(0, height - 20)
            size = rng.uniform(10, 120)
            dets.append([float(rng.integers(args.classes)), x, y, x + size, y + size,
                         round(float(rng.uniform(0.01, 0.6)), 2)])
        dets = np.array(dets, dtype=float).reshape(-1, 6)
        images.append((gt, dets))
        entries.append({"image": image.name, "ground_truth": gt.tolist(), "detections": dets.tolist()})
    fixture = {"made_by": "tools/goldens/coco_map.py fixture", "data": str(args.data), "seed": args.seed,
               "classes": args.classes, "images": entries, "expected": coco_map(images, args.classes)}
    Path(args.out).write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    print(f"{args.out}: {len(entries)} images, mAP@0.5 {fixture['expected']['map50']:.6f}, "
          f"mAP@0.5:0.95 {fixture['expected']['map50_95']:.6f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    detections = commands.add_parser("detections")
    detections.add_argument("--data", required=True)
    detections.add_argument("--boxes", nargs="+", required=True, help="kiln run --json files")
    detections.add_argument("--classes", type=int, default=10)
    detections.add_argument("--min-score", type=float, default=0.001)
    detections.add_argument("--kiln-eval", help="kiln eval --json file to compare with")
    fixture = commands.add_parser("fixture")
    fixture.add_argument("--data", required=True)
    fixture.add_argument("--images", type=int, default=60)
    fixture.add_argument("--classes", type=int, default=10)
    fixture.add_argument("--seed", type=int, default=0)
    fixture.add_argument("--out", required=True)
    args = parser.parse_args()
    (command_detections if args.command == "detections" else command_fixture)(args)


if __name__ == "__main__":
    main()
