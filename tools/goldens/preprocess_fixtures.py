"""Preprocessing fixtures: timm's eval transform of every photo, before and after ToTensor.

kiln's C++ preprocessing must match timm's PIL-based pipeline bit for bit, so two stages are
recorded per photo: the uint8 image after the PIL steps (Resize of the shorter side to
floor(size / crop_pct), CenterCrop) and the float32 tensor of the whole transform. The
uint8 image is checked to be exactly what the tensor steps consume, so a port can test its
resize and crop on integers and its normalisation separately.
"""
import math
import traceback
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import torch
from PIL import Image

from golden_io import load_rgb, log, save_npy, versions, warn, write_json
from timm_access import (IMAGENET_MEAN, IMAGENET_STD, create_eval_transform,
                         registry_pretrained_cfg, resolve_data_config)

# The two eval pipelines kiln must match, taken from the checkpoints they belong to.
PREPROCESS_SOURCES = (
    ("resnest50d.in1k", dict(interpolation="bilinear", crop_pct=0.875, input_size=(3, 224, 224))),
    ("resnet50.a1_in1k", dict(interpolation="bicubic", crop_pct=0.95, input_size=(3, 224, 224))),
)


def fmt_crop(crop_pct: float) -> str:
    """Folder-name form of crop_pct: 0.875 -> '0.875', 0.95 -> '0.95'."""
    return f"{float(crop_pct):g}"


def split_before_to_tensor(transform) -> Tuple[list, list]:
    """Split timm's eval Compose into the PIL steps and the tensor steps.

    The PIL steps (Resize, CenterCrop) give the uint8 image kiln must reproduce; the rest
    (MaybeToTensor or ToTensor, then Normalize) only scales and normalises it.
    """
    steps = list(getattr(transform, "transforms", []))
    for i, t in enumerate(steps):
        if "ToTensor" in type(t).__name__:
            return steps[:i], steps[i:]
    raise RuntimeError(f"no ToTensor step in the eval transform: {transform}")


def apply_steps(steps: list, img):
    """Run transforms in order (what Compose does), recording each output's size."""
    sizes = []
    for t in steps:
        img = t(img)
        size = list(img.size) if isinstance(img, Image.Image) else list(getattr(img, "shape", []))
        sizes.append([type(t).__name__, size])
    return img, sizes


def numpy_normalize(u8_hwc: np.ndarray, mean, std) -> np.ndarray:
    """ToTensor + Normalize written out in float32 numpy, as a C++ port would do it:
    (x / 255 - mean) / std with float32 constants."""
    x = u8_hwc.astype(np.float32).transpose(2, 0, 1) / np.float32(255.0)
    m = np.asarray(mean, dtype=np.float32).reshape(-1, 1, 1)
    s = np.asarray(std, dtype=np.float32).reshape(-1, 1, 1)
    return (x - m) / s


def fixture_data_config(timm, source: str, expect: Dict[str, Any]) -> Tuple[Dict[str, Any], List[str]]:
    """Resolve the eval data config of a registered pretrained tag, noting any surprise."""
    notes = []
    pcfg = registry_pretrained_cfg(timm, source)
    if not pcfg:
        pcfg = dict(expect, mean=IMAGENET_MEAN, std=IMAGENET_STD)
        notes.append(f"registry had no pretrained_cfg for {source}; used the expected values")
        warn(notes[-1])
    data_config = resolve_data_config(timm, pretrained_cfg=pcfg)
    for k, v in expect.items():
        got = data_config.get(k)
        if (tuple(got) if isinstance(got, (list, tuple)) else got) != v:
            notes.append(f"data_config[{k!r}] is {got!r}, expected {v!r}; keeping timm's value")
            warn(notes[-1])
    return data_config, notes


def fixture_for_photo(path: Path, transform, pil_steps, tensor_steps, data_config,
                      folder: Path) -> Dict[str, Any]:
    """Write <stem>.npy (uint8 HWC) and <stem>.f32.npy (float32 CHW) and check them."""
    img = load_rgb(path)
    with Image.open(path) as raw:
        mode, size = raw.mode, list(raw.size)
    pre, sizes = apply_steps(pil_steps, img)
    u8 = np.asarray(pre, dtype=np.uint8).copy()
    full = transform(img).to(torch.float32)
    tail, _ = apply_steps(tensor_steps, Image.fromarray(u8))
    exact = bool(torch.equal(tail, full))
    ref = numpy_normalize(u8, data_config["mean"], data_config["std"])
    np_diff = float(np.max(np.abs(ref - full.numpy())))
    np_exact = bool(np.array_equal(ref, full.numpy()))
    log(f"{path.name:18s} {mode:5s} {size} -> {u8.shape} uint8; tensor steps on it == full "
        f"transform: {exact}; numpy (x/255-mean)/std max abs diff {np_diff:.3g} "
        f"(bit-exact {np_exact})")
    save_npy(folder / f"{path.stem}.npy", u8)
    save_npy(folder / f"{path.stem}.f32.npy", full.numpy().astype(np.float32))
    return {"file": path.name, "stem": path.stem, "source_mode": mode, "source_size_wh": size,
            "pil_steps": sizes, "u8_shape_hwc": list(u8.shape),
            "f32_shape_chw": list(full.shape), "tensor_steps_exact": exact,
            "numpy_normalize_max_abs": np_diff, "numpy_normalize_bit_exact": np_exact}


def make_preprocess_fixture(timm, source: str, expect: Dict[str, Any], photo_paths: List[Path],
                            out_root: Path) -> Dict[str, Any]:
    """All photos through one eval pipeline into OUT/preprocess/timm_<interp>_<crop>/."""
    data_config, notes = fixture_data_config(timm, source, expect)
    transform = create_eval_transform(timm, data_config)
    pil_steps, tensor_steps = split_before_to_tensor(transform)
    folder = out_root / f"timm_{data_config['interpolation']}_{fmt_crop(data_config['crop_pct'])}"
    folder.mkdir(parents=True, exist_ok=True)
    log(f"\n=== preprocess fixture {folder.name} (pretrained_cfg of {source})")
    log(f"eval transform: {transform}")

    entries = [fixture_for_photo(p, transform, pil_steps, tensor_steps, data_config, folder)
               for p in photo_paths]
    all_exact = all(e["tensor_steps_exact"] for e in entries)
    if not all_exact:
        warn(f"{folder.name}: some uint8 fixtures do not reproduce the full transform exactly")
    meta = {
        "source_pretrained_cfg": source,
        "interpolation": data_config["interpolation"],
        "crop_pct": data_config["crop_pct"],
        "crop_mode": data_config.get("crop_mode"),
        "input_size": data_config["input_size"],
        "mean": data_config["mean"], "std": data_config["std"],
        "resize_shorter_side": math.floor(data_config["input_size"][-1]
                                          / data_config["crop_pct"]),
        "data_config": data_config,
        "how": "timm.data.resolve_data_config({}, pretrained_cfg=<registry cfg>); "
               "timm.data.create_transform(**data_config); photos opened with "
               "PIL.Image.open(path).convert('RGB'), no EXIF rotation",
        "transform": str(transform),
        "files": {"<stem>.npy": "uint8 HWC RGB after the PIL steps (before ToTensor)",
                  "<stem>.f32.npy": "float32 CHW, output of the full eval transform"},
        "photos": entries,
        "all_tensor_steps_exact": all_exact,
        "notes": notes,
        "versions": versions(),
    }
    write_json(folder / "meta.json", meta)
    return meta


def make_all_fixtures(timm, photo_paths: List[Path], out_root: Path) -> List[str]:
    """Every configured pipeline; returns the sources that failed (the run goes on)."""
    failed = []
    for source, expect in PREPROCESS_SOURCES:
        try:
            make_preprocess_fixture(timm, source, expect, photo_paths, out_root)
        except Exception:  # noqa: BLE001 - one pipeline failing must not lose the other
            failed.append(f"preprocess {source}")
            log(f"FAILED preprocess {source}:\n{traceback.format_exc()}")
    return failed
