#!/usr/bin/env python3
"""Compares kiln's preprocessing with timm's own eval transform on real photos.

Reads a folder written by tools/goldens/make_timm_goldens.py (meta.json plus one <photo>.f32.npy per
photo holding timm's float32 CHW output), runs `kiln preprocess` on the same photos with the same
settings, and prints per-photo and overall differences in normalized units and in 8-bit steps.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kiln", required=True, help="path to the kiln binary")
    parser.add_argument("--photos", required=True, help="folder with the photos")
    parser.add_argument("--timm-dir", required=True, help="folder with meta.json and <photo>.f32.npy files")
    args = parser.parse_args()

    with open(os.path.join(args.timm_dir, "meta.json")) as f:
        meta = json.load(f)
    std = np.array(meta.get("std", [0.229, 0.224, 0.225]), dtype=np.float64).reshape(3, 1, 1)
    size = meta["input_size"][-1] if isinstance(meta["input_size"], list) else meta["input_size"]
    config = {
        "architecture": "preprocess-check",
        "num_classes": 1000,
        "pretrained_cfg": {
            "input_size": [3, size, size],
            "interpolation": meta["interpolation"],
            "crop_pct": meta["crop_pct"],
            "crop_mode": "center",
            "mean": meta.get("mean", [0.485, 0.456, 0.406]),
            "std": meta.get("std", [0.229, 0.224, 0.225]),
        },
    }
    worst = 0.0
    total_pixels = 0
    differing = 0
    with tempfile.TemporaryDirectory() as tmp:
        config_path = os.path.join(tmp, "config.json")
        with open(config_path, "w") as f:
            json.dump(config, f)
        for entry in meta["photos"]:
            photo = entry["file"] if isinstance(entry, dict) else entry
            stem = os.path.splitext(photo)[0]
            timm = np.load(os.path.join(args.timm_dir, stem + ".f32.npy")).astype(np.float64)
            out = os.path.join(tmp, stem + ".npy")
            run = subprocess.run([args.kiln, "preprocess", "--config", config_path, "--input",
                                  os.path.join(args.photos, photo), "-o", out], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{photo}: kiln preprocess failed: {run.stdout}{run.stderr}".strip())
                return 1
            ours = np.load(out)[0].astype(np.float64)
            diff = np.abs(ours - timm)
            steps = diff * std * 255.0  # back to 8-bit steps of the resized image
            rel = np.linalg.norm(ours - timm) / np.linalg.norm(timm)
            worst = max(worst, float(steps.max()))
            total_pixels += steps.size
            differing += int((steps > 0.5).sum())
            print(f"{photo}: max {diff.max():.5f} normalized = {steps.max():.2f} 8-bit steps, "
                  f"{int((steps > 0.5).sum())} of {steps.size} values differ, rel {rel:.2e}")
    print(f"{meta['interpolation']} crop_pct {meta['crop_pct']}: {len(meta['photos'])} photos, "
          f"{differing} of {total_pixels} values differ by >= 1 step ({100.0 * differing / total_pixels:.4f}%), "
          f"worst {worst:.2f} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
