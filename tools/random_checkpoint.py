#!/usr/bin/env python3
"""Full-size timm-layout checkpoints with random weights, for timing kiln where PyTorch is not installed.

    tools/random_checkpoint.py resnet50 OUTDIR/resnet50      # model.safetensors + config.json
    tools/random_checkpoint.py resnest50d OUTDIR/resnest50d

The key names and shapes are timm's (resnet50.a1_in1k, resnest50d.in1k), so `kiln build timm_resnet` /
`timm_resnest` take them as they take the Hub's files. Weights are uniform with variance 1/fan_in, batch
norm scales near 1 and statistics near the identity, so activations stay finite and near unit size; the
logits mean nothing. Standard library only (no numpy); ../shared/anchors/cpu_models.py makes the same
architectures with PyTorch where it is installed.
"""
import array
import json
import os
import random
import struct
import sys

BLOCKS = [3, 4, 6, 3]
rng = random.Random(0)
# One pool of uniform(-1, 1) values, read at a random offset per tensor: fast enough in pure Python.
POOL = array.array("f", (rng.uniform(-1.0, 1.0) for _ in range(1 << 20)))


def uniform(count, low, high):
    start = rng.randrange(len(POOL))
    mid, half = (low + high) / 2, (high - low) / 2
    out = array.array("f", bytes(4 * count))
    for i in range(count):
        out[i] = mid + half * POOL[(start + i) % len(POOL)]
    return out


class Writer:
    def __init__(self):
        self.tensors = {}

    def conv(self, name, out_ch, in_ch, k, bias=False):
        bound = (3.0 / (in_ch * k * k)) ** 0.5
        self.tensors[name + ".weight"] = ("F32", [out_ch, in_ch, k, k], uniform(out_ch * in_ch * k * k, -bound, bound))
        if bias:
            self.tensors[name + ".bias"] = ("F32", [out_ch], uniform(out_ch, -0.1, 0.1))

    def bn(self, name, ch):
        self.tensors[name + ".weight"] = ("F32", [ch], uniform(ch, 0.5, 1.0))
        self.tensors[name + ".bias"] = ("F32", [ch], uniform(ch, -0.1, 0.1))
        self.tensors[name + ".running_mean"] = ("F32", [ch], uniform(ch, -0.1, 0.1))
        self.tensors[name + ".running_var"] = ("F32", [ch], uniform(ch, 0.5, 1.5))
        self.tensors[name + ".num_batches_tracked"] = ("I64", [], array.array("q", [0]))

    def linear(self, name, out_f, in_f):
        bound = (3.0 / in_f) ** 0.5
        self.tensors[name + ".weight"] = ("F32", [out_f, in_f], uniform(out_f * in_f, -bound, bound))
        self.tensors[name + ".bias"] = ("F32", [out_f], uniform(out_f, -0.1, 0.1))

    def save(self, path):
        header, offset, blobs = {}, 0, []
        for name in sorted(self.tensors):
            dtype, shape, data = self.tensors[name]
            blob = data.tobytes()
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
            offset += len(blob)
            blobs.append(blob)
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            for blob in blobs:
                f.write(blob)


def resnet50(w):
    w.conv("conv1", 64, 3, 7)
    w.bn("bn1", 64)
    cin = 64
    for stage, count in enumerate(BLOCKS):
        planes = 64 << stage
        for b in range(count):
            p = f"layer{stage + 1}.{b}"
            w.conv(p + ".conv1", planes, cin, 1)
            w.bn(p + ".bn1", planes)
            w.conv(p + ".conv2", planes, planes, 3)
            w.bn(p + ".bn2", planes)
            w.conv(p + ".conv3", planes * 4, planes, 1)
            w.bn(p + ".bn3", planes * 4)
            if b == 0:
                w.conv(p + ".downsample.0", planes * 4, cin, 1)
                w.bn(p + ".downsample.1", planes * 4)
            cin = planes * 4
    w.linear("fc", 1000, 2048)


def resnest50d(w, radix=2):
    w.conv("conv1.0", 32, 3, 3)
    w.bn("conv1.1", 32)
    w.conv("conv1.3", 32, 32, 3)
    w.bn("conv1.4", 32)
    w.conv("conv1.6", 64, 32, 3)
    w.bn("bn1", 64)
    cin = 64
    for stage, count in enumerate(BLOCKS):
        planes = 64 << stage
        mid = max(planes * radix // 4, 32)
        for b in range(count):
            p = f"layer{stage + 1}.{b}"
            w.conv(p + ".conv1", planes, cin, 1)
            w.bn(p + ".bn1", planes)
            w.conv(p + ".conv2.conv", planes * radix, planes // radix, 3)
            w.bn(p + ".conv2.bn0", planes * radix)
            w.conv(p + ".conv2.fc1", mid, planes, 1, bias=True)
            w.bn(p + ".conv2.bn1", mid)
            w.conv(p + ".conv2.fc2", planes * radix, mid, 1, bias=True)
            w.conv(p + ".conv3", planes * 4, planes, 1)
            w.bn(p + ".bn3", planes * 4)
            if b == 0:
                w.conv(p + ".downsample.1", planes * 4, cin, 1)
                w.bn(p + ".downsample.2", planes * 4)
            cin = planes * 4
    w.linear("fc", 1000, 2048)


CONFIGS = {
    "resnet50": ("a1_in1k", "bicubic", 0.95, "conv1", resnet50),
    "resnest50d": ("in1k", "bilinear", 0.875, "conv1.0", resnest50d),
}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CONFIGS:
        sys.exit("usage: random_checkpoint.py resnet50|resnest50d OUTDIR")
    name, out = sys.argv[1], sys.argv[2]
    tag, interpolation, crop_pct, first_conv, make = CONFIGS[name]
    os.makedirs(out, exist_ok=True)
    writer = Writer()
    make(writer)
    writer.save(os.path.join(out, "model.safetensors"))
    config = {"architecture": name, "num_classes": 1000, "num_features": 2048,
              "pretrained_cfg": {"tag": tag, "input_size": [3, 224, 224], "interpolation": interpolation,
                                 "crop_pct": crop_pct, "crop_mode": "center", "mean": [0.485, 0.456, 0.406],
                                 "std": [0.229, 0.224, 0.225], "num_classes": 1000, "pool_size": [7, 7],
                                 "first_conv": first_conv, "classifier": "fc"}}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


if __name__ == "__main__":
    main()
