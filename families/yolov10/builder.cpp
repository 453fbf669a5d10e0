#include "families/yolov10/builder.h"

#include <array>
#include <cmath>
#include <tuple>

#include "core/error.h"
#include "families/common/checkpoint_reader.h"
#include "families/common/layer_builder.h"

namespace kiln {

namespace {

constexpr float kBatchNormEpsilon = 1e-3f;  // set on every BatchNorm2d by the YOLO code's weight init
constexpr char kPrefix[] = "model.model.";
constexpr std::int64_t kDetectLayer = 23;
constexpr std::array<std::int64_t, 3> kDetectInputs = {16, 19, 22};  // P3, P4, P5
constexpr std::array<std::int64_t, 3> kDetectStrides = {8, 16, 32};
constexpr std::int64_t kSppfKernel = 5;
constexpr std::int64_t kAttentionHeadWidth = 64;  // PSA: heads = channels / 64, key_dim = head_dim / 2

std::string layer(std::int64_t index) { return cat(kPrefix, index); }

class YoloBuilder {
 public:
  YoloBuilder(Graph& graph, CheckpointReader& reader) : b_(graph, reader), reader_(reader) {}

  LayerBuilder& builder() { return b_; }

  // The YOLO code's Conv: conv (no bias, padding k // 2, groups read off the weight), BN, SiLU when `act`.
  ValueId conv(const std::string& name, ValueId x, std::int64_t stride = 1, bool act = true) {
    const Shape& w = reader_.shape(name + ".conv.weight", 4);
    const std::int64_t in = b_.channels(x);
    require(w[2] == w[3] && w[2] % 2 == 1 && w[1] > 0 && in % w[1] == 0, "checkpoint key '", name,
            ".conv.weight': expected [out, ", in, " / groups, k, k] with odd k, got shape ", shape_str(w));
    ValueId y = b_.conv(name + ".conv", x, w[0], conv_attrs(w[2], stride, w[2] / 2, in / w[1]));
    y = b_.batch_norm(name + ".bn", y, kBatchNormEpsilon);
    return act ? b_.activation(name + ".act", y, Activation::kSilu) : y;
  }

  ValueId slice(const std::string& name, ValueId x, std::int64_t begin, std::int64_t end,
                std::int64_t groups = 1) {
    return b_.op(OpKind::kChannelSlice, name, {x}, SliceAttrs{groups, begin, end});
  }
  ValueId concat(const std::string& name, std::vector<ValueId> inputs, std::int64_t axis = 1) {
    return b_.op(OpKind::kConcat, name, std::move(inputs), ConcatAttrs{axis});
  }
  ValueId add(const std::string& name, ValueId a, ValueId b) {
    return b_.op(OpKind::kAdd, name, {a, b}, AddAttrs{});
  }

  // C2f / C2fCIB: cv1, its two halves, n blocks each fed by the last output, all concatenated into cv2.
  ValueId c2f(const std::string& name, ValueId x, bool shortcut) {
    ValueId y = conv(name + ".cv1", x);
    const std::int64_t c = b_.channels(y) / 2;
    std::vector<ValueId> parts = {slice(name + ".split0", y, 0, c), slice(name + ".split1", y, c, 2 * c)};
    for (const std::int64_t i : reader_.child_indices(name + ".m.")) {
      const std::string m = cat(name, ".m.", i);
      const ValueId in = parts.back();
      ValueId out;
      if (reader_.has_prefix(m + ".cv1.0.")) {
        out = cib(m, in);
      } else {
        out = conv(m + ".cv2", conv(m + ".cv1", in));
      }
      parts.push_back(shortcut && b_.channels(out) == b_.channels(in) ? add(m + ".add", in, out) : out);
    }
    return conv(name + ".cv2", concat(name + ".cat", std::move(parts)));
  }

  // CIB: 3x3 depthwise, 1x1, a 3x3 depthwise or the RepVGG pair, 1x1, 3x3 depthwise (shortcut added by c2f).
  ValueId cib(const std::string& m, ValueId x) {
    ValueId y = conv(m + ".cv1.0", x);
    y = conv(m + ".cv1.1", y);
    y = reader_.has_prefix(m + ".cv1.2.conv1.") ? repvgg_dw(m + ".cv1.2", y) : conv(m + ".cv1.2", y);
    y = conv(m + ".cv1.3", y);
    return conv(m + ".cv1.4", y);
  }

  // RepVGGDW: SiLU(BN(dw7x7(x)) + BN(dw3x3(x))), folded here into one 7x7 depthwise conv with a bias, the
  // way the model's own fuse() does: each BN into its conv, the 3x3 kernel zero-padded to 7x7, summed.
  ValueId repvgg_dw(const std::string& name, ValueId x) {
    const std::int64_t c = b_.channels(x);
    const auto folded = [&](const std::string& branch, std::int64_t k) {
      Tensor w = reader_.take(branch + ".conv.weight", {c, 1, k, k});
      const Shape per_channel = {c};
      const Tensor gamma = reader_.take(branch + ".bn.weight", per_channel);
      const Tensor beta = reader_.take(branch + ".bn.bias", per_channel);
      const Tensor mean = reader_.take(branch + ".bn.running_mean", per_channel);
      const Tensor var = reader_.take(branch + ".bn.running_var", per_channel);
      std::vector<double> scale(static_cast<std::size_t>(c)), shift(static_cast<std::size_t>(c));
      for (std::size_t i = 0; i < scale.size(); ++i) {
        scale[i] = gamma.f32()[i] / std::sqrt(static_cast<double>(var.f32()[i]) + kBatchNormEpsilon);
        shift[i] = beta.f32()[i] - mean.f32()[i] * scale[i];
      }
      return std::tuple{std::move(w), std::move(scale), std::move(shift)};
    };
    const auto [w7, s7, b7] = folded(name + ".conv", 7);
    const auto [w3, s3, b3] = folded(name + ".conv1", 3);
    Tensor weight(DType::kF32, {c, 1, 7, 7});
    Tensor bias(DType::kF32, {c});
    const auto wo = weight.mutable_f32();
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const auto i = static_cast<std::size_t>(ch);
      bias.mutable_f32()[i] = static_cast<float>(b7[i] + b3[i]);
      for (std::int64_t ky = 0; ky < 7; ++ky) {
        for (std::int64_t kx = 0; kx < 7; ++kx) {
          double v = w7.f32()[static_cast<std::size_t>((ch * 7 + ky) * 7 + kx)] * s7[i];
          if (ky >= 2 && ky < 5 && kx >= 2 && kx < 5) {
            v += w3.f32()[static_cast<std::size_t>((ch * 3 + ky - 2) * 3 + kx - 2)] * s3[i];
          }
          wo[static_cast<std::size_t>((ch * 7 + ky) * 7 + kx)] = static_cast<float>(v);
        }
      }
    }
    Graph& g = b_.graph();
    const ValueId w = g.add_constant(name + ".fused.weight", std::move(weight));
    const ValueId bv = g.add_constant(name + ".fused.bias", std::move(bias));
    const ValueId y = g.add_node(OpKind::kConv2d, name + ".fused", {x, w, bv}, conv_attrs(7, 1, 3, c));
    return b_.activation(name + ".act", y, Activation::kSilu);
  }

  ValueId scdown(const std::string& name, ValueId x) {
    return conv(name + ".cv2", conv(name + ".cv1", x), 2, false);
  }

  ValueId sppf(const std::string& name, ValueId x) {
    std::vector<ValueId> parts = {conv(name + ".cv1", x)};
    for (int i = 0; i < 3; ++i) {
      parts.push_back(b_.op(OpKind::kMaxPool2d, cat(name, ".m.", i), {parts.back()},
                            pool_attrs(kSppfKernel, 1, kSppfKernel / 2)));
    }
    return conv(name + ".cv2", concat(name + ".cat", std::move(parts)));
  }

  // PSA: cv1 split in halves a, b; b += attention(b); b += ffn(b); cv2(cat(a, b)).
  ValueId psa(const std::string& name, ValueId x) {
    const ValueId y = conv(name + ".cv1", x);
    const std::int64_t c = b_.channels(y) / 2;
    const ValueId a = slice(name + ".split0", y, 0, c);
    ValueId bpart = slice(name + ".split1", y, c, 2 * c);
    require(c % kAttentionHeadWidth == 0, "layer '", name, "': ", c,
            " attention channels are not a multiple of ", kAttentionHeadWidth);
    AttentionAttrs attrs;
    attrs.heads = c / kAttentionHeadWidth;
    attrs.head_dim = kAttentionHeadWidth;
    attrs.key_dim = kAttentionHeadWidth / 2;
    const std::string attn = name + ".attn";
    const ValueId qkv = conv(attn + ".qkv", bpart, 1, false);
    require(b_.channels(qkv) == attrs.heads * (2 * attrs.key_dim + attrs.head_dim), "checkpoint key '", attn,
            ".qkv.conv.weight': expected ", attrs.heads * (2 * attrs.key_dim + attrs.head_dim),
            " outputs for ", attrs.heads, " heads");
    const ValueId mixed = b_.op(OpKind::kAttention, attn + ".attention", {qkv}, attrs);
    const ValueId v =
        slice(attn + ".v", qkv, 2 * attrs.key_dim, 2 * attrs.key_dim + attrs.head_dim, attrs.heads);
    const ValueId pe = conv(attn + ".pe", v, 1, false);
    const ValueId attended = conv(attn + ".proj", add(attn + ".add", mixed, pe), 1, false);
    bpart = add(name + ".add_attn", bpart, attended);
    const ValueId ffn = conv(name + ".ffn.1", conv(name + ".ffn.0", bpart), 1, false);
    bpart = add(name + ".add_ffn", bpart, ffn);
    return conv(name + ".cv2", concat(name + ".cat", {a, bpart}));
  }

  ValueId upsample(const std::string& name, ValueId x) {
    return b_.op(OpKind::kUpsample, name, {x}, UpsampleAttrs{2});
  }

  // Any backbone / neck layer, recognised by its keys.
  ValueId module(std::int64_t index, ValueId x, bool backbone) {
    const std::string name = layer(index);
    if (reader_.has_prefix(name + ".attn.")) return psa(name, x);
    if (reader_.has_prefix(name + ".m."))
      return c2f(name, x, backbone || reader_.has_prefix(name + ".m.0.cv1.0."));
    if (reader_.has(name + ".conv.weight")) return conv(name, x, 2);
    if (reader_.has(name + ".cv2.conv.weight")) {
      // SCDown's cv2 is depthwise; SPPF's is a 1x1 over four concatenated copies.
      const Shape& w = reader_.shape(name + ".cv2.conv.weight", 4);
      return w[1] == 1 && w[2] > 1 ? scdown(name, x) : sppf(name, x);
    }
    fail("layer '", name, "': no Conv, C2f, C2fCIB, SCDown, SPPF or PSA keys under '", name, ".'");
  }

  // One level of the one-to-one head: box branch (two Convs, a 1x1 conv with bias to 4 x reg_max) and
  // class branch (depthwise + pointwise twice, a 1x1 conv with bias to the classes), decoded.
  ValueId detect_level(std::size_t level, ValueId x, std::int64_t reg_max) {
    const std::string head = layer(kDetectLayer);
    const std::string box = cat(head, ".one2one_cv2.", level), cls = cat(head, ".one2one_cv3.", level);
    ValueId bx = conv(box + ".1", conv(box + ".0", x));
    bx = b_.conv(box + ".2", bx, 4 * reg_max, conv_attrs(1, 1, 0), true);
    ValueId cx = conv(cls + ".0.1", conv(cls + ".0.0", x));
    cx = conv(cls + ".1.1", conv(cls + ".1.0", cx));
    const std::int64_t classes = reader_.shape(cls + ".2.weight", 4)[0];
    cx = b_.conv(cls + ".2", cx, classes, conv_attrs(1, 1, 0), true);
    const ValueId joined = concat(cat(head, ".one2one.", level, ".cat"), {bx, cx});
    return b_.op(OpKind::kDetectDecode, cat(head, ".one2one.", level, ".decode"), {joined},
                 DetectAttrs{reg_max, kDetectStrides[level]});
  }

 private:
  LayerBuilder b_;
  CheckpointReader& reader_;
};

}  // namespace

Yolov10Build build_yolov10(const std::map<std::string, Tensor>& weights, const YoloConfig& config,
                           std::int64_t batch) {
  require(batch == -1 || batch > 0, "batch size: expected a positive number or -1 (any), got ", batch);
  CheckpointReader reader(weights);
  Yolov10Build result;
  YoloBuilder yolo(result.graph, reader);
  const std::string head = layer(kDetectLayer);
  const Shape& stem = reader.shape(layer(0) + ".conv.weight", 4);
  ValueId x = result.graph.add_input("images", {batch, stem[1], config.imgsz, config.imgsz});

  std::map<std::int64_t, ValueId> outputs;  // by layer index, for the later concatenations
  for (std::int64_t i = 0; i <= 10; ++i) outputs[i] = x = yolo.module(i, x, true);
  // The neck: upsample + concat with P4 and P3, then down again concatenating the neck's own levels.
  x = yolo.upsample(layer(11), x);
  x = yolo.concat(layer(12), {x, outputs.at(6)});
  outputs[13] = x = yolo.module(13, x, false);
  x = yolo.upsample(layer(14), x);
  x = yolo.concat(layer(15), {x, outputs.at(4)});
  outputs[16] = x = yolo.module(16, x, false);
  x = yolo.module(17, x, false);
  x = yolo.concat(layer(18), {x, outputs.at(13)});
  outputs[19] = x = yolo.module(19, x, false);
  x = yolo.module(20, x, false);
  x = yolo.concat(layer(21), {x, outputs.at(10)});
  outputs[22] = yolo.module(22, x, false);

  const Shape& dfl = reader.shape(head + ".dfl.conv.weight", 4);
  const std::int64_t reg_max = dfl[1];
  // The DFL conv is a fixed expectation over the bins (weights 0, 1, ..., reg_max - 1), built into
  // detect_decode; a checkpoint with other weights would decode differently.
  const Tensor bins = reader.take(head + ".dfl.conv.weight", {1, reg_max, 1, 1});
  for (std::int64_t i = 0; i < reg_max; ++i) {
    require(bins.f32()[static_cast<std::size_t>(i)] == static_cast<float>(i), "checkpoint key '", head,
            ".dfl.conv.weight': expected the bin indices 0 .. ", reg_max - 1);
  }
  std::vector<ValueId> levels;
  for (std::size_t level = 0; level < kDetectInputs.size(); ++level) {
    levels.push_back(yolo.detect_level(level, outputs.at(kDetectInputs[level]), reg_max));
  }
  const ValueId decoded = yolo.concat(head + ".one2one", levels, 2);
  result.graph.mark_output(decoded);
  // The selection joins the graph (its second output) so a backend runs photo to boxes in one go; the
  // host selection takes over where an input is too small to have max_det anchors.
  if (result.graph.value(decoded).shape.at(2) >= config.max_det) {
    result.graph.mark_output(result.graph.add_node(OpKind::kDetectSelect, head + ".select", {decoded},
                                                   DetectSelectAttrs{config.max_det}));
  }
  result.num_classes = result.graph.value(decoded).shape.at(1) - 4;
  require(result.num_classes == static_cast<std::int64_t>(config.names.size()), "checkpoint key '", head,
          ".one2one_cv3.0.2.weight': ", result.num_classes, " classes, but config.json names ",
          config.names.size());
  for (const char* part : {".cv2.", ".cv3."}) {
    for (auto& key : reader.skip_prefix(head + part)) result.unused_keys.push_back(std::move(key));
  }
  reader.finish();
  return result;
}

}  // namespace kiln
