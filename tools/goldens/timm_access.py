"""The places where the golden makers call into timm, written defensively.

timm's public API moved a little across releases (resolve_data_config's keyword for a
pretrained config, where get_pretrained_cfg lives, save_config_for_hf's arguments). The GPU
session that runs these scripts is short, so each call here has a fallback that keeps the
run going and says in the log what it did instead.
"""
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from torch import nn

from golden_io import log, warn, write_json

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def import_timm():
    """Import timm late so --help and --list work on machines without it."""
    import timm  # noqa: WPS433
    import timm.data  # noqa: F401
    import timm.models  # noqa: F401
    return timm


def resolve_data_config(timm, model=None, pretrained_cfg=None) -> Dict[str, Any]:
    """timm's own resolution of the eval preprocessing, from a model or a pretrained_cfg.

    resolve_data_config({}, model=model) is what timm's inference and validation scripts
    use; it reads model.pretrained_cfg. A bare pretrained_cfg is passed with the keyword when
    the release has it, else through a stand-in module carrying it.
    """
    if model is not None:
        return dict(timm.data.resolve_data_config({}, model=model))
    try:
        return dict(timm.data.resolve_data_config({}, pretrained_cfg=pretrained_cfg))
    except TypeError:
        holder = nn.Module()
        holder.pretrained_cfg = pretrained_cfg
        holder.default_cfg = pretrained_cfg
        return dict(timm.data.resolve_data_config({}, model=holder))


def create_eval_transform(timm, data_config: Dict[str, Any]):
    """timm.data.create_transform(**data_config) with is_training left False: the eval
    pipeline (Resize shorter side to floor(size / crop_pct), CenterCrop, ToTensor, Normalize)."""
    return timm.data.create_transform(**data_config)


def registry_pretrained_cfg(timm, name: str) -> Optional[Dict[str, Any]]:
    """The registered pretrained_cfg of 'arch.tag' as a plain dict, or None if not found."""
    getter = getattr(timm.models, "get_pretrained_cfg", None)
    if getter is None:
        try:
            from timm.models._registry import get_pretrained_cfg as getter  # noqa: WPS433
        except ImportError:
            return None
    try:
        cfg = getter(name)
    except Exception as e:  # noqa: BLE001
        warn(f"get_pretrained_cfg({name!r}) failed: {e}")
        return None
    if cfg is None:
        return None
    return cfg.to_dict() if hasattr(cfg, "to_dict") else dict(cfg)


# ----------------------------------------------------------------------------------------
# config.json
# ----------------------------------------------------------------------------------------

def filtered_pretrained_cfg(cfg: Dict[str, Any]) -> Dict[str, Any]:
    """What timm keeps of a pretrained_cfg in config.json: no weight sources, no nulls
    (except pool_size / first_conv / classifier, which timm always keeps)."""
    drop = {"url", "file", "hf_hub_id", "hf_hub_filename", "source", "state_dict"}
    keep_null = {"pool_size", "first_conv", "classifier"}
    return {k: v for k, v in cfg.items()
            if k not in drop and (v is not None or k in keep_null)}


def write_config_fallback(model: nn.Module, path: Path) -> None:
    """The config.json layout of timm 1.0's save_config_for_hf, for when it cannot be called:
    architecture, num_classes, num_features, global_pool (only when it is a string; a ResNet's
    is a module, so it is absent), pretrained_cfg."""
    pretrained_cfg = filtered_pretrained_cfg(dict(model.pretrained_cfg))
    hf_config = {"architecture": pretrained_cfg.pop("architecture", None),
                 "num_classes": int(model.num_classes),
                 "num_features": int(model.num_features)}
    pool = getattr(model, "global_pool", None)
    if isinstance(pool, str) and pool:
        hf_config["global_pool"] = pool
    pretrained_cfg["num_classes"] = int(model.num_classes)
    hf_config["pretrained_cfg"] = pretrained_cfg
    write_json(path, hf_config)


def write_config_json(model: nn.Module, path: Path) -> Dict[str, Any]:
    """Write config.json with timm's own exporter (what push_to_hf_hub uploads).

    The top-level num_classes is the model's. pretrained_cfg.num_classes is made to agree
    with it: older timm copies the source checkpoint's 1000 there (its loader lets the top
    level win), newer timm writes them equal already.
    """
    how = "timm.models._hub.save_config_for_hf"
    adjustments: List[str] = []
    try:
        from timm.models._hub import save_config_for_hf  # noqa: WPS433
        save_config_for_hf(model, Path(path))
    except Exception as e:  # noqa: BLE001 - any exporter problem falls back to the mirror
        warn(f"timm's save_config_for_hf failed ({type(e).__name__}: {e}); using the fallback")
        how = "fallback mirror of timm 1.0 save_config_for_hf"
        write_config_fallback(model, path)
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("num_classes") != model.num_classes:
        adjustments.append(f"top-level num_classes {cfg.get('num_classes')} -> {model.num_classes}")
        cfg["num_classes"] = int(model.num_classes)
    pcfg = cfg.setdefault("pretrained_cfg", {})
    if pcfg.get("num_classes") != model.num_classes:
        adjustments.append(f"pretrained_cfg.num_classes {pcfg.get('num_classes')} -> "
                           f"{model.num_classes}")
        pcfg["num_classes"] = int(model.num_classes)
    if adjustments:
        write_json(path, cfg)
        log(f"config.json adjusted: {adjustments}")
    return dict(writer=how, adjustments=adjustments, architecture=cfg.get("architecture"),
                keys=sorted(cfg))


# ----------------------------------------------------------------------------------------
# what was built
# ----------------------------------------------------------------------------------------

def _describe_stage(blocks: List[nn.Module]) -> Dict[str, Any]:
    """Block count, widths, grouping and pooling placement of one ResNet stage."""
    b0 = blocks[0]
    st: Dict[str, Any] = {"blocks": len(blocks), "block": type(b0).__name__,
                          "out_channels": int(blocks[-1].conv3.out_channels)}
    ds = getattr(b0, "downsample", None)
    st["downsample"] = [type(m).__name__ for m in ds] if ds is not None else None
    conv2 = getattr(b0, "conv2", None)
    if conv2 is not None and hasattr(conv2, "radix"):
        st["radix"] = int(conv2.radix)
        st["groups_3x3"] = int(conv2.conv.groups)
        st["cardinality"] = int(conv2.conv.groups) // max(1, int(conv2.radix))
        st["width"] = int(conv2.conv.in_channels)
        st["attn_channels"] = int(conv2.fc1.out_channels)
    elif isinstance(conv2, nn.Conv2d):
        st["groups_3x3"] = int(conv2.groups)
        st["width"] = int(conv2.in_channels)
    st["avd"] = [("first" if getattr(b, "avd_first", None) is not None else
                  "last" if getattr(b, "avd_last", None) is not None else None)
                 for b in blocks]
    return st


def _describe_efficientnet_block(block: nn.Module) -> Dict[str, Any]:
    """One EfficientNet block: its class, widths, depthwise kernel and stride, SE width."""
    dw = block.conv_dw
    se = getattr(block, "se", None)
    return {"type": type(block).__name__, "in": int(dw.in_channels if not hasattr(block, "conv_pwl")
                                                    else block.conv_pw.in_channels),
            "mid": int(dw.out_channels), "kernel": int(dw.kernel_size[0]),
            "stride": int(dw.stride[0]), "padding": int(dw.padding[0]) if isinstance(
                dw.padding, tuple) else str(dw.padding),
            "se": int(se.conv_reduce.out_channels) if hasattr(se, "conv_reduce") else 0,
            "skip": bool(getattr(block, "has_skip", False))}


def describe_architecture(model: nn.Module) -> Dict[str, Any]:
    """What the built network is, read from its modules: for kiln developers checking their
    shape inference, and to catch a timm release that builds something else."""
    d: Dict[str, Any] = {"class": type(model).__name__}
    try:
        d["num_classes"] = int(model.num_classes)
        d["num_features"] = int(model.num_features)
        if hasattr(model, "conv_stem"):  # timm's EfficientNet class
            d["stem_channels"] = int(model.conv_stem.out_channels)
            d["stages"] = [[_describe_efficientnet_block(b) for b in stage]
                           for stage in model.blocks]
            return d
        d["deep_stem"] = isinstance(model.conv1, nn.Sequential)
        d["stem_channels"] = int(model.bn1.num_features)
        d["stages"] = [_describe_stage(list(getattr(model, f"layer{i}")))
                       for i in range(1, 5) if hasattr(model, f"layer{i}")]
    except Exception as e:  # noqa: BLE001 - the description is informative only
        d["error"] = f"{type(e).__name__}: {e}"
    return d
