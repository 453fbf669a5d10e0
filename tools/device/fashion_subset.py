#!/usr/bin/env python3
"""The Fashion-MNIST files a trained study carries to the GPU machine, and their reassembly there.

What travels with a GPU call is limited (the working tree plus carried files under 64 MiB), so the
training set cannot travel whole. `pack` (on the build machine, from Debian's dataset-fashion-mnist)
writes, xz-compressed:

  train-images-idx3-ubyte.xz, train-labels-idx1-ubyte.xz   the first SKIP + N training images
  t10k-rest-images-idx3-ubyte.xz                            test images 2500 .. 9999
  t10k-labels-idx1-ubyte.xz                                 all 10 000 test labels

--train-bits B < 8 rounds each training pixel to the nearest multiple of 2^(8-B) (255 stays 255), which
shrinks the compressed training set (per image: 374 bytes at 8 bits, 274 at 6, 219 at 5),
so that more training images fit: the network trains on 2^B grey levels and is tested on the exact
8-bit test images. The calibration subset (the first SKIP images) is always carried exact.

The first 2500 test images are in the tree already (tests/data/fashion_mnist/t10k-first2500, PNGs
written by `kiln dataset import-idx`); `unpack` (on the GPU machine) decodes them, joins the carried
rest and checks the whole test set's bytes against the Debian file's sha256, then writes the raw IDX
files that tools/goldens/train_fashion_mnist.py and `kiln dataset import-idx` read. Standard library
only (the PNGs are decoded here), so both steps run anywhere.
"""
import argparse
import gzip
import hashlib
import lzma
import struct
import sys
import tarfile
import zlib
from pathlib import Path

TRACKED_TEST = 2500  # test images in tests/data/fashion_mnist/t10k-first2500
TEST_IMAGES = 10000
SIDE = 28
# sha256 of the uncompressed Debian files (t10k-*-ubyte.gz, dataset-fashion-mnist 0.0~git20200523).
T10K_IMAGES_SHA256 = "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"
T10K_LABELS_SHA256 = "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"


def idx_images(count: int, pixels: bytes) -> bytes:
    return struct.pack(">IIII", 0x803, count, SIDE, SIDE) + pixels


def idx_labels(labels: bytes) -> bytes:
    return struct.pack(">II", 0x801, len(labels)) + labels


def read_body(path: Path, header: int) -> bytes:
    opener = {".gz": gzip.open, ".xz": lzma.open}.get(path.suffix, open)
    with opener(path, "rb") as f:
        return f.read()[header:]


def write_xz(path: Path, data: bytes) -> int:
    path.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    return path.stat().st_size


def pack(args) -> None:
    src, out = Path(args.debian), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train = args.train_skip + args.train_limit
    images = read_body(src / "train-images-idx3-ubyte.gz", 16)[:train * SIDE * SIDE]
    if args.train_bits < 8:
        drop = 8 - args.train_bits
        # Rounded to the nearest level: no bias, and the black background stays 0.
        to_level = bytes(min(255, ((v + (1 << (drop - 1))) >> drop) << drop) for v in range(256))
        keep = args.train_skip * SIDE * SIDE
        images = images[:keep] + images[keep:].translate(to_level)
    labels = read_body(src / "train-labels-idx1-ubyte.gz", 8)[:train]
    if len(labels) != train:
        sys.exit(f"{src}: fewer than {train} training images")
    test_images = read_body(src / "t10k-images-idx3-ubyte.gz", 16)
    test_labels = read_body(src / "t10k-labels-idx1-ubyte.gz", 8)
    sizes = {
        "train-images-idx3-ubyte.xz": write_xz(out / "train-images-idx3-ubyte.xz", idx_images(train, images)),
        "train-labels-idx1-ubyte.xz": write_xz(out / "train-labels-idx1-ubyte.xz", idx_labels(labels)),
        "t10k-rest-images-idx3-ubyte.xz": write_xz(
            out / "t10k-rest-images-idx3-ubyte.xz",
            idx_images(TEST_IMAGES - TRACKED_TEST, test_images[TRACKED_TEST * SIDE * SIDE:])),
        "t10k-labels-idx1-ubyte.xz": write_xz(out / "t10k-labels-idx1-ubyte.xz", idx_labels(test_labels)),
    }
    for name, size in sizes.items():
        print(f"{out / name}: {size / 1e6:.2f} MB")
    print(f"total {sum(sizes.values()) / 1e6:.2f} MB ({train} training images, {args.train_skip} of them "
          f"the calibration subset; the others at {args.train_bits} bits per pixel)")


def png_grey_pixels(data: bytes) -> bytes:
    """The pixels of an 8-bit greyscale, non-interlaced PNG (what kiln's importer writes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if (depth, colour, interlace) != (8, 0, 0):
                raise ValueError(f"PNG is not 8-bit grey non-interlaced ({depth}, {colour}, {interlace})")
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw, rows, previous = zlib.decompress(idat), [], bytearray(width)
    for y in range(height):
        line = raw[y * (width + 1):(y + 1) * (width + 1)]
        kind, row = line[0], bytearray(line[1:])
        for x in range(width):
            left = row[x - 1] if x else 0
            up, up_left = previous[x], previous[x - 1] if x else 0
            if kind == 1:
                row[x] = (row[x] + left) & 255
            elif kind == 2:
                row[x] = (row[x] + up) & 255
            elif kind == 3:
                row[x] = (row[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                row[x] = (row[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        rows.append(bytes(row))
        previous = row
    return b"".join(rows)


def tracked_test_images(shard: Path) -> tuple:
    """Pixels and labels of the tracked shard's images, in key order (000000, 000001, ...)."""
    members = {}
    with tarfile.open(shard) as tar:
        for member in tar.getmembers():
            members[member.name] = tar.extractfile(member).read()
    pixels, labels = [], []
    for i in range(TRACKED_TEST):
        pixels.append(png_grey_pixels(members[f"{i:06d}.png"]))
        labels.append(int(members[f"{i:06d}.cls"]))
    return b"".join(pixels), bytes(labels)


def unpack(args) -> None:
    carry, out = Path(args.carry), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    first_pixels, first_labels = tracked_test_images(Path(args.tracked))
    pixels = first_pixels + read_body(carry / "t10k-rest-images-idx3-ubyte.xz", 16)
    labels = read_body(carry / "t10k-labels-idx1-ubyte.xz", 8)
    if labels[:TRACKED_TEST] != first_labels:
        sys.exit(f"{args.tracked}: its labels are not the first {TRACKED_TEST} of the carried test labels")
    images_file, labels_file = idx_images(TEST_IMAGES, pixels), idx_labels(labels)
    for name, data, digest in (("t10k-images-idx3-ubyte", images_file, T10K_IMAGES_SHA256),
                               ("t10k-labels-idx1-ubyte", labels_file, T10K_LABELS_SHA256)):
        if hashlib.sha256(data).hexdigest() != digest:
            sys.exit(f"{name}: the reassembled test set is not Debian's (sha256 differs)")
        (out / name).write_bytes(data)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        (out / name).write_bytes(lzma.open(carry / (name + ".xz")).read())
    print(f"{out}: the 10 000 test images (sha256 checked) and "
          f"{(len((out / 'train-labels-idx1-ubyte').read_bytes()) - 8)} training images")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="write the carried files (build machine)")
    p.add_argument("--debian", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--out", required=True)
    p.add_argument("--train-skip", type=int, default=500, help="the calibration subset, carried but not trained on")
    p.add_argument("--train-limit", type=int, required=True, help="training images after the skipped ones")
    p.add_argument("--train-bits", type=int, default=8, choices=range(1, 9), metavar="1..8",
                   help="bits kept per training pixel (default 8: exact)")
    u = sub.add_parser("unpack", help="reassemble the raw IDX files (GPU machine)")
    u.add_argument("--carry", required=True)
    u.add_argument("--tracked", default="tests/data/fashion_mnist/t10k-first2500/fashion-mnist-t10k-000000.tar.gz")
    u.add_argument("--out", required=True)
    args = parser.parse_args()
    pack(args) if args.command == "pack" else unpack(args)


if __name__ == "__main__":
    main()
