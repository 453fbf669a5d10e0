// Pooling (PyTorch's window rules: ceil mode, padding counted or not, windows past the padding),
// global pooling, flatten and linear layers.
#include "op_case_util.h"

namespace kiln::testing {
namespace {

struct PoolCase {
  OpKind op;
  PoolAttrs attrs;
  std::int64_t channels, size;
};

OpCase pool_case(const PoolCase& c, bool behind_conv) {
  const PoolAttrs& p = c.attrs;
  const std::string name = cat(
      op_kind_name(c.op), "_k", p.kernel[0], "s", p.stride[0], "p", p.padding[0], p.ceil_mode ? "_ceil" : "",
      c.op == OpKind::kAvgPool2d ? (p.count_include_pad ? "_counted" : "_uncounted") : "", "_c", c.channels,
      "_", c.size, source_suffix(behind_conv));
  return graph_case(name, c.op, 2, [=](SmallGraph& g) {
    g.output(g.node(c.op, {source(g, g.input("x", {c.channels, c.size, c.size}), behind_conv)}, c.attrs));
  });
}

// x -> global average pool -> flatten -> linear, the classifier head.
OpCase linear_case(std::int64_t batch, bool bias, bool behind_conv) {
  return graph_case(cat("linear", bias ? "" : "_no_bias", "_b", batch, source_suffix(behind_conv)),
                    OpKind::kLinear, batch, [=](SmallGraph& g) {
                      const ValueId x = source(g, g.input("x", {48, 7, 7}), behind_conv);
                      const ValueId flat = g.node(OpKind::kFlatten, {g.node(OpKind::kGlobalAvgPool, {x})});
                      const ValueId w = g.constant("fc.weight", {10, 48});
                      g.output(bias ? g.node(OpKind::kLinear, {flat, w, g.constant("fc.bias", {10})})
                                    : g.node(OpKind::kLinear, {flat, w}));
                    });
}

}  // namespace

std::vector<OpCase> pooling_and_dense_cases() {
  const PoolCase pools[] = {
      {OpKind::kMaxPool2d, pool_attrs(3, 2, 1), 24, 112},             // the stem's
      {OpKind::kMaxPool2d, pool_attrs(3, 2, 0, true), 24, 8},         // ceil mode
      {OpKind::kMaxPool2d, pool_attrs(3, 2, 1, true), 16, 15},        // ceil mode, padded
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 1), 24, 56},              // ResNeSt's avd, padding counted
      {OpKind::kAvgPool2d, pool_attrs(3, 1, 1), 24, 9},               // stride 1
      {OpKind::kAvgPool2d, pool_attrs(2, 2, 0, true, false), 24, 7},  // ResNet-D shortcut, ceil, odd size
      {OpKind::kAvgPool2d, pool_attrs(2, 2, 0, true, false), 24, 14},
      {OpKind::kAvgPool2d, pool_attrs(2, 2, 0, true, false), 6, 9},    // 6 channels: no 16-byte packs
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 1, true, true), 24, 8},    // ceil with padding counted
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 1, true, false), 16, 15},  // ceil, padding not counted
      {OpKind::kAvgPool2d, pool_attrs(3, 2, 0, true, false), 24, 10},
  };
  std::vector<OpCase> cases;
  for (const bool behind_conv : {false, true}) {
    for (const PoolCase& p : pools) cases.push_back(pool_case(p, behind_conv));
  }
  cases.push_back(fp16_case(pool_case(pools[3], true)));
  cases.push_back(fp16_case(pool_case(pools[0], false)));
  for (const bool behind_conv : {false, true}) {
    cases.push_back(graph_case(cat("global_avg_pool_c48", source_suffix(behind_conv)), OpKind::kGlobalAvgPool,
                               3, [=](SmallGraph& g) {
                                 const ValueId x = source(g, g.input("x", {48, 7, 7}), behind_conv);
                                 g.output(g.node(OpKind::kGlobalAvgPool, {x}));
                               }));
    cases.push_back(
        graph_case(cat("flatten", source_suffix(behind_conv)), OpKind::kFlatten, 2, [=](SmallGraph& g) {
          const ValueId x = source(g, g.input("x", {20, 1, 1}), behind_conv);
          g.output(g.node(OpKind::kFlatten, {x}));
        }));
    for (const std::int64_t batch : {1, 4}) {
      for (const bool bias : {true, false}) cases.push_back(linear_case(batch, bias, behind_conv));
    }
  }
  cases.push_back(fp16_case(linear_case(4, true, true)));
  // A linear layer reading a graph input of rank 2, as a segment after a fallback does.
  cases.push_back(graph_case("linear_of_rank2_input", OpKind::kLinear, 3, [](SmallGraph& g) {
    g.output(g.node(OpKind::kLinear,
                    {g.input("x", {64}), g.constant("fc.weight", {32, 64}), g.constant("fc.bias", {32})}));
  }));
  return cases;
}

}  // namespace kiln::testing
