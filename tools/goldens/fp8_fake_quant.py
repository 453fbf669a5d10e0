#!/usr/bin/env python3
"""Apply kiln's FP8 or int8 quantization as fake quantization in PyTorch on the timm model, independently.

kiln simulates an FP8 or int8 build on the CPU. This script re-implements the same recipe on timm's own
module, from kiln's build report (`kiln build --precision fp8|int8 --json REPORT`) alone: which
convolutions are quantized, in which format (the report's "format") and each one's activation scale.
Everything else is recomputed here:

  * each FP8 convolution's batch norm (the next module timm runs after it) is folded into it;
  * weight scales are amax / 448 per output channel of the folded kernel, the kernel becomes
    clamp(w / s, +-448) cast to float8_e4m3fn and back, times s;
  * the convolution's input goes through the same fake quantization with its per-tensor scale;
  * its output is rounded to float16 (kiln's FP8 layers write fp16) and widened again.

For an int8 report (format "int8") the grid is PyTorch's own int8 fake quantization instead:
weights torch.fake_quantize_per_channel_affine(w, amax / 127, 0, axis 0, -127, 127), inputs
torch.fake_quantize_per_tensor_affine(x, scale, 0, -128, 127), and the output stays float32 (kiln's
int8 layers write f32). An input the report quantizes per channel (a layer with "input_scales":
"per-channel", a depthwise convolution's; its scales are the report's calibration_cache.channel_scales of
that input) goes through torch.fake_quantize_per_channel_affine(x, scales, 0, axis 1, -128, 127).

All other layers run in float32 with TF32 off, so the kiln plan to compare with is built with
`--fp8-fallback fp32`. Writes OUT.npy (float64 copy of the float32 logits) and prints where
the work ran.

Usage: fp8_fake_quant.py --golden DIR --report REPORT.json --out OUT.npy [--device cuda]
DIR holds model.safetensors, input.npy and meta.json (its timm_create_model entry) or
config.json (its architecture) as make_timm_goldens.py writes them.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden_io import load_weights, log, versions  # noqa: E402
from timm_access import import_timm  # noqa: E402

E4M3_MAX = 448.0
INT8_MAX = 127.0


def fake_quantize(x: torch.Tensor, scale) -> torch.Tensor:
    q = torch.clamp(x / scale, -E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).to(torch.float32)
    return q * scale


def int8_weights(w: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    zero = torch.zeros(scale.shape, dtype=torch.int32, device=w.device)
    return torch.fake_quantize_per_channel_affine(w, scale.float(), zero, 0, -127, 127)


def int8_input(x: torch.Tensor, scale) -> torch.Tensor:
    """One scale (a float), or one per channel of x (a list: axis 1)."""
    if isinstance(scale, list):
        scales = torch.tensor(scale, dtype=torch.float32, device=x.device)
        zero = torch.zeros(scales.shape, dtype=torch.int32, device=x.device)
        return torch.fake_quantize_per_channel_affine(x, scales, zero, 1, -128, 127)
    return torch.fake_quantize_per_tensor_affine(x, scale, 0, -128, 127)


def input_scales(quant) -> dict:
    """Layer -> its input scale: a float, or a list of one per channel where the report says so."""
    channels = quant.get("calibration_cache", {}).get("channel_scales", {})
    scales = {}
    for entry in quant["layers"]:
        if entry.get("input_scales") == "per-channel":
            assert entry["input"] in channels, f"{entry['layer']}: no channel scales for {entry['input']}"
            scales[entry["layer"]] = channels[entry["input"]]
        else:
            scales[entry["layer"]] = entry["input_scale"]
    return scales


def create_model(timm, golden: Path) -> nn.Module:
    meta_path = golden / "meta.json"
    if meta_path.exists():
        spec = json.loads(meta_path.read_text())["timm_create_model"]
        name, kwargs = spec["create_model_name"], spec["create_model_kwargs"]
    else:
        name, kwargs = json.loads((golden / "config.json").read_text())["architecture"], {}
    model = timm.create_model(name, pretrained=False, **kwargs)
    state = {k: v.float() if v.is_floating_point() else v for k, v in load_weights(golden / "model.safetensors").items()}
    model.load_state_dict(state, strict=True)
    return model.eval().float()


def execution_order(model: nn.Module, x: torch.Tensor):
    """Leaf modules in the order the forward pass calls them (module path names)."""
    order, hooks = [], []
    for name, module in model.named_modules():
        if not list(module.children()):
            hooks.append(module.register_forward_hook(lambda m, i, o, name=name: order.append(name)))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return order


class Fp8Conv(nn.Module):
    """conv (+ its folded batch norm) with fake-quantized input and weights; FP8: output rounded to fp16."""

    def __init__(self, conv: nn.Conv2d, bn, input_scale, int8: bool = False):
        super().__init__()
        w = conv.weight.detach().float()
        b = conv.bias.detach().float() if conv.bias is not None else torch.zeros(w.shape[0], device=w.device)
        if bn is not None:
            factor = bn.weight.detach().float() / torch.sqrt(bn.running_var.detach().float() + bn.eps)
            w = w * factor.view(-1, 1, 1, 1)
            b = (b - bn.running_mean.detach().float()) * factor + bn.bias.detach().float()
        top = INT8_MAX if int8 else E4M3_MAX
        amax = w.abs().amax(dim=(1, 2, 3))
        self.weight_scale = torch.where(amax > 0, amax / top, torch.full_like(amax, 1.0 / top))
        self.weight = (int8_weights(w, self.weight_scale) if int8
                       else fake_quantize(w, self.weight_scale.view(-1, 1, 1, 1)))
        self.bias = b
        self.int8 = int8
        self.input_scale = input_scale if int8 else torch.tensor(input_scale, dtype=torch.float32, device=w.device)
        self.conv = conv

    def forward(self, x):
        c = self.conv
        xq = int8_input(x, self.input_scale) if self.int8 else fake_quantize(x, self.input_scale)
        y = nn.functional.conv2d(xq, self.weight, self.bias, c.stride, c.padding, c.dilation, c.groups)
        return y if self.int8 else y.half().float()


def set_module(model: nn.Module, path: str, module: nn.Module) -> None:
    parent, _, leaf = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def fake_quantized_logits(timm, golden: Path, layers, x: torch.Tensor, device, int8=False):
    """timm's model with `layers` (name -> input scale, or int8 scales per channel) fake-quantized;
    returns (logits, BNs folded)."""
    model = create_model(timm, golden).to(device)
    order = execution_order(model, x[:1])
    modules = dict(model.named_modules())
    folded = 0
    for layer, scale in layers.items():
        conv = modules.get(layer)
        assert isinstance(conv, nn.Conv2d), f"{layer}: not a Conv2d in the timm model"
        position = order.index(layer)
        nxt = order[position + 1] if position + 1 < len(order) else None
        bn = modules[nxt] if nxt and isinstance(modules[nxt], nn.BatchNorm2d) else None
        if bn is not None and bn.num_features == conv.out_channels:
            set_module(model, nxt, nn.Identity())
            folded += 1
        else:
            bn = None
        set_module(model, layer, Fp8Conv(conv, bn, scale, int8))
    with torch.no_grad():
        return model(x).double().cpu().numpy(), folded


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--golden", type=Path, required=True)
    p.add_argument("--report", type=Path, required=True, help="kiln build --json report of an fp8 or int8 build")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--each-layer", action="store_true",
                   help="instead: quantize one layer at a time; OUT gets logits [layers, N, classes] in the "
                        "report's layer order (to find which layer two implementations disagree on)")
    args = p.parse_args(argv)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(args.device)
    timm = import_timm()
    report = json.loads(args.report.read_text())
    quant = report.get("quantization", report)
    assert quant.get("fallback") == "fp32", "build the kiln plan with --fp8-fallback fp32"
    layers = input_scales(quant)
    int8 = quant.get("format") == "int8"

    x = torch.from_numpy(np.load(args.golden / "input.npy")).float().to(device)
    if args.each_layer:
        logits = np.stack([fake_quantized_logits(timm, args.golden, {layer: scale}, x, device, int8)[0]
                           for layer, scale in layers.items()])
        folded = -1
    else:
        logits, folded = fake_quantized_logits(timm, args.golden, layers, x, device, int8)
    np.save(args.out, logits)
    log(f"{args.golden.name}: {len(layers)} {'int8' if int8 else 'FP8'} convolutions ({folded} with a folded batch norm), "
        f"logits {logits.shape} -> {args.out} [{device}, torch {versions().get('torch')}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
