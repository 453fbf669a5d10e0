#!/usr/bin/env python3
"""Copy the YOLOv10n golden made by the YOLOv10 authors' code into kiln's test data, smaller.

The source folder holds model.safetensors, config.json, input_u8.npy (B, 3, 640, 640 uint8),
one2one.npy (B, 84, 8400 float32, the decoded one-to-one head) and detections.npy (B, 300, 6
float64). Everything is copied as it is except one2one.npy, of which every STRIDE-th anchor is
kept (one2one_subset.npy, B x 84 x ceil(8400 / STRIDE)): the anchors of all three levels stay
represented at a quarter of the size. Standard library only (no numpy needed).

Usage: yolov10_subset.py SOURCE_DIR DEST_DIR [--stride 4]
"""
import argparse
import ast
import shutil
import struct
from pathlib import Path


def read_npy(path: Path):
    data = path.read_bytes()
    if data[:6] != b"\x93NUMPY":
        raise SystemExit(f"{path}: not an .npy file")
    major = data[6]
    if major == 1:
        (length,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (length,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + length].decode("latin1"))
    return header, data[start + length:]


def write_npy(path: Path, descr: str, shape, payload: bytes) -> None:
    header = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)}).encode("latin1")
    pad = 64 - (10 + len(header) + 1) % 64
    header += b" " * (pad % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", type=Path)
    p.add_argument("dest", type=Path)
    p.add_argument("--stride", type=int, default=4)
    args = p.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json", "input_u8.npy", "detections.npy"):
        shutil.copyfile(args.source / name, args.dest / name)
    header, payload = read_npy(args.source / "one2one.npy")
    if header["descr"] != "<f4" or header["fortran_order"] or len(header["shape"]) != 3:
        raise SystemExit(f"one2one.npy: expected C-order float32 (B, C, A), got {header}")
    batch, channels, anchors = header["shape"]
    kept = range(0, anchors, args.stride)
    rows = bytearray()
    for row in range(batch * channels):
        base = row * anchors * 4
        for a in kept:
            rows += payload[base + a * 4:base + a * 4 + 4]
    write_npy(args.dest / "one2one_subset.npy", "<f4", (batch, channels, len(kept)), bytes(rows))
    print(f"wrote {args.dest}: one2one_subset.npy {batch}x{channels}x{len(kept)} (every {args.stride}th anchor)")


if __name__ == "__main__":
    main()
