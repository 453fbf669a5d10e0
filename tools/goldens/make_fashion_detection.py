#!/usr/bin/python3
"""A labelled detection set: Fashion-MNIST items pasted onto crops of the shipped photos.

Each image is a random crop of one photo (tests/data/photos), resized so its longer side is --size
pixels and its shorter side 60-100% of that (so letterboxing pads). 1 to 6 items are pasted at random
scales (32-160 px, at most the shorter side) and positions, overlapping an earlier item's box by IoU
0.1 at most. An item's dark background is transparent: alpha rises with the item's intensity, and
pixels below INK_THRESHOLD after scaling are dropped, so the box (from the remaining pixels) is tight.
Train items come from the IDX train set, val items from the test set.

Written in the Ultralytics/YOLO layout: images/{train,val}/NAME.jpg, labels/{train,val}/NAME.txt with
one `class cx cy w h` line per item (normalised by the image's width and height), and data.yaml (paths
relative to it, the 10 class names). Seeded: the same options give the same files.

    /usr/bin/python3 tools/goldens/make_fashion_detection.py --out tests/data/fashion_detect \
        --train 0 --val 200 --size 320 --seed 7 --quality 85

Needs numpy and PIL; reads the IDX files from --idx (default /usr/share/datasets/fashion-mnist, Debian's
dataset-fashion-mnist; a subset with fewer items works, e.g. the training pair carried to the GPU machine).
"""
import argparse
import gzip
from pathlib import Path

import numpy as np
from PIL import Image

NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
         "Ankle boot"]
IDX = Path("/usr/share/datasets/fashion-mnist")
PHOTOS = Path(__file__).resolve().parents[2] / "tests" / "data" / "photos"
INK_THRESHOLD = 10  # scaled intensities below this are background (transparent, outside the box)
MAX_OVERLAP_IOU = 0.1
PLACEMENT_TRIES = 50


def read_idx(path):
    """An IDX file (gzip): big-endian magic (0, 0, type 0x08, rank), the dimensions, uint8 data."""
    data = gzip.open(path, "rb").read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise SystemExit(f"{path}: not an IDX file of unsigned bytes")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    if body.size != int(np.prod(dims)):
        raise SystemExit(f"{path}: {body.size} bytes of data, dimensions {dims} need {int(np.prod(dims))}")
    return body.reshape(dims)


def load_split(idx, prefix):
    images = read_idx(idx / f"{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(idx / f"{prefix}-labels-idx1-ubyte.gz")
    if len(images) != len(labels):
        raise SystemExit(f"{prefix}: {len(images)} images but {len(labels)} labels")
    return images, labels


def background(rng, photos, size):
    photo = photos[rng.integers(len(photos))]
    short = int(round(size * rng.uniform(0.6, 1.0)))
    width, height = (size, short) if rng.random() < 0.5 else (short, size)
    # The crop has the output's aspect ratio and covers 40-100% of what fits in the photo.
    fit = min(photo.width / width, photo.height / height)
    scale = fit * rng.uniform(0.4, 1.0)
    crop_w, crop_h = max(1, int(width * scale)), max(1, int(height * scale))
    left = int(rng.integers(photo.width - crop_w + 1))
    top = int(rng.integers(photo.height - crop_h + 1))
    crop = photo.crop((left, top, left + crop_w, top + crop_h))
    return np.asarray(crop.resize((width, height), Image.BILINEAR), dtype=np.float32)


def scaled_item(rng, pixels, side):
    """The item at side x side: ink (uint8, 0 outside the item) and a colour."""
    ink = np.asarray(Image.fromarray(pixels).resize((side, side), Image.BILINEAR), dtype=np.uint8).copy()
    ink[ink < INK_THRESHOLD] = 0
    colour = rng.uniform(0.35, 1.0, size=3) * 255.0
    return ink, colour


def iou(a, b):
    w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def paste_items(rng, canvas, items, labels):
    """Pastes 1-6 items; returns (class, x1, y1, x2, y2) per item, in pixels (x2, y2 exclusive)."""
    height, width = canvas.shape[:2]
    boxes = []
    for _ in range(int(rng.integers(1, 7))):
        index = int(rng.integers(len(items)))
        side = int(rng.integers(32, min(160, width, height) + 1))
        ink, colour = scaled_item(rng, items[index], side)
        rows, cols = np.nonzero(ink)
        if rows.size == 0:
            continue
        for _ in range(PLACEMENT_TRIES):
            x = int(rng.integers(width - side + 1))
            y = int(rng.integers(height - side + 1))
            box = (x + int(cols.min()), y + int(rows.min()), x + int(cols.max()) + 1, y + int(rows.max()) + 1)
            if all(iou(box, other[1:]) <= MAX_OVERLAP_IOU for other in boxes):
                break
        else:
            continue
        alpha = np.clip(ink.astype(np.float32) * (2.0 / 255.0), 0.0, 1.0)[..., None]
        shade = (ink.astype(np.float32) / 255.0)[..., None] * colour
        region = canvas[y:y + side, x:x + side]
        canvas[y:y + side, x:x + side] = region * (1.0 - alpha) + shade * alpha
        boxes.append((int(labels[index]),) + box)
    return boxes


def write_split(out, split, count, items, labels, photos, size, seed, quality):
    images_dir, labels_dir = out / "images" / split, out / "labels" / split
    images_dir.mkdir(parents=True, exist_ok=True)
    labels_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    for i in range(count):
        canvas = background(rng, photos, size)
        boxes = paste_items(rng, canvas, items, labels)
        height, width = canvas.shape[:2]
        name = f"{split}_{i:06d}"
        Image.fromarray(np.clip(np.rint(canvas), 0, 255).astype(np.uint8)).save(
            images_dir / f"{name}.jpg", quality=quality)
        lines = [f"{c} {(x1 + x2) / 2 / width:.6f} {(y1 + y2) / 2 / height:.6f} {(x2 - x1) / width:.6f} "
                 f"{(y2 - y1) / height:.6f}\n" for c, x1, y1, x2, y2 in boxes]
        (labels_dir / f"{name}.txt").write_text("".join(lines))


def write_data_yaml(out, splits):
    lines = ["# Fashion-MNIST items pasted onto photos (tools/goldens/make_fashion_detection.py)\n"]
    lines += [f"{split}: images/{split}\n" for split in splits]
    lines.append(f"nc: {len(NAMES)}\nnames:\n")
    lines += [f"  {i}: {name}\n" for i, name in enumerate(NAMES)]
    (out / "data.yaml").write_text("".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--train", type=int, default=1000, help="training images (items from the train set)")
    parser.add_argument("--val", type=int, default=200, help="validation images (items from the test set)")
    parser.add_argument("--size", type=int, default=640, help="the longer side of each image, pixels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality")
    parser.add_argument("--photos", type=Path, default=PHOTOS)
    parser.add_argument("--idx", type=Path, default=IDX,
                        help="folder of the Fashion-MNIST IDX pairs (train-*, t10k-*-ubyte.gz) the items come from")
    args = parser.parse_args()
    if args.size < 32 or args.train < 0 or args.val < 0 or args.train + args.val == 0:
        raise SystemExit("--size must be at least 32, --train and --val not negative, not both 0")
    photos = [Image.open(p).convert("RGB") for p in sorted(args.photos.iterdir())
              if p.suffix.lower() in (".jpg", ".jpeg", ".png")]
    if not photos:
        raise SystemExit(f"{args.photos}: no photos")
    splits = []
    for split, count, prefix in (("train", args.train, "train"), ("val", args.val, "t10k")):
        if count == 0:
            continue
        items, labels = load_split(args.idx, prefix)
        write_split(args.out, split, count, items, labels, photos, args.size, args.seed, args.quality)
        splits.append(split)
    write_data_yaml(args.out, splits)


if __name__ == "__main__":
    main()
