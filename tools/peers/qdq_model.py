#!/usr/bin/python3
"""ONNX models of a timm-layout ResNet-50 or ResNeSt-50d checkpoint, fp32 or int8 in ONNX Runtime's QDQ format,
quantized with kiln's own scales, so that ONNX Runtime and kiln run the same int8 network.

    tools/peers/qdq_model.py ARCH CHECKPOINT_DIR OUT.onnx                 # fp32 (batch norms folded)
    tools/peers/qdq_model.py ARCH CHECKPOINT_DIR PROBE.onnx --int8 BUILD_JSON --calib-cache CACHE --output-amax probe
    node tools/peers/ort_run.js amax PROBE.onnx X.npy AMAX_JSON     # the max of |x| of PROBE's extra outputs
    tools/peers/qdq_model.py ARCH CHECKPOINT_DIR OUT.onnx --int8 BUILD_JSON --calib-cache CACHE --output-amax AMAX_JSON

ARCH is resnet50 or resnest50d (tools/random_checkpoint.py's or timm's key names); BUILD_JSON is the report
of `kiln build ... --precision int8 --calib-cache CACHE --json BUILD_JSON`, whose quantization record lists
every int8 convolution and the tensor it quantizes; CACHE holds that tensor's scale.

What the int8 model holds, for every convolution kiln runs in int8 (and only those):
- its input through QuantizeLinear -> DequantizeLinear with kiln's per-tensor scale; u8 codes with zero
  point 0 (every such input follows a ReLU, a pool of one or an attention-weighted sum of one, so it is
  never negative: codes 0..127 are kiln's s8 codes; above the calibrated threshold kiln saturates at 127
  and ONNX Runtime at 255), u8 x s8 being ONNX Runtime's fast form on x86; the stem's input (the network's,
  a normalized image, where a recipe quantizes the stem) has a sign: zero point 128 (ONNX Runtime's codes
  then reach -128 x scale, kiln's stop at -127);
- its batch-norm-folded weight as int8 codes behind DequantizeLinear, one scale per output channel,
  scale = max|w| / 127, codes rounded to nearest even and clamped to [-127, 127], as kiln computes them;
- its folded bias as int32 codes at scale input scale x weight scale (ONNX Runtime's QLinearConv takes
  an int32 bias; kiln adds an f32 bias: they differ by at most half a code of the accumulator);
- its output through QuantizeLinear -> DequantizeLinear, so that ONNX Runtime fuses the convolution into
  QLinearConv (it has no int8 convolution with an f32 output, which is what kiln runs): where an int8
  convolution reads the output, at that reader's scale (after the ReLU, which ONNX Runtime folds into the
  codes' range); elsewhere (the last 1x1 convolution of a bottleneck and the downsampling one, before the
  residual add; ResNeSt's grouped 3x3 convolution and attention fc2) at amax / 127 for the max of |x| over
  the images AMAX_JSON was measured on, zero point 128 for tensors with a sign. These are quantization
  points kiln does not have: ONNX Runtime's model rounds more than kiln's.
A residual add between two quantized tensors whose ReLU'd sum is quantized becomes ONNX Runtime's QLinearAdd.
Everything else (stem, pools, split attention's softmax and sums, the classifier) is f32.
Needs numpy and python3-onnx.
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EPS = 1e-5  # timm's BatchNorm2d eps


def read_safetensors(path):
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        blob = f.read()
    types = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(blob[begin:end], dtype=types[info["dtype"]]).reshape(info["shape"])
    return out


def int8_scales(build_json, cache_path):
    """Layer name -> input scale of every int8 convolution: the layers of kiln's build report, each with the
    scale of its input tensor in kiln's calibration cache."""
    quantization = json.load(open(build_json)).get("quantization") or {}
    layers = quantization.get("layers")
    if not layers or quantization.get("format") != "int8":
        sys.exit(f"{build_json}: no int8 layers; expected the report of `kiln build --precision int8 --json`")
    cache = json.load(open(cache_path))
    if cache.get("grid") != "int8":
        sys.exit(f"{cache_path}: expected a calibration cache with \"grid\": \"int8\"")
    return {layer["layer"]: float(cache["scales"][layer["input"]]) for layer in layers}


class Builder:
    def __init__(self, weights, scales, output_amax):
        self.w, self.scales, self.nodes, self.inits, self.count = weights, scales, [], [], 0
        # "probe": an fp32 model whose extra outputs are the tensors output_amax must give; else their amax.
        self.output_amax, self.quantize, self.probes = output_amax, output_amax != "probe", []
        self.pending = {}  # tensor -> the scale its int8 reader wants, quantized where it is made

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, hint, array):
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind, inputs, hint=None, **attrs):
        out = self.name(hint or kind)
        self.nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def qdq(self, x, scale, zero=0):
        s, z = self.const("scale", np.float32(scale)), self.const("zero", np.uint8(zero))
        return self.op("DequantizeLinear", [self.op("QuantizeLinear", [x, s, z]), s, z])

    def folded(self, conv, bn):
        w = self.w[conv + ".weight"].astype(np.float32)
        b = self.w.get(conv + ".bias", np.zeros(w.shape[0], np.float32)).astype(np.float32)
        if bn is None:
            return w, b
        g = self.w[bn + ".weight"] / np.sqrt(self.w[bn + ".running_var"] + np.float32(EPS))
        w = (w * g[:, None, None, None]).astype(np.float32)
        return w, ((b - self.w[bn + ".running_mean"]) * g + self.w[bn + ".bias"]).astype(np.float32)

    def int8_weight(self, w, b, in_scale):
        amax = np.abs(w).reshape(w.shape[0], -1).max(axis=1).astype(np.float32)
        ws = (amax / np.float32(127)).astype(np.float32)
        codes = np.clip(np.rint(w * (np.float32(1) / ws)[:, None, None, None]), -127, 127).astype(np.int8)
        wq = self.op("DequantizeLinear", [self.const("w", codes), self.const("ws", ws),
                                          self.const("wz", np.zeros_like(codes[:, 0, 0, 0]))], axis=0)
        bs = (np.float64(in_scale) * ws.astype(np.float64))
        bq = np.rint(b.astype(np.float64) / bs).astype(np.int32)
        bias = self.op("DequantizeLinear", [self.const("b", bq), self.const("bs", bs.astype(np.float32)),
                                            self.const("bz", np.zeros_like(bq))], axis=0)
        return wq, bias

    def conv(self, x, name, bn=None, stride=1, pad=0, groups=1, relu=False, reader=None):
        """Conv (+ folded bn, + ReLU); `reader`: the int8 convolution that reads the output, if any."""
        w, b = self.folded(name, bn)
        k = w.shape[2]
        if name in self.scales and self.quantize:
            if x in self.pending:
                assert self.pending[x] == self.scales[name], f"{name}: readers of one tensor share a scale"
            else:
                x = self.qdq(x, self.scales[name], 128 if x == "x" else 0)
            wname, bname = self.int8_weight(w, b, self.scales[name])
        else:
            wname, bname = self.const("w", w), self.const("b", b)
        y = self.op("Conv", [x, wname, bname], hint=name, kernel_shape=[k, k], strides=[stride, stride],
                    pads=[pad] * 4, group=groups)
        if relu:
            y = self.op("Relu", [y])
        if name in self.scales and reader not in self.scales:
            y = self.quantized_output(y, name, relu)
        return self.handoff(y, reader)

    def quantized_output(self, y, name, relu):
        """An int8 convolution's output that no int8 convolution reads: quantized at the max of |y| over the
        calibration images (scale amax / 127; zero point 128 where y has a sign), as ONNX Runtime's static
        quantization quantizes every int8 operator's output; kiln keeps these f32."""
        if not self.quantize:
            self.nodes.append(helper.make_node("Identity", [y], ["amax:" + name], name="amax:" + name))
            self.probes.append("amax:" + name)
            return y
        if name not in self.output_amax:
            sys.exit(f"the output amax file has no {name}; make it from this model's --output-amax probe")
        return self.qdq(y, self.output_amax[name] / 127, 0 if relu else 128)

    def handoff(self, y, reader):
        """Quantize y where it is made when an int8 convolution reads it, so ONNX Runtime fuses the producer."""
        if reader is None or reader not in self.scales or not self.quantize:
            return y
        q = self.qdq(y, self.scales[reader])
        self.pending[q] = self.scales[reader]
        return q


def bottleneck(g, x, p, stride, has_down, next_first):
    y = g.conv(x, p + ".conv1", p + ".bn1", relu=True, reader=p + ".conv2")
    y = g.conv(y, p + ".conv2", p + ".bn2", stride=stride, pad=1, relu=True, reader=p + ".conv3")
    y = g.conv(y, p + ".conv3", p + ".bn3")
    s = g.conv(x, p + ".downsample.0", p + ".downsample.1", stride=stride) if has_down else x
    return g.handoff(g.op("Relu", [g.op("Add", [y, s])]), next_first)


def halves(g, x, planes):
    """The two radix splits of [N, 2 x planes, H, W] along channels."""
    c = lambda *v: g.const("i", np.array(v, np.int64))
    return [g.op("Slice", [x, c(i * planes), c((i + 1) * planes), c(1)]) for i in (0, 1)]


def split_attention(g, x, p, planes):
    """timm's SplitAttn, radix 2: splits summed, pooled, fc1, fc2, softmax across the splits, weighted sum."""
    y = g.conv(x, p + ".conv", p + ".bn0", pad=1, groups=2, relu=True)
    gap = g.op("ReduceMean", [g.op("Add", halves(g, y, planes))], axes=[2, 3], keepdims=1)
    a = g.conv(g.handoff(gap, p + ".fc1"), p + ".fc1", p + ".bn1", relu=True, reader=p + ".fc2")
    a = g.conv(a, p + ".fc2")
    a = g.op("Softmax", [g.op("Reshape", [a, g.const("shape", np.array([0, 2, planes], np.int64))])], axis=1)
    a = g.op("Reshape", [a, g.const("shape", np.array([0, 2 * planes, 1, 1], np.int64))])
    return g.op("Add", halves(g, g.op("Mul", [y, a]), planes))


def resnest_block(g, x, p, planes, stride, has_down, next_first):
    y = g.conv(x, p + ".conv1", p + ".bn1", relu=True, reader=p + ".conv2.conv")
    y = split_attention(g, y, p + ".conv2", planes)
    if stride > 1:  # avd_last: the block's stride in a 3x3 average pool after the attention
        y = g.op("AveragePool", [y], kernel_shape=[3, 3], strides=[stride] * 2, pads=[1] * 4, count_include_pad=1)
    y = g.conv(g.handoff(y, p + ".conv3"), p + ".conv3", p + ".bn3")
    s = x
    if has_down:
        if stride > 1:
            s = g.op("AveragePool", [s], kernel_shape=[2, 2], strides=[stride] * 2, ceil_mode=1, count_include_pad=0)
        s = g.conv(g.handoff(s, p + ".downsample.1"), p + ".downsample.1", p + ".downsample.2")
    return g.handoff(g.op("Relu", [g.op("Add", [y, s])]), next_first)


def network(g, arch, x):
    if arch == "resnet50":
        x = g.conv(x, "conv1", "bn1", stride=2, pad=3, relu=True)
        first, block = ".conv1", bottleneck
    else:
        x = g.conv(x, "conv1.0", "conv1.1", stride=2, pad=1, relu=True)
        x = g.conv(x, "conv1.3", "conv1.4", pad=1, relu=True)
        x = g.conv(x, "conv1.6", "bn1", pad=1, relu=True)
        first, block = ".conv1", None
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    blocks = [(s, b) for s, n in enumerate([3, 4, 6, 3]) for b in range(n)]
    x = g.handoff(x, "layer1.0" + first)
    for i, (stage, index) in enumerate(blocks):
        p, stride = f"layer{stage + 1}.{index}", 2 if index == 0 and stage > 0 else 1
        nxt = f"layer{blocks[i + 1][0] + 1}.{blocks[i + 1][1]}{first}" if i + 1 < len(blocks) else None
        if arch == "resnet50":
            x = bottleneck(g, x, p, stride, index == 0, nxt)
        else:
            x = resnest_block(g, x, p, 64 << stage, stride, index == 0, nxt)
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x])])
    return g.op("Gemm", [x, g.const("fc_w", g.w["fc.weight"]), g.const("fc_b", g.w["fc.bias"])], transB=1)


def main(argv):
    if len(argv) < 3 or argv[0] not in ("resnet50", "resnest50d"):
        sys.exit("usage: qdq_model.py resnet50|resnest50d CHECKPOINT_DIR OUT.onnx [--int8 BUILD_JSON --calib-cache CACHE --output-amax probe|AMAX_JSON]")
    arch, ckpt, out, opts = argv[0], argv[1], argv[2], dict(zip(argv[3::2], argv[4::2]))
    if ("--int8" in opts) != ("--calib-cache" in opts):
        sys.exit("qdq_model.py: --int8 and --calib-cache go together")
    scales = int8_scales(opts["--int8"], opts["--calib-cache"]) if "--int8" in opts else {}
    amax = opts.get("--output-amax")
    if scales and amax is None:
        sys.exit("qdq_model.py: --int8 needs --output-amax probe|AMAX_JSON (see the usage)")
    g = Builder(read_safetensors(ckpt + "/model.safetensors"), scales,
                amax if amax in (None, "probe") else json.load(open(amax)))
    y = network(g, arch, "x")
    g.nodes.append(helper.make_node("Identity", [y], ["y"]))
    unused = set(scales) - {n.name.rsplit("_", 1)[0] for n in g.nodes if n.op_type == "Conv"}
    print(f"{out}: {arch}, " + (f"fp32 with {len(g.probes)} tensors to calibrate as outputs" if g.probes else
                               f"{len(scales)} int8 convolutions" if scales else "fp32"))
    if unused:
        sys.exit(f"{opts['--int8']}: int8 layers not in the {arch} graph: {', '.join(sorted(unused))}")
    graph = helper.make_graph(g.nodes, arch, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 224, 224])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1000])] +
                              [helper.make_tensor_value_info(p, TensorProto.FLOAT, ["N", "C", "H", "W"]) for p in g.probes], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiln tools/peers")
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main(sys.argv[1:])
