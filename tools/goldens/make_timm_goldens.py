#!/usr/bin/env python3
"""Make the golden reference data kiln's tests check against, with timm itself.

kiln must reproduce timm exactly, so every golden file here comes from timm's own code:
models are built by timm.create_model (state_dict keys and shapes are timm's), the network
input is made by timm's own eval transform (resolve_data_config + create_transform), and the
reference logits come from the timm module run in float64.

No pretrained weights can be fetched where this runs, and golden data must never be made of
zeros, so the weights are random but chosen so that every path of the network matters:
  * timm's own random init (seeded) for convolutions and the classifier;
  * every BatchNorm gets random affine parameters (weight ~ U(0.5, 1.5), bias ~ N(0, 0.2)),
    which also undoes timm's zero-init of each block's last BN (that init silences the
    residual branch and would hide bugs in it);
  * BatchNorm running statistics are re-estimated on real photos (all photos in --photos
    plus their horizontal flips, each through the model's own eval transform), so that
    activations keep a realistic scale through the depth of the network.

Writes, per model, OUT/<model_name>/{model.safetensors, config.json, input.npy, logits.npy,
meta.json}, and preprocessing fixtures under OUT/preprocess/timm_<interp>_<crop_pct>/.
tools/goldens/README.md gives the layout and the exact command lines.

Needs torch, timm, numpy, PIL and torchvision (timm's transforms use it); safetensors is
used when installed, otherwise golden_io's minimal writer produces the same format.
"""
import argparse
import copy
import gc
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np
import torch
from PIL import Image
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))  # sibling modules, from any cwd

from golden_io import (folder_size, list_photos, load_rgb, load_weights, log, rel_l2,
                       save_npy, save_weights, verify_saved_weights, versions, warn, write_json)
from preprocess_fixtures import make_all_fixtures
from timm_access import (create_eval_transform, describe_architecture, import_timm,
                         registry_pretrained_cfg, resolve_data_config, write_config_json)

DEFAULT_INPUT_PHOTOS = ("dog.jpg", "kite.jpg")

# Random BN affine parameters: a weight range away from 0 keeps every channel alive, a bias
# spread of 0.2 moves where ReLU cuts without killing whole channels.
BN_WEIGHT_RANGE = (0.5, 1.5)
BN_BIAS_STD = 0.2

# The reduced models are committed to the repository; this keeps them (weights, inputs and
# logits together) small enough to live in git.
COMMITTED_SIZE_BUDGET = 6 * 1024 * 1024


@dataclass
class ModelSpec:
    """One golden model: which timm entrypoint and pretrained tag, and what to shrink.

    `timm_name` carries the pretrained tag so the model's pretrained_cfg (and with it the
    preprocessing and config.json) is exactly that of the real checkpoint it stands in for.
    `expect` lists the preprocessing values that tag is known to have; a mismatch is reported
    and timm's value kept, since timm is the reference.
    """
    name: str
    timm_name: str
    overrides: Dict[str, Any]
    expect: Dict[str, Any]
    reduced: bool = True
    default: bool = True
    purpose: str = ""


EVAL_224_BILINEAR = dict(interpolation="bilinear", crop_pct=0.875, input_size=(3, 224, 224))
EVAL_224_BICUBIC_95 = dict(interpolation="bicubic", crop_pct=0.95, input_size=(3, 224, 224))
EVAL_224_BICUBIC = dict(interpolation="bicubic", crop_pct=0.875, input_size=(3, 224, 224))

SPECS: List[ModelSpec] = [
    ModelSpec(
        name="resnest_tiny", timm_name="resnest50d.in1k",
        # resnest50d's structure arguments, repeated so the golden does not lean on the
        # entrypoint's defaults; only depth, stem width and stage widths are shrunk.
        overrides=dict(stem_type="deep", avg_down=True, base_width=64, cardinality=1,
                       block_args=dict(radix=2, avd=True, avd_first=False),
                       layers=[2, 1, 1, 1], stem_width=8, channels=(8, 16, 32, 64),
                       num_classes=10),
        expect=EVAL_224_BILINEAR,
        purpose="ResNeSt (radix 2, avd pooling after the attention, deep stem, avg-pool "
                "downsample); stage 1 has 2 blocks so depth must come from the weights"),
    ModelSpec(
        name="resnet_tiny", timm_name="resnet50.a1_in1k",
        overrides=dict(layers=[2, 1, 1, 1], channels=(8, 16, 32, 32), num_classes=1000),
        expect=EVAL_224_BICUBIC_95,
        purpose="ResNet-50 layout (7x7 stem, strided 1x1 conv downsample), 1000 ImageNet "
                "classes so class names print; bicubic / crop_pct 0.95 preprocessing"),
    ModelSpec(
        name="resnest_tiny_4s2x", timm_name="resnest50d_4s2x40d.in1k",
        # resnest50d_4s2x40d's structure. Stage widths are multiples of 32 so the grouped
        # 3x3 conv input (int(planes * 40 / 64) * 2 channels) divides by radix * groups = 8.
        overrides=dict(stem_type="deep", avg_down=True, base_width=40, cardinality=2,
                       block_args=dict(radix=4, avd=True, avd_first=True),
                       layers=[1, 1, 1, 1], stem_width=8, channels=(32, 32, 32, 32),
                       num_classes=10),
        expect=EVAL_224_BICUBIC,
        purpose="ResNeSt variant: radix 4, cardinality 2 (radix softmax per group), base "
                "width 40, avd_first (avg-pool before the split attention)"),
    ModelSpec(
        name="resnet_tiny_d", timm_name="resnet50d",
        overrides=dict(layers=[1, 1, 2, 1], stem_width=8, channels=(8, 16, 32, 32),
                       num_classes=1000),
        expect={}, default=False,
        purpose="ResNet-D (deep stem, avg-pool downsample) in the ResNet family; opt-in, "
                "with resnet50d's default pretrained tag"),
    ModelSpec(
        name="efficientnet_tiny", timm_name="efficientnet_b0.ra_in1k",
        # efficientnet_b0's own arch_def scaled by timm's channel / depth multipliers: widths
        # rounded to multiples of 8 (stem 8, head 320), stages of 1, 1, 1, 2, 2, 2, 1 blocks.
        overrides=dict(channel_multiplier=0.25, depth_multiplier=0.5, num_classes=10),
        expect=EVAL_224_BICUBIC,
        purpose="EfficientNet-B0 layout: depthwise-separable and inverted residual blocks, "
                "squeeze-excite, 3x3 and 5x5 depthwise kernels, SiLU; stride-1 stages with 2 "
                "blocks so the residual path is exercised; bicubic / crop_pct 0.875"),
    ModelSpec(
        name="efficientnet_b0", timm_name="efficientnet_b0.ra_in1k", overrides={},
        expect=EVAL_224_BICUBIC, reduced=False, default=False,
        purpose="full-size EfficientNet-B0 (with --full; too large to commit)"),
    ModelSpec(
        name="resnest50d", timm_name="resnest50d.in1k", overrides={},
        expect=EVAL_224_BILINEAR, reduced=False, default=False,
        purpose="full-size ResNeSt-50d (with --full; too large to commit)"),
    ModelSpec(
        name="resnet50", timm_name="resnet50.a1_in1k", overrides={},
        expect=EVAL_224_BICUBIC_95, reduced=False, default=False,
        purpose="full-size ResNet-50 (with --full; too large to commit)"),
]


@dataclass
class RunConfig:
    """Command-line choices shared by every model."""
    out: Path
    seed: int
    device: torch.device
    bn_dtype: torch.dtype
    bn_batch_size: int
    input_photos: Tuple[str, ...]
    photo_names: List[str] = field(default_factory=list)


# ----------------------------------------------------------------------------------------
# building
# ----------------------------------------------------------------------------------------

# timm's efficientnet_b0 entrypoint fixes its own channel and depth multipliers, so a scaled
# B0 is made by the generator the entrypoint calls, with the same variant name (and with it
# the same pretrained_cfg).
EFFICIENTNET_SCALING = ("channel_multiplier", "depth_multiplier")


def instantiate(timm, name: str, kwargs: Dict[str, Any]) -> nn.Module:
    """timm.create_model(name, pretrained=False, **kwargs), or timm's EfficientNet generator
    when kwargs scale an EfficientNet's widths or depth."""
    if any(k in kwargs for k in EFFICIENTNET_SCALING):
        from timm.models import efficientnet  # noqa: WPS433 - only these models need it
        return efficientnet._gen_efficientnet(name.split(".")[0], pretrained=False, **kwargs)
    return timm.create_model(name, pretrained=False, **kwargs)


def create_timm_model(timm, spec: ModelSpec, seed: int) -> Tuple[nn.Module, Dict[str, Any]]:
    """Build the model with timm.create_model, falling back where releases differ.

    The global RNG is seeded right before each attempt, so the attempt that succeeds always
    starts from the same state and reruns give identical weights. Fallbacks: an unknown
    pretrained tag is retried without the tag; a ResNet without the `channels` argument is
    retried at full width (flagged: the files then get much larger).
    """
    kwargs = copy.deepcopy(spec.overrides)
    names = [spec.timm_name]
    if "." in spec.timm_name:
        names.append(spec.timm_name.split(".")[0])
    notes: List[str] = []
    for name in names:
        while True:
            torch.manual_seed(seed)
            try:
                model = instantiate(timm, name, kwargs)
            except TypeError as e:
                if "channels" in kwargs and "channels" in str(e):
                    notes.append(f"no 'channels' argument ({e}); built at full stage widths")
                    warn(notes[-1])
                    kwargs.pop("channels")
                    continue
                raise
            except RuntimeError as e:
                if "tag" in str(e).lower() and name != names[-1]:
                    notes.append(f"create_model({name!r}) failed ({e}); retrying without tag")
                    warn(notes[-1])
                    break
                raise
            return model, dict(create_model_name=name, create_model_kwargs=kwargs,
                               fallbacks=notes)
    raise RuntimeError(f"could not build {spec.name}")


def check_pretrained_cfg(timm, model: nn.Module, spec: ModelSpec) -> List[str]:
    """Make sure the model carries the real checkpoint's pretrained_cfg.

    resolve_data_config reads model.pretrained_cfg; without it timm silently falls back to
    bicubic / 0.875. Values that differ from what this script expects are reported, not
    overwritten: timm is the reference.
    """
    notes: List[str] = []
    cfg = getattr(model, "pretrained_cfg", None)
    if not cfg:
        cfg = dict(registry_pretrained_cfg(timm, spec.timm_name) or {})
        for k, v in spec.expect.items():
            cfg.setdefault(k, v)
        model.pretrained_cfg = cfg
        model.default_cfg = cfg
        notes.append("model had no pretrained_cfg; attached the registry's")
        warn(f"{spec.name}: {notes[-1]}")
    for k, v in spec.expect.items():
        got = cfg.get(k)
        if (tuple(got) if isinstance(got, (list, tuple)) else got) != v:
            notes.append(f"pretrained_cfg[{k!r}] is {got!r}, expected {v!r}; keeping timm's")
            warn(f"{spec.name}: {notes[-1]}")
    return notes


# ----------------------------------------------------------------------------------------
# weights: random BN affine and BN statistics from real photos
# ----------------------------------------------------------------------------------------

def batchnorms(model: nn.Module) -> List[nn.modules.batchnorm._BatchNorm]:
    """Every BatchNorm, in module order (the order fixes which random numbers each gets)."""
    return [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def randomize_bn_affine(model: nn.Module, seed: int) -> int:
    """Give every BN a random affine transform, drawn from a generator of its own.

    A separate generator keeps these draws independent of how many numbers timm's init
    consumed, so they stay the same if a timm release changes its init order.
    """
    gen = torch.Generator().manual_seed(seed + 1)
    lo, hi = BN_WEIGHT_RANGE
    count = 0
    with torch.no_grad():
        for bn in batchnorms(model):
            if bn.weight is None or bn.bias is None:
                continue
            w = torch.rand(bn.weight.shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
            b = torch.randn(bn.bias.shape, generator=gen, dtype=torch.float32) * BN_BIAS_STD
            bn.weight.copy_(w)
            bn.bias.copy_(b)
            count += 1
    return count


def balanced_batches(x: torch.Tensor, batch_size: int) -> List[torch.Tensor]:
    """Split into nearly equal batches: the cumulative BN average weights batches equally,
    and a batch of one would break BN over the 1x1 attention maps in training mode."""
    n = x.shape[0]
    count = max(1, -(-n // max(1, batch_size)))
    if count > 1 and n // count < 2:
        count = max(1, n // 2)
    return [c for c in torch.tensor_split(x, count, dim=0) if c.shape[0] > 0]


def reestimate_bn_stats(model: nn.Module, images: torch.Tensor, batch_size: int,
                        device: torch.device, dtype: torch.dtype) -> Dict[str, Any]:
    """Replace BN running statistics with their average over the given images.

    Training mode makes BN record batch statistics; momentum=None turns the running update
    into a cumulative average over all batches; reset_running_stats starts it from nothing.
    The original momenta are restored and the model is left in eval mode.
    """
    bns = batchnorms(model)
    saved_momentum = [bn.momentum for bn in bns]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.to(device=device, dtype=dtype)
    model.train()
    batches = balanced_batches(images, batch_size)
    with torch.no_grad():
        for batch in batches:
            model(batch.to(device=device, dtype=dtype))
    for bn, m in zip(bns, saved_momentum):
        bn.momentum = m
    model.eval()
    tracked = sorted({int(bn.num_batches_tracked) for bn in bns
                      if getattr(bn, "num_batches_tracked", None) is not None})
    return dict(bn_layers=len(bns), batches=len(batches),
                batch_sizes=[int(b.shape[0]) for b in batches], num_batches_tracked=tracked,
                dtype=str(dtype), device=str(device))


def export_state_dict(model: nn.Module) -> Dict[str, torch.Tensor]:
    """timm's state_dict with floating tensors as contiguous float32 on the CPU.

    Integer buffers (BN num_batches_tracked, int64) are kept as they are, as in a
    checkpoint saved by timm.
    """
    out = {}
    for k, v in model.state_dict().items():
        t = v.detach().to("cpu")
        if t.is_floating_point():
            t = t.to(torch.float32)
        out[k] = t.contiguous().clone()
    return out


# ----------------------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------------------

def transformed_photos(transform, photos: Dict[str, Image.Image]) -> Dict[str, torch.Tensor]:
    """Each photo through the model's eval transform, as float32 CHW tensors."""
    out = {}
    for name, img in photos.items():
        t = transform(img)
        if not isinstance(t, torch.Tensor):
            raise RuntimeError(f"transform returned {type(t).__name__}, expected a tensor")
        out[name] = t.to(torch.float32).contiguous()
    return out


def forward(model: nn.Module, x: torch.Tensor, device: torch.device) -> np.ndarray:
    """Eval-mode forward without autograd; the result comes back to the CPU as numpy."""
    model.eval()
    with torch.no_grad():
        y = model(x.to(device))
    return y.detach().to("cpu").numpy()


def topk_rows(logits: np.ndarray, k: int = 5) -> List[Dict[str, Any]]:
    """Top-k classes per row and the top-1/top-2 margin (a small margin warns that a
    float32 top-1 may flip against the float64 reference)."""
    rows = []
    for row in logits:
        order = np.argsort(-row, kind="stable")[:k]
        margin = float(row[order[0]] - row[order[1]]) if row.size > 1 else float("inf")
        rows.append({"top": order.tolist(), "values": row[order].tolist(),
                     "top1_margin": margin})
    return rows


def verify_reload(timm, build_info: Dict[str, Any], path: Path, x32: torch.Tensor,
                  logits64: np.ndarray, run: RunConfig) -> float:
    """Rebuild the model from scratch, load the saved file strictly, rerun in float64.

    This is what a user of the golden does; it proves the file alone (timm's key names, no
    hidden state) reproduces logits.npy.
    """
    torch.manual_seed(run.seed)  # the init is overwritten by the load; seeded for repeatability
    fresh = instantiate(timm, build_info["create_model_name"], build_info["create_model_kwargs"])
    fresh.load_state_dict(load_weights(path), strict=True)
    fresh.to(device=run.device, dtype=torch.float64)
    again = forward(fresh, x32.to(torch.float64), run.device)
    diff = float(np.max(np.abs(again - logits64)))
    scale = float(np.max(np.abs(logits64))) or 1.0
    log(f"reload check: max |logits(reloaded file) - logits| = {diff:.3e}")
    if diff > 1e-9 * scale:
        raise RuntimeError(f"reloaded weights give different logits (max abs diff {diff:.3e})")
    return diff


def calibrate(model: nn.Module, tensors: Dict[str, torch.Tensor], run: RunConfig) -> Dict[str, Any]:
    """BN statistics over every photo and its mirror image, then back to float32 eval."""
    names = sorted(tensors)
    originals = torch.stack([tensors[n] for n in names])
    images = torch.cat([originals, torch.flip(originals, dims=[3])], dim=0)
    info = reestimate_bn_stats(model, images, run.bn_batch_size, run.device, run.bn_dtype)
    model.to(device=run.device, dtype=torch.float32).eval()
    log(f"BN statistics re-estimated on {images.shape[0]} images ({len(names)} photos + flips) "
        f"in {info['batches']} batches {info['batch_sizes']}, {run.bn_dtype} on {run.device}")
    info["photos"] = names
    info["horizontal_flips"] = True
    return info


def run_logits(model: nn.Module, x32: torch.Tensor, run: RunConfig) -> Dict[str, Any]:
    """Reference logits in float64 and, for information, the float32 error against them."""
    logits32 = forward(model, x32, run.device)
    model64 = copy.deepcopy(model).to(dtype=torch.float64)
    logits64 = forward(model64, x32.to(torch.float64), run.device)
    del model64
    if not np.all(np.isfinite(logits64)):
        raise RuntimeError("float64 logits are not finite")
    err = rel_l2(logits32, logits64)
    max_abs = float(np.max(np.abs(logits32.astype(np.float64) - logits64)))
    log(f"||logits_fp32 - logits_fp64|| / ||logits_fp64|| = {err:.3e} (max abs {max_abs:.3e})")
    top = topk_rows(logits64)
    for i, row in enumerate(top):
        log(f"row {i} ({run.input_photos[i]}): top-5 {row['top']} "
            f"top-1 margin {row['top1_margin']:.4g}")
        if row["top1_margin"] < 100 * max_abs:
            warn(f"row {i}: top-1 margin {row['top1_margin']:.3g} is within 100x of the "
                 f"float32 error {max_abs:.3g}; a float32 top-1 may flip")
    return dict(logits64=logits64, rel_l2=err, max_abs=max_abs, top5=top)


def model_meta(spec, run, build_info, cfg_notes, model, n_affine, bn_info, writer,
               config_info, data_config, transform, x32, res, reload_diff) -> Dict[str, Any]:
    """meta.json: everything needed to know how the golden files were made."""
    return {
        "model_name": spec.name, "purpose": spec.purpose, "reduced": spec.reduced,
        "stands_in_for": spec.timm_name,
        "timm_create_model": build_info,
        "pretrained_cfg_notes": cfg_notes,
        "architecture": describe_architecture(model),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seed": run.seed,
        "weights": {
            "init": "timm's own random init right after torch.manual_seed(seed)",
            "bn_affine": f"weight ~ U{BN_WEIGHT_RANGE}, bias ~ N(0, {BN_BIAS_STD}^2), from "
                         "torch.Generator().manual_seed(seed + 1), every BatchNorm in module order",
            "bn_affine_count": n_affine,
            "bn_statistics": "re-estimated: train mode, reset_running_stats(), momentum=None "
                             "(cumulative average) over all photos and their horizontal flips "
                             "through the eval transform; then eval mode",
            "bn_reestimation": bn_info,
            "saved_dtype": "float32; BN num_batches_tracked int64 as in the state_dict",
            "safetensors_writer": writer,
        },
        "config_json": config_info,
        "preprocessing": {
            "data_config": data_config, "transform": str(transform),
            "how": "timm.data.resolve_data_config({}, model=model); timm.data.create_transform("
                   "**data_config); photos opened with PIL.Image.open(path).convert('RGB')"},
        "input": {"file": "input.npy", "photos": list(run.input_photos),
                  "shape": list(x32.shape), "dtype": "float32", "layout": "NCHW"},
        "logits": {"file": "logits.npy", "shape": list(res["logits64"].shape),
                   "dtype": "float64",
                   "how": f"model.double() on input.double(), eval mode, on {run.device}"},
        "fp32_vs_fp64": {"rel_l2": res["rel_l2"], "max_abs": res["max_abs"],
                         "how": "the same weights in float32 on input.npy, same device"},
        "reload_check_max_abs": reload_diff,
        "top5": res["top5"],
        "versions": versions(),
    }


def make_model_golden(timm, spec: ModelSpec, run: RunConfig,
                      photos: Dict[str, Image.Image]) -> None:
    """Build, randomize, calibrate, run and save one model into OUT/<spec.name>/."""
    out_dir = run.out / spec.name
    out_dir.mkdir(parents=True, exist_ok=True)
    log(f"\n=== {spec.name}: {spec.timm_name} {spec.overrides or '(full size)'}")
    model, build_info = create_timm_model(timm, spec, run.seed)
    cfg_notes = check_pretrained_cfg(timm, model, spec)
    n_affine = randomize_bn_affine(model, run.seed)
    log(f"built {type(model).__name__} with create_model({build_info['create_model_name']!r}): "
        f"{sum(p.numel() for p in model.parameters())} parameters; random affine on "
        f"{n_affine} BatchNorms")

    data_config = resolve_data_config(timm, model=model)
    transform = create_eval_transform(timm, data_config)
    log(f"data config: {data_config}\neval transform: {transform}")
    tensors = transformed_photos(transform, photos)
    bn_info = calibrate(model, tensors, run)

    state = export_state_dict(model)
    model.load_state_dict(state)  # the model now holds exactly the float32 values saved
    x32 = torch.stack([tensors[p] for p in run.input_photos])
    res = run_logits(model, x32, run)

    weights_path = out_dir / "model.safetensors"
    writer = save_weights(state, weights_path)
    verify_saved_weights(state, weights_path)
    reload_diff = verify_reload(timm, build_info, weights_path, x32, res["logits64"], run)
    config_info = write_config_json(model, out_dir / "config.json")
    save_npy(out_dir / "input.npy", x32.numpy().astype(np.float32))
    save_npy(out_dir / "logits.npy", res["logits64"].astype(np.float64))
    write_json(out_dir / "meta.json", model_meta(
        spec, run, build_info, cfg_notes, model, n_affine, bn_info, writer, config_info,
        data_config, transform, x32, res, reload_diff))
    log(f"wrote {out_dir} ({folder_size(out_dir) / 1e6:.2f} MB, {len(state)} tensors)")


# ----------------------------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------------------------

def parse_args(argv=None):
    """Command line; the epilog lists the models this script knows."""
    names = ", ".join(f"{s.name}{'' if s.default else ' (opt-in)'}" for s in SPECS if s.reduced)
    p = argparse.ArgumentParser(
        description="Make kiln's golden data with timm: random-weight timm models with BN "
                    "statistics re-estimated on real photos, their inputs and float64 logits, "
                    "and timm preprocessing fixtures.",
        epilog=f"Reduced models: {names}. --full adds the full-size resnest50d, resnet50 "
               "and efficientnet_b0. "
               "--list describes each one.")
    p.add_argument("--photos", type=Path, help="folder of photos (all of them are used for "
                   "the BN statistics and the preprocessing fixtures)")
    p.add_argument("--out", type=Path, help="output folder")
    p.add_argument("--full", action="store_true",
                   help="also make full-size resnest50d, resnet50 (about 100 MB each) and "
                        "efficientnet_b0 (21 MB)")
    p.add_argument("--seed", type=int, default=0, help="seed for the weights (default 0)")
    p.add_argument("--models", default=None,
                   help="comma-separated model names instead of the default reduced set; "
                        "'none' for preprocessing fixtures only")
    p.add_argument("--input-photos", default=",".join(DEFAULT_INPUT_PHOTOS),
                   help="photos (file names in --photos) stacked into input.npy, in order "
                        f"(default {','.join(DEFAULT_INPUT_PHOTOS)})")
    p.add_argument("--device", default="cpu",
                   help="device for BN re-estimation and logits (default cpu, bit-repeatable)")
    p.add_argument("--bn-batch-size", type=int, default=8,
                   help="images per batch while re-estimating BN statistics (default 8)")
    p.add_argument("--bn-dtype", choices=("float64", "float32"), default="float64",
                   help="precision of the BN re-estimation pass (default float64)")
    p.add_argument("--skip-preprocess", action="store_true",
                   help="do not write the preprocessing fixtures")
    p.add_argument("--list", action="store_true", help="describe the models and exit")
    args = p.parse_args(argv)
    if not args.list and (args.photos is None or args.out is None):
        p.error("--photos and --out are required")
    return args


def select_specs(args) -> List[ModelSpec]:
    """The default reduced set, or --models, plus the full-size models with --full."""
    by_name = {s.name: s for s in SPECS}
    if args.models and args.models.strip().lower() == "none":
        chosen = []
    elif args.models:
        wanted = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise SystemExit(f"unknown model(s) {unknown}; known: {sorted(by_name)}")
        chosen = [by_name[n] for n in wanted]
    else:
        chosen = [s for s in SPECS if s.default]
    if args.full:
        chosen += [s for s in SPECS if not s.reduced and s not in chosen]
    return chosen


def print_specs() -> None:
    """--list: every model, what it stands in for and why it is there."""
    for s in SPECS:
        flag = "default" if s.default else ("--full" if not s.reduced else "opt-in")
        log(f"{s.name:18s} [{flag}] {s.timm_name} {s.overrides}\n{'':18s} {s.purpose}")


def disable_tf32() -> str:
    """Keep CUDA float32 honest: TF32 would blur the float32-vs-float64 figure.

    Newer torch has the fp32_precision settings and dislikes mixing them with the legacy
    allow_tf32 flags, so the legacy flags are only used when the new ones are missing.
    """
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        return "fp32_precision = 'ieee'"
    except Exception:  # noqa: BLE001 - attribute absent in this torch release
        pass
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return "allow_tf32 = False"


def prepare_run(args) -> Tuple[RunConfig, List[Path]]:
    """Check everything that can be checked before timm is touched, so mistakes in the
    command line cost seconds, not a GPU session."""
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda requested but CUDA is not available")
        log(f"CUDA float32 without TF32: {disable_tf32()}")
    photo_paths = list_photos(args.photos)
    if len(photo_paths) < 2:
        raise SystemExit(f"need at least two photos in {args.photos}")
    input_photos = tuple(n.strip() for n in args.input_photos.split(",") if n.strip())
    missing = [n for n in input_photos if n not in {p.name for p in photo_paths}]
    if missing:
        raise SystemExit(f"input photos {missing} are not in {args.photos}")
    args.out.mkdir(parents=True, exist_ok=True)
    run = RunConfig(out=args.out, seed=args.seed, device=device,
                    bn_dtype=getattr(torch, args.bn_dtype), bn_batch_size=args.bn_batch_size,
                    input_photos=input_photos, photo_names=[p.name for p in photo_paths])
    return run, photo_paths


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.list:
        print_specs()
        return 0
    specs = select_specs(args)
    run, photo_paths = prepare_run(args)
    timm = import_timm()
    log(f"versions: {versions()}")
    log(f"{len(photo_paths)} photos: {run.photo_names}")
    photos = {p.name: load_rgb(p) for p in photo_paths}

    failures = []
    reduced_dirs = []
    for spec in specs:
        try:
            make_model_golden(timm, spec, run, photos)
            if spec.reduced:
                reduced_dirs.append(run.out / spec.name)
        except Exception:  # noqa: BLE001 - one model failing must not lose the others
            failures.append(spec.name)
            log(f"FAILED {spec.name}:\n{traceback.format_exc()}")
        gc.collect()
        if run.device.type == "cuda":
            torch.cuda.empty_cache()
    if not args.skip_preprocess:
        failures += make_all_fixtures(timm, photo_paths, run.out / "preprocess")

    total = sum(folder_size(d) for d in reduced_dirs)
    log(f"\nreduced models: {total / 1e6:.2f} MB in {[d.name for d in reduced_dirs]}")
    if total > COMMITTED_SIZE_BUDGET:
        warn(f"reduced models exceed the {COMMITTED_SIZE_BUDGET / 1e6:.1f} MB budget")
    if failures:
        log(f"FAILED: {failures}")
        return 1
    log("all done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
