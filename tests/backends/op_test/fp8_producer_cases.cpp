// FP8 layers reading the E4M3 codes of a computed tensor: on the CUDA backend the tensor's producer
// writes the codes itself (a quantize point fused into it, src/backends/cuda/program/quantize_fusion.h), and
// writes its fp16 output too where someone else reads it ("_dual": the output is also a graph output,
// or an add's residual). One case per producer kind: an FP8 convolution's epilogue (a 3x3, and a 1x1
// that cuBLASLt's FP8 GEMM also runs, as it does the next), a convolution computed with its residual
// add, an fp16 convolution's epilogue, an add, an activation, the max, average and global pools and the
// split-attention weighted sum; and quantize points of one value with two scales. The int8 cases: the same
// producers writing an int8 layer's codes (on the CUDA backend every producer that writes E4M3 codes
// writes int8 ones too, on int8's grid).
#include "../fp8_graph_util.h"
#include "op_case_util.h"

namespace kiln::testing {
namespace {

constexpr std::int64_t kChannels = 32;
constexpr float kScale = 0.02f;      // inputs in [-4, 4) are codes up to 200, inside E4M3's +-448
constexpr float kInt8Scale = 0.04f;  // and up to 100 on int8's grid (producers' sums of two saturate)

// `producer` builds the tensor the FP8 (int8, `format`) layer reads from graph input x [kChannels, 8, 8]
// (and may mark graph outputs itself); dual also makes the tensor a graph output. An int8 case has the
// FP8 one's bound: the two sides' codes likewise differ by one step only where a value lies within f32
// rounding of a midpoint between two codes.
OpCase producer_case(std::string name, OpKind op, bool dual,
                     std::function<ValueId(SmallGraph&, ValueId)> producer,
                     QuantFormat format = QuantFormat::kE4M3) {
  if (dual) name += "_dual";
  const bool int8 = format == QuantFormat::kInt8;
  OpCase c = graph_case(
      std::move(name), op, 2,
      [=](SmallGraph& g) {
        const ValueId value = producer(g, g.input("x", {kChannels, 8, 8}));
        const ValueId codes = quantize(g, value, int8 ? kInt8Scale : kScale, format);
        g.output(fp8_conv(g, codes, 16, conv_attrs(3, 1, 1), true, 31, format));
        if (dual) g.output(value);
      },
      4.0f);
  c.make = [make = c.make] { return as_fp16(make()); };
  c.bound = kFp8Bound;
  return c;
}

ValueId fp8_conv_relu(SmallGraph& g, ValueId x) {
  return fp8_conv(g, quantize(g, x, kScale), kChannels, conv_attrs(3, 1, 1, 1, Activation::kRelu), true, 41);
}

// Pointwise: on the CUDA backend also cuBLASLt's FP8 GEMM, followed by the quantize kernel writing the
// codes, where it wins its race (the fp8-gemm=only option runs it there).
ValueId fp8_pointwise_conv_relu(SmallGraph& g, ValueId x) {
  return fp8_conv(g, quantize(g, x, kScale), kChannels, conv_attrs(1, 1, 0, 1, Activation::kRelu), true, 61);
}

ValueId conv_with_residual(SmallGraph& g, ValueId x) {
  const ValueId c = fp8_conv(g, quantize(g, x, kScale), kChannels, conv_attrs(1, 1, 0), true, 43);
  return g.node(OpKind::kAdd, {c, x}, AddAttrs{Activation::kRelu});
}

ValueId add_relu(SmallGraph& g, ValueId x) {
  const ValueId relu = g.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu});
  return g.node(OpKind::kAdd, {x, relu}, AddAttrs{Activation::kRelu});
}

ValueId weighted_sum(SmallGraph& g, ValueId x) {
  // x as two radix splits of kChannels / 2, weighted by the softmax of logits from its global pool.
  const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {x});
  const ValueId logits = g.conv(pooled, kChannels, conv_attrs(1, 1, 0));
  const ValueId w = g.node(OpKind::kRadixSoftmax, {logits}, radix_attrs(2));
  return g.node(OpKind::kRadixWeightedSum, {x, w}, radix_attrs(2));  // kChannels / 2 = 16 channels
}

// Two quantize points of one activation: one scale's codes come from the producer, the other's from
// a quantize step of its own.
OpCase two_scales_case() {
  OpCase c = graph_case(
      "fp8_codes_two_scales", OpKind::kQuantize, 2,
      [](SmallGraph& g) {
        const ValueId x = g.input("x", {kChannels, 8, 8});
        const ValueId relu = g.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu});
        g.output(fp8_conv(g, quantize(g, relu, kScale), 16, conv_attrs(1, 1, 0), true, 47));
        g.output(fp8_conv(g, quantize(g, relu, 2 * kScale), 16, conv_attrs(1, 1, 0), true, 53));
        g.output(fp8_conv(g, quantize(g, relu, kScale), 16, conv_attrs(3, 1, 1), true, 59));
      },
      4.0f);
  c.make = [make = c.make] { return as_fp16(make()); };
  c.bound = kFp8Bound;
  return c;
}

}  // namespace

std::vector<OpCase> fp8_producer_cases() {
  const auto relu_conv = [](SmallGraph& g, ValueId x) {
    return g.conv(x, kChannels, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  };
  const auto activation = [](SmallGraph& g, ValueId x) {
    return g.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu});
  };
  const auto max_pool = [](SmallGraph& g, ValueId x) {
    return g.node(OpKind::kMaxPool2d, {x}, pool_attrs(3, 2, 1));
  };
  const auto avg_pool = [](SmallGraph& g, ValueId x) {
    return g.node(OpKind::kAvgPool2d, {x}, pool_attrs(2, 2, 0, false, false));
  };
  const auto global_pool = [](SmallGraph& g, ValueId x) {
    // The radix sum it pools on the fly, as in ResNeSt's split attention.
    return g.node(OpKind::kGlobalAvgPool, {g.node(OpKind::kRadixSum, {x}, radix_attrs(2))});
  };
  std::vector<OpCase> cases;
  for (const bool dual : {false, true}) {
    cases.push_back(producer_case("fp8_codes_from_fp8_conv", OpKind::kConv2d, dual, fp8_conv_relu));
    cases.push_back(
        producer_case("fp8_codes_from_fp8_pointwise_conv", OpKind::kConv2d, dual, fp8_pointwise_conv_relu));
    cases.push_back(producer_case("fp8_codes_from_fp16_conv", OpKind::kConv2d, dual, relu_conv));
    cases.push_back(producer_case("fp8_codes_from_conv_residual", OpKind::kAdd, dual, conv_with_residual));
    cases.push_back(producer_case("fp8_codes_from_add", OpKind::kAdd, dual, add_relu));
    cases.push_back(producer_case("fp8_codes_from_activation", OpKind::kActivation, dual, activation));
    cases.push_back(producer_case("fp8_codes_from_max_pool", OpKind::kMaxPool2d, dual, max_pool));
    cases.push_back(producer_case("fp8_codes_from_avg_pool", OpKind::kAvgPool2d, dual, avg_pool));
    cases.push_back(producer_case("fp8_codes_from_global_pool", OpKind::kGlobalAvgPool, dual, global_pool));
    cases.push_back(
        producer_case("fp8_codes_from_weighted_sum", OpKind::kRadixWeightedSum, dual, weighted_sum));
    constexpr QuantFormat kInt8 = QuantFormat::kInt8;
    cases.push_back(producer_case("int8_codes_from_fp16_conv", OpKind::kConv2d, dual, relu_conv, kInt8));
    cases.push_back(producer_case("int8_codes_from_add", OpKind::kAdd, dual, add_relu, kInt8));
    cases.push_back(
        producer_case("int8_codes_from_activation", OpKind::kActivation, dual, activation, kInt8));
    cases.push_back(producer_case("int8_codes_from_max_pool", OpKind::kMaxPool2d, dual, max_pool, kInt8));
    cases.push_back(producer_case("int8_codes_from_avg_pool", OpKind::kAvgPool2d, dual, avg_pool, kInt8));
    cases.push_back(
        producer_case("int8_codes_from_global_pool", OpKind::kGlobalAvgPool, dual, global_pool, kInt8));
    cases.push_back(
        producer_case("int8_codes_from_weighted_sum", OpKind::kRadixWeightedSum, dual, weighted_sum, kInt8));
  }
  cases.push_back(two_scales_case());
  return cases;
}

}  // namespace kiln::testing
