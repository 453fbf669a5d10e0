// A ResNeSt-50d-shaped graph with seeded random weights, for backend tests (small widths) and the CPU
// benchmark (full size): deep stem, max pool, bottlenecks with split attention (radix 2), average-pool
// downsampling, global pool and a linear classifier. Node names follow timm's module paths.
//
// `fused` builds what the graph passes produce (batch norm folded into a convolution bias, ReLUs fused
// into the convolution or the residual add); otherwise every batch norm and ReLU is a node of its own.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::testing {

struct ResnestLikeOptions {
  std::int64_t image = 224;
  std::int64_t stem_width = 32;  // deep stem 3 -> w -> w -> 2w
  std::int64_t base_width = 64;  // planes of the first stage; doubles per stage, bottleneck expansion 4
  std::vector<int> depths{3, 4, 6, 3};
  std::int64_t classes = 1000;
  std::int64_t radix = 2;
  std::int64_t min_attention = 32;  // fc1 width: max(planes * radix / 4, min_attention)
  std::int64_t batch = -1;          // input batch dimension (-1: any)
  bool fused = true;
  std::uint32_t seed = 1;
};

class ResnestLikeBuilder {
 public:
  explicit ResnestLikeBuilder(const ResnestLikeOptions& options) : o_(options), rng_(options.seed) {}

  Graph build() {
    ValueId x = g_.add_input("x", {o_.batch, 3, o_.image, o_.image});
    const std::int64_t sw = o_.stem_width;
    x = conv_bn(x, "conv1.0", "conv1.1", 3, sw, 3, 2, 1, 1, true);
    x = conv_bn(x, "conv1.3", "conv1.4", sw, sw, 3, 1, 1, 1, true);
    x = conv_bn(x, "conv1.6", "bn1", sw, 2 * sw, 3, 1, 1, 1, true);
    x = pool(OpKind::kMaxPool2d, x, "maxpool", 3, 2, 1, false, true);
    std::int64_t in = 2 * sw;
    for (std::size_t stage = 0; stage < o_.depths.size(); ++stage) {
      const std::int64_t planes = o_.base_width << stage;
      for (int block = 0; block < o_.depths[stage]; ++block) {
        const std::int64_t stride = block == 0 && stage > 0 ? 2 : 1;
        x = bottleneck(x, "layer" + std::to_string(stage + 1) + "." + std::to_string(block), in, planes,
                       stride);
        in = planes * 4;
      }
    }
    x = g_.add_node(OpKind::kGlobalAvgPool, "global_pool", {x});
    x = g_.add_node(OpKind::kFlatten, "flatten", {x});
    const ValueId w = constant("fc.weight", {o_.classes, in}, 1.0f / std::sqrt(static_cast<float>(in)));
    const ValueId b = constant("fc.bias", {o_.classes}, 0.1f);
    g_.mark_output(g_.add_node(OpKind::kLinear, "fc", {x, w, b}));
    return std::move(g_);
  }

 private:
  ValueId constant(const std::string& name, Shape shape, float scale, float offset = 0.0f) {
    Tensor t(DType::kF32, std::move(shape));
    std::uniform_real_distribution<float> dist(-scale, scale);
    for (float& v : t.mutable_f32()) v = offset + dist(rng_);
    return g_.add_constant(name, std::move(t));
  }

  // conv (no bias) + batch norm [+ relu]; fused: one conv with bias and activation.
  ValueId conv_bn(ValueId x, const std::string& conv_name, const std::string& bn_name, std::int64_t in,
                  std::int64_t out, std::int64_t k, std::int64_t stride, std::int64_t pad,
                  std::int64_t groups, bool relu) {
    ConvAttrs a;
    a.kernel = {k, k};
    a.stride = {stride, stride};
    a.padding = {pad, pad, pad, pad};
    a.groups = groups;
    const std::int64_t fan_in = in / groups * k * k;
    // Uniform with variance 2 / fan_in keeps ReLU activations at a steady scale through the depth.
    const float scale = std::sqrt(6.0f / static_cast<float>(fan_in));
    const ValueId w = constant(conv_name + ".weight", {out, in / groups, k, k}, scale);
    if (o_.fused) {
      a.activation = relu ? Activation::kRelu : Activation::kNone;
      const ValueId b = constant(conv_name + ".bias", {out}, 0.2f);
      return g_.add_node(OpKind::kConv2d, conv_name, {x, w, b}, a);
    }
    ValueId y = g_.add_node(OpKind::kConv2d, conv_name, {x, w}, a);
    const ValueId gamma = constant(bn_name + ".weight", {out}, 0.5f, 1.0f);
    const ValueId beta = constant(bn_name + ".bias", {out}, 0.2f);
    const ValueId mean = constant(bn_name + ".running_mean", {out}, 0.2f);
    const ValueId var = constant(bn_name + ".running_var", {out}, 0.5f, 1.25f);
    y = g_.add_node(OpKind::kBatchNorm, bn_name, {y, gamma, beta, mean, var}, BatchNormAttrs{});
    if (relu) y = g_.add_node(OpKind::kActivation, bn_name + ".act", {y}, ActivationAttrs{Activation::kRelu});
    return y;
  }

  ValueId conv_bias(ValueId x, const std::string& name, std::int64_t in, std::int64_t out) {
    ConvAttrs a;
    const ValueId w = constant(name + ".weight", {out, in, 1, 1}, std::sqrt(6.0f / static_cast<float>(in)));
    const ValueId b = constant(name + ".bias", {out}, 0.2f);
    return g_.add_node(OpKind::kConv2d, name, {x, w, b}, a);
  }

  ValueId pool(OpKind op, ValueId x, const std::string& name, std::int64_t k, std::int64_t stride,
               std::int64_t pad, bool ceil, bool include_pad) {
    PoolAttrs p;
    p.kernel = {k, k};
    p.stride = {stride, stride};
    p.padding = {pad, pad, pad, pad};
    p.ceil_mode = ceil;
    p.count_include_pad = include_pad;
    return g_.add_node(op, name, {x}, p);
  }

  ValueId split_attention(ValueId x, const std::string& name, std::int64_t planes) {
    const std::int64_t r = o_.radix;
    RadixAttrs ra;
    ra.radix = r;
    ValueId y = conv_bn(x, name + ".conv", name + ".bn0", planes, planes * r, 3, 1, 1, r, true);
    ValueId gap = g_.add_node(OpKind::kRadixSum, name + ".radix_sum", {y}, ra);
    gap = g_.add_node(OpKind::kGlobalAvgPool, name + ".pool", {gap});
    const std::int64_t mid = std::max(planes * r / 4, o_.min_attention);
    ValueId attn;
    if (o_.fused) {
      ConvAttrs a;
      a.activation = Activation::kRelu;
      const ValueId w =
          constant(name + ".fc1.weight", {mid, planes, 1, 1}, std::sqrt(6.0f / static_cast<float>(planes)));
      const ValueId b = constant(name + ".fc1.bias", {mid}, 0.2f);
      attn = g_.add_node(OpKind::kConv2d, name + ".fc1", {gap, w, b}, a);
    } else {
      attn = conv_bias(gap, name + ".fc1", planes, mid);
      const ValueId gamma = constant(name + ".bn1.weight", {mid}, 0.5f, 1.0f);
      const ValueId beta = constant(name + ".bn1.bias", {mid}, 0.2f);
      const ValueId mean = constant(name + ".bn1.running_mean", {mid}, 0.2f);
      const ValueId var = constant(name + ".bn1.running_var", {mid}, 0.5f, 1.25f);
      attn = g_.add_node(OpKind::kBatchNorm, name + ".bn1", {attn, gamma, beta, mean, var}, BatchNormAttrs{});
      attn = g_.add_node(OpKind::kActivation, name + ".act1", {attn}, ActivationAttrs{Activation::kRelu});
    }
    attn = conv_bias(attn, name + ".fc2", mid, planes * r);
    attn = g_.add_node(OpKind::kRadixSoftmax, name + ".rsoftmax", {attn}, ra);
    return g_.add_node(OpKind::kRadixWeightedSum, name + ".weighted_sum", {y, attn}, ra);
  }

  ValueId bottleneck(ValueId x, const std::string& name, std::int64_t in, std::int64_t planes,
                     std::int64_t stride) {
    ValueId y = conv_bn(x, name + ".conv1", name + ".bn1", in, planes, 1, 1, 0, 1, true);
    y = split_attention(y, name + ".conv2", planes);
    if (stride > 1) y = pool(OpKind::kAvgPool2d, y, name + ".avd_last", 3, stride, 1, false, true);
    y = conv_bn(y, name + ".conv3", name + ".bn3", planes, planes * 4, 1, 1, 0, 1, false);
    ValueId shortcut = x;
    if (stride > 1 || in != planes * 4) {
      if (stride > 1)
        shortcut = pool(OpKind::kAvgPool2d, x, name + ".downsample.0", 2, stride, 0, true, false);
      shortcut = conv_bn(shortcut, name + ".downsample.1", name + ".downsample.2", in, planes * 4, 1, 1, 0, 1,
                         false);
    }
    if (o_.fused) {
      return g_.add_node(OpKind::kAdd, name + ".add", {y, shortcut}, AddAttrs{Activation::kRelu});
    }
    y = g_.add_node(OpKind::kAdd, name + ".add", {y, shortcut}, AddAttrs{});
    return g_.add_node(OpKind::kActivation, name + ".act3", {y}, ActivationAttrs{Activation::kRelu});
  }

  ResnestLikeOptions o_;
  std::mt19937 rng_;
  Graph g_;
};

inline Graph resnest_like_graph(const ResnestLikeOptions& options) {
  return ResnestLikeBuilder(options).build();
}

}  // namespace kiln::testing
