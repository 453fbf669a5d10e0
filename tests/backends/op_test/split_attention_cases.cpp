// ResNeSt's split attention: each radix operator alone (radix 1, 2 and 4, cardinality 1 and 2), the
// whole block as ResNeSt builds it, far-apart softmax logits whose small weights are subnormal, and the
// attention / squeeze-excite gate with its global pool at the sizes of ResNeSt's and EfficientNet's gates
// (the CUDA backend computes pool, fc1 and fc2 in one launch where it can: squeeze_mlp_kernels.h).
#include "op_case_util.h"

namespace kiln::testing {
namespace {

std::string radix_suffix(std::int64_t radix, std::int64_t cardinality) {
  return cat("_r", radix, "_k", cardinality);
}

OpCase radix_op_case(OpKind op, std::int64_t channels, std::int64_t radix, std::int64_t cardinality) {
  const RadixAttrs ra = radix_attrs(radix, cardinality);
  const std::int64_t total = channels * radix;
  return graph_case(
      cat(op_kind_name(op), radix_suffix(radix, cardinality), "_c", channels), op, 2,
      [=](SmallGraph& g) {
        std::vector<ValueId> inputs;
        if (op != OpKind::kRadixSoftmax) inputs.push_back(g.input("x", {total, 5, 5}));
        if (op != OpKind::kRadixSum) inputs.push_back(g.input("logits", {total, 1, 1}));
        g.output(g.node(op, inputs, ra));
      },
      3.0f);
}

struct BlockCase {
  std::int64_t channels;  // per radix split
  std::int64_t radix, cardinality, size, batch;
  bool grouped_conv;  // the radix tensor comes from a grouped 3x3 conv (Winograd per group when it can)
};

// The block's tail: radix sum, pool, fc1 (relu), fc2, radix softmax, weighted sum; plus the unfused
// radix sum and the attention weights as outputs.
OpCase block_case(const BlockCase& c) {
  const std::string name =
      cat("split_attention_block", radix_suffix(c.radix, c.cardinality), "_c", c.channels, "_", c.size, "_b",
          c.batch, c.grouped_conv ? "_after_grouped_conv" : "");
  return graph_case(name, OpKind::kRadixWeightedSum, c.batch, [c](SmallGraph& g) {
    const RadixAttrs ra = radix_attrs(c.radix, c.cardinality);
    const std::int64_t total = c.channels * c.radix;
    const ValueId in = g.input("x", {c.grouped_conv ? c.channels : total, c.size, c.size});
    const ValueId x = c.grouped_conv
                          ? g.conv(in, total, conv_attrs(3, 1, 1, c.radix * c.cardinality, Activation::kRelu))
                          : in;
    const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {g.node(OpKind::kRadixSum, {x}, ra)});
    const ValueId fc1 = g.conv(pooled, 32, conv_attrs(1, 1, 0, c.cardinality, Activation::kRelu));
    const ValueId weights =
        g.node(OpKind::kRadixSoftmax, {g.conv(fc1, total, conv_attrs(1, 1, 0, c.cardinality))}, ra);
    g.output(g.node(OpKind::kRadixWeightedSum, {x, weights}, ra));
    g.output(g.node(OpKind::kRadixSum, {x}, ra));
    g.output(weights);
  });
}

// Logits 90 apart give weights of e^-90 ~ 8e-40, a subnormal float: a backend that flushes it to zero
// moves the result by less than 1e-38.
OpCase subnormal_softmax_case() {
  return OpCase{"radix_softmax_subnormal_weights", OpKind::kRadixSoftmax, kF32Bound, [] {
                  SmallGraph g;
                  const ValueId x = g.input("x", {64, 4, 4});
                  const ValueId weights =
                      g.node(OpKind::kRadixSoftmax, {g.input("logits", {64, 1, 1})}, radix_attrs(2));
                  g.output(g.node(OpKind::kRadixWeightedSum, {x, weights}, radix_attrs(2)));
                  Tensor logits(DType::kF32, {1, 64, 1, 1});
                  for (std::size_t i = 0; i < 64; ++i) logits.mutable_f32()[i] = i < 32 ? 45.0f : -45.0f;
                  return CaseGraph{std::move(g.graph), {random_tensor({1, 64, 4, 4}, 8), logits}};
                }};
}

struct GateCase {
  std::int64_t channels;  // the gate's input channels (per radix split)
  std::int64_t radix;     // 1: no radix sum, as squeeze-excite pools the depthwise output
  std::int64_t cardinality, hidden, size, batch;
  Activation act1 = Activation::kRelu, act2 = Activation::kNone;
};

// The gate on its own: (radix sum,) global pool, fc1 + act1, fc2 + act2, whose output is the graph's.
// Its input passes a ReLU first, as in the networks, so that the pooled means are far from zero and
// weigh in the gate's output as much as its biases do.
OpCase gate_case(const GateCase& c) {
  const std::string name =
      cat("attention_gate", radix_suffix(c.radix, c.cardinality), "_c", c.channels, "_h", c.hidden, "_",
          c.size, "_b", c.batch, c.act2 == Activation::kSigmoid ? "_sigmoid" : "");
  return graph_case(name, OpKind::kGlobalAvgPool, c.batch, [c](SmallGraph& g) {
    const ValueId in = g.input("x", {c.channels * c.radix, c.size, c.size});
    ValueId x = g.node(OpKind::kActivation, {in}, ActivationAttrs{Activation::kRelu});
    if (c.radix > 1) x = g.node(OpKind::kRadixSum, {x}, radix_attrs(c.radix, c.cardinality));
    const ValueId pooled = g.node(OpKind::kGlobalAvgPool, {x});
    const ValueId fc1 = g.conv(pooled, c.hidden, conv_attrs(1, 1, 0, c.cardinality, c.act1));
    g.output(g.conv(fc1, c.channels * c.radix, conv_attrs(1, 1, 0, c.cardinality, c.act2)));
  });
}

std::vector<OpCase> gate_cases() {
  const GateCase gates[] = {
      {512, 2, 1, 256, 7, 1},   // ResNeSt-50d layer4 (393k weights)
      {512, 2, 1, 256, 7, 3},   //
      {256, 2, 1, 128, 14, 1},  // layer3
      {64, 2, 1, 32, 56, 1},    // layer1: the largest pool ResNeSt fuses
      {80, 4, 2, 80, 9, 3},     // radix 4, cardinality 2 (ResNeSt-50d_4s2x40d's layer1)
      {40, 2, 2, 32, 3, 1},     // fewer pixels than blocks per image
      {36, 1, 1, 9, 5, 3},      // no 16-byte rows: scalar loads
      {1152, 1, 1, 48, 7, 1, Activation::kSilu, Activation::kSigmoid},  // EfficientNet-B0's last SE
      {96, 1, 1, 4, 56, 3, Activation::kSilu},                          // B0's first stride-2 SE
      {32, 1, 1, 8, 112, 1, Activation::kSilu},                         // B0's first SE: 112 x 112
      {2304, 1, 1, 96, 5, 3, Activation::kSilu},                        // B7's widest SE
  };
  std::vector<OpCase> cases;
  for (const GateCase& c : gates) cases.push_back(gate_case(c));
  for (const std::size_t i : {0u, 1u, 3u, 4u, 7u, 8u, 9u}) cases.push_back(fp16_case(gate_case(gates[i])));
  return cases;
}

}  // namespace

std::vector<OpCase> split_attention_cases() {
  std::vector<OpCase> cases;
  for (const OpKind op : {OpKind::kRadixSum, OpKind::kRadixSoftmax, OpKind::kRadixWeightedSum}) {
    for (const auto& [radix, cardinality] : {std::pair{1, 1}, {2, 1}, {2, 2}, {4, 2}})
      cases.push_back(radix_op_case(op, 16, radix, cardinality));
  }
  cases.push_back(radix_op_case(OpKind::kRadixSoftmax, 13, 2, 1));
  const BlockCase blocks[] = {
      {64, 2, 1, 16, 1, true},  // Winograd per group, nChw16c splits
      {64, 2, 1, 16, 2, true},  // batch 2: direct grouped conv
      {32, 2, 1, 7, 1, true},   // small image: direct grouped conv
      {24, 2, 1, 9, 1, true},   // splits are not whole blocks
      {16, 4, 2, 8, 2, true},   // radix 4, cardinality 2
      {16, 4, 2, 12, 3, true},  // as ResNeSt's 4s2x blocks
      {40, 2, 1, 6, 3, false},  // row-major input
      {12, 1, 1, 5, 2, false},  // radix 1: sigmoid attention
  };
  for (const BlockCase& b : blocks) cases.push_back(block_case(b));
  cases.push_back(fp16_case(block_case(blocks[5])));
  cases.push_back(fp16_case(radix_op_case(OpKind::kRadixSoftmax, 16, 2, 2)));
  cases.push_back(subnormal_softmax_case());
  for (OpCase& c : gate_cases()) cases.push_back(std::move(c));
  return cases;
}

}  // namespace kiln::testing
