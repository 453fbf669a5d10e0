#!/usr/bin/python3
"""Reference crops of timm's eval transform, made by Pillow and torchvision themselves.

For each photo, writes the output of

    Image.open(photo).convert("RGB")
    -> torchvision Resize(floor(size / crop_pct), interpolation)   (shorter side)
    -> torchvision CenterCrop(size)

as a uint8 HWC .npy file (<out>/<photo stem>.npy), plus <out>/meta.json recording the tool, the
Pillow and torchvision versions and the settings. This is timm's transforms_imagenet_eval for
crop_mode "center" and a square input size, before ToTensor/Normalize.

With --normalized it also writes <stem>.f32.npy: the [3, size, size] float32 tensor after
ToTensor and Normalize(mean, std) (ImageNet defaults unless --mean/--std are given). With
--decoded it writes <stem>.rgb.npy: the decoded image before any resizing.

kiln's tests/io/preprocess_pil_test.cpp compares its own resize + crop with these files byte for
byte. Run it with Debian's python3 and its python3-pil / python3-torchvision packages:

    /usr/bin/python3 tools/goldens/pil_crops.py --interpolation bicubic --crop-pct 0.95 \\
        --size 224 --out tests/data/preprocess/pil_bicubic_0.95 tests/data/photos/dog.jpg ...
"""
import argparse
import json
import math
import pathlib

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torchvision import transforms

INTERPOLATIONS = {
    "bilinear": transforms.InterpolationMode.BILINEAR,
    "bicubic": transforms.InterpolationMode.BICUBIC,
    "nearest": transforms.InterpolationMode.NEAREST,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("photos", nargs="+", type=pathlib.Path)
    parser.add_argument("--interpolation", choices=sorted(INTERPOLATIONS), required=True)
    parser.add_argument("--crop-pct", type=float, required=True)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--normalized", action="store_true", help="also write the normalized tensor")
    parser.add_argument("--decoded", action="store_true", help="also write the decoded RGB image")
    parser.add_argument("--mean", type=float, nargs=3, default=(0.485, 0.456, 0.406))
    parser.add_argument("--std", type=float, nargs=3, default=(0.229, 0.224, 0.225))
    args = parser.parse_args()

    scale_size = math.floor(args.size / args.crop_pct)  # as timm's transforms_imagenet_eval
    resize_crop = transforms.Compose([
        transforms.Resize(scale_size, interpolation=INTERPOLATIONS[args.interpolation]),
        transforms.CenterCrop(args.size),
    ])
    # timm passes mean/std as float32 tensors
    normalize = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize(mean=torch.tensor(args.mean), std=torch.tensor(args.std)),
    ])

    args.out.mkdir(parents=True, exist_ok=True)
    for photo in args.photos:
        with Image.open(photo) as opened:
            image = opened.convert("RGB")
        cropped = resize_crop(image)
        np.save(args.out / f"{photo.stem}.npy", np.asarray(cropped, dtype=np.uint8))
        if args.normalized:
            np.save(args.out / f"{photo.stem}.f32.npy", normalize(cropped).numpy().astype(np.float32))
        if args.decoded:
            np.save(args.out / f"{photo.stem}.rgb.npy", np.asarray(image, dtype=np.uint8))

    meta = {
        "tool": "tools/goldens/pil_crops.py",
        "pillow": PIL.__version__,
        "torchvision": torchvision.__version__,
        "interpolation": args.interpolation,
        "crop_pct": args.crop_pct,
        "input_size": args.size,
        "photos": [p.name for p in args.photos],
    }
    (args.out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
