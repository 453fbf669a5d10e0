"""Reference letterboxes made with OpenCV, for kiln's YOLO letterbox test.

The YOLOv10 authors' LetterBox (auto=False, centred): scale to fit a size x size square keeping the
aspect ratio (new size rounded with Python's round()), cv2.resize with INTER_LINEAR when the size
changes, pads round(d - 0.1) before and round(d + 0.1) after, filled with grey 114; then BGR to RGB.

Cases: every photo in tests/data/photos (read with cv2.imread) and synthetic images of odd sizes
(tiny, tall, wide, non-multiples, upscales) whose pixels are an integer hash of (x, y, channel), so
the C++ test makes the same image without a file. Written to tests/data/letterbox/: letterbox_cv2.json
with the OpenCV version, each case's sizes, pads, the sha256 of the source pixels (RGB, row-major) and
of the letterboxed pixels, and the letterboxed pixels themselves as .npy for the small cases.

    /usr/bin/python3 tools/goldens/letterbox_cv2.py --photos tests/data/photos --out tests/data/letterbox
"""
import argparse
import hashlib
import json
import platform
from pathlib import Path

import cv2
import numpy as np

GREY = 114
FULL_NPY_LIMIT = 64  # letterboxes at most this many pixels a side are also stored whole

# (name, width, height, letterbox size)
PATTERNS = [
    ("one_pixel", 1, 1, 32),
    ("tiny_7x5", 7, 5, 64),
    ("tiny_3x11", 3, 11, 32),
    ("tall_10x300", 10, 300, 640),
    ("wide_300x10", 300, 10, 640),
    ("wide_1000x3", 1000, 3, 320),
    ("odd_641x479", 641, 479, 640),
    ("odd_333x517", 333, 517, 640),
    ("odd_517x333", 517, 333, 320),
    ("square_exact_320", 320, 320, 320),
    ("upscale_100x60", 100, 60, 640),
    ("upscale_37x41", 37, 41, 64),
    ("near_639x640", 639, 640, 640),
    ("down_2x_1280x960", 1280, 960, 640),
]


def pattern(width: int, height: int) -> np.ndarray:
    """RGB uint8 [height, width, 3]: ((x * 73856093) ^ (y * 19349663) ^ (c * 83492791)) mod 2^32, low byte."""
    y, x, c = np.meshgrid(np.arange(height, dtype=np.uint64), np.arange(width, dtype=np.uint64),
                          np.arange(3, dtype=np.uint64), indexing="ij")
    mask = np.uint64(0xFFFFFFFF)
    h = ((x * np.uint64(73856093)) & mask) ^ ((y * np.uint64(19349663)) & mask) ^ ((c * np.uint64(83492791)) & mask)
    return (h & np.uint64(0xFF)).astype(np.uint8)


def letterbox_bgr(image: np.ndarray, size: int):
    """The authors' LetterBox(new_shape=(size, size), auto=False, scaleup=True, center=True)."""
    h, w = image.shape[:2]
    r = min(size / h, size / w)
    new_w, new_h = int(round(w * r)), int(round(h * r))
    dw, dh = (size - new_w) / 2, (size - new_h) / 2
    if (w, h) != (new_w, new_h):
        image = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    out = cv2.copyMakeBorder(image, top, bottom, left, right, cv2.BORDER_CONSTANT, value=(GREY, GREY, GREY))
    return out, dict(new_width=new_w, new_height=new_h, left=left, top=top)


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def case(name: str, source: str, rgb: np.ndarray, size: int, out: Path) -> dict:
    boxed_bgr, geometry = letterbox_bgr(np.ascontiguousarray(rgb[..., ::-1]), size)
    boxed = np.ascontiguousarray(boxed_bgr[..., ::-1])
    assert boxed.shape == (size, size, 3), (name, boxed.shape)
    entry = dict(name=name, source=source, width=int(rgb.shape[1]), height=int(rgb.shape[0]), size=size,
                 **geometry, source_sha256=sha256(rgb), letterbox_sha256=sha256(boxed))
    if size <= FULL_NPY_LIMIT:
        np.save(out / f"{name}.npy", boxed)
        entry["npy"] = f"{name}.npy"
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--size", type=int, default=640, help="letterbox size of the photos")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cases = []
    for photo in sorted(p for p in args.photos.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")):
        bgr = cv2.imread(str(photo), cv2.IMREAD_COLOR)
        assert bgr is not None, photo
        cases.append(case(photo.stem, f"photo:{photo.name}", np.ascontiguousarray(bgr[..., ::-1]), args.size,
                          args.out))
    for name, width, height, size in PATTERNS:
        cases.append(case(name, "pattern", pattern(width, height), size, args.out))
    report = dict(
        tool="tools/goldens/letterbox_cv2.py",
        opencv=cv2.__version__,
        numpy=np.__version__,
        python=platform.python_version(),
        machine=platform.machine(),
        pixels="RGB uint8, row-major [height, width, 3]; sha256 of those bytes",
        pattern="((x * 73856093) ^ (y * 19349663) ^ (c * 83492791)) mod 2^32, low byte",
        cases=cases,
    )
    (args.out / "letterbox_cv2.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{len(cases)} cases, OpenCV {cv2.__version__}, written to {args.out}")


if __name__ == "__main__":
    main()
