// ResNeSt's split attention: each radix operator alone (radix 1, 2 and 4, cardinality 1 and 2), the
// whole block as ResNeSt builds it, and far-apart softmax logits whose small weights are subnormal.
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
  return cases;
}

}  // namespace kiln::testing
