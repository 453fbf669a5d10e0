// Per-element and per-channel operators: batch norm, activations, adds (with a fused ReLU, of values in
// different layouts), squeeze-excite's channel scale, and FP8 quantize points (on the grid and
// saturating at 448), each on a graph input and behind a convolution, at channel counts that are and
// are not multiples of the backends' blocks.
#include "op_case_util.h"

namespace kiln::testing {
namespace {

OpCase batch_norm_case(std::int64_t c, bool behind_conv) {
  return graph_case(
      cat("batch_norm_c", c, source_suffix(behind_conv)), OpKind::kBatchNorm, 2, [=](SmallGraph& g) {
        const ValueId x = source(g, g.input("x", {c, 7, 6}), behind_conv);
        const ValueId gamma = g.constant("gamma", {c}, 0.5f, 1.5f), beta = g.constant("beta", {c});
        const ValueId mean = g.constant("mean", {c}), var = g.constant("var", {c}, 0.5f, 2.0f);
        g.output(g.node(OpKind::kBatchNorm, {x, gamma, beta, mean, var}, BatchNormAttrs{1e-5f}));
      });
}

OpCase activation_case(Activation a, bool behind_conv) {
  return graph_case(
      cat("activation_", activation_name(a), source_suffix(behind_conv)), OpKind::kActivation, 1,
      [=](SmallGraph& g) {
        const ValueId x = source(g, g.input("x", {20, 5, 5}), behind_conv);
        g.output(g.node(OpKind::kActivation, {x}, ActivationAttrs{a}));
      },
      4.0f);
}

// Both orders, so either operand may be the one in the backend's own layout.
OpCase add_case(std::int64_t c, Activation a, bool behind_conv) {
  return graph_case(cat("add_", activation_name(a), "_c", c, source_suffix(behind_conv)), OpKind::kAdd, 4,
                    [=](SmallGraph& g) {
                      const ValueId x = source(g, g.input("a", {c, 6, 6}), behind_conv);
                      const ValueId y = g.input("b", {c, 6, 6});
                      g.output(g.node(OpKind::kAdd, {x, y}, AddAttrs{a}));
                      g.output(g.node(OpKind::kAdd, {y, x}, AddAttrs{a}));
                    });
}

// The gate computed from x as squeeze-excite does (pooled, 1x1 convolutions to `hidden` channels and
// back, SiLU then sigmoid), or an input. A gate of many weights (c = 384, hidden 48: 37k) is too big for
// the CUDA backend's batched gate kernel (squeeze_mlp_batched_kernels.h): above one image it runs as two
// convolutions there; a single image takes squeeze_mlp_kernels.h's one launch.
OpCase channel_scale_case(std::int64_t c, bool computed_gate, bool behind_conv, std::int64_t hidden = 8) {
  return graph_case(cat("channel_scale_c", c, computed_gate ? "_squeeze_excite" : "_gate_input",
                        hidden != 8 ? cat("_hidden", hidden) : std::string(), source_suffix(behind_conv)),
                    OpKind::kChannelScale, 2, [=](SmallGraph& g) {
                      const ValueId x = source(g, g.input("x", {c, 7, 6}), behind_conv);
                      ValueId gate = computed_gate ? x : g.input("gate", {c, 1, 1});
                      if (computed_gate) {
                        const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {x});
                        gate = g.conv(g.conv(pooled, hidden, conv_attrs(1, 1, 0, 1, Activation::kSilu)), c,
                                      conv_attrs(1, 1, 0, 1, Activation::kSigmoid));
                      }
                      g.output(g.node(OpKind::kChannelScale, {x, gate}));
                    });
}

// A batch norm, activation and residual add left unfused, as graphs built at optimization level 0 are.
OpCase unfused_residual_case() {
  return graph_case("batch_norm_silu_add_relu_unfused", OpKind::kBatchNorm, 2, [](SmallGraph& g) {
    const ValueId x = g.input("x", {24, 10, 10});
    const ValueId c = g.conv(x, 24, conv_attrs(3, 1, 1));
    const ValueId bn = g.node(OpKind::kBatchNorm,
                              {c, g.constant("g", {24}, 0.5f, 1.5f), g.constant("b", {24}),
                               g.constant("m", {24}), g.constant("v", {24}, 0.5f, 2.0f)},
                              BatchNormAttrs{1e-5f});
    const ValueId act = g.node(OpKind::kActivation, {bn}, ActivationAttrs{Activation::kSilu});
    g.output(g.node(OpKind::kAdd, {act, x}, AddAttrs{Activation::kRelu}));
  });
}

OpCase quantize_case(const char* name, float scale, float input_range) {
  OpCase c = graph_case(
      name, OpKind::kQuantize, 2,
      [=](SmallGraph& g) {
        g.output(g.node(OpKind::kQuantize, {g.input("x", {16, 6, 6})}, QuantizeAttrs{scale}));
      },
      input_range);
  c.bound = kFp8Bound;
  return c;
}

}  // namespace

std::vector<OpCase> elementwise_cases() {
  std::vector<OpCase> cases;
  for (const bool behind_conv : {false, true}) {
    for (const std::int64_t c : {32, 13}) cases.push_back(batch_norm_case(c, behind_conv));
    for (const Activation a : {Activation::kNone, Activation::kRelu, Activation::kSilu, Activation::kSigmoid})
      cases.push_back(activation_case(a, behind_conv));
    for (const std::int64_t c : {32, 10}) {
      cases.push_back(add_case(c, Activation::kNone, behind_conv));
      cases.push_back(add_case(c, Activation::kRelu, behind_conv));
    }
    for (const std::int64_t c : {32, 24, 13}) {
      cases.push_back(channel_scale_case(c, false, behind_conv));
      cases.push_back(channel_scale_case(c, true, behind_conv));
    }
    cases.push_back(channel_scale_case(384, true, behind_conv, 48));
    // A tile of 64 channels and a part tile (squeeze_excite.cu), hidden units no pack divides.
    cases.push_back(channel_scale_case(72, true, behind_conv, 6));
  }
  // A residual add with SiLU: behind a convolution, the CUDA backend runs it as that convolution's
  // epilogue (bias, residual, then the activation).
  cases.push_back(add_case(32, Activation::kSilu, true));
  cases.push_back(fp16_case(add_case(32, Activation::kSilu, true)));
  cases.push_back(unfused_residual_case());
  cases.push_back(fp16_case(batch_norm_case(32, true)));
  cases.push_back(fp16_case(activation_case(Activation::kSilu, true)));
  cases.push_back(fp16_case(add_case(32, Activation::kRelu, true)));
  cases.push_back(fp16_case(channel_scale_case(32, true, true)));
  cases.push_back(fp16_case(channel_scale_case(13, false, true)));
  cases.push_back(fp16_case(channel_scale_case(24, false, false)));
  cases.push_back(fp16_case(channel_scale_case(384, true, true, 48)));
  cases.push_back(fp16_case(channel_scale_case(13, true, true)));
  cases.push_back(fp16_case(channel_scale_case(72, true, false, 6)));
  cases.push_back(fp16_case(activation_case(Activation::kSigmoid, true)));
  cases.push_back(quantize_case("quantize", 0.01f, 1.0f));
  cases.push_back(quantize_case("quantize_saturating", 0.01f, 8.0f));  // |x| / scale up to 800 > 448
  return cases;
}

}  // namespace kiln::testing
