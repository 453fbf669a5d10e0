// Small graphs for the oneDNN backend tests: one builder call per node, seeded random constants.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "reference_test_util.h"

namespace kiln::testing {

class SmallGraph {
 public:
  // A graph input with any batch: [-1, dims...].
  ValueId input(const std::string& name, Shape dims) {
    dims.insert(dims.begin(), -1);
    return graph.add_input(name, dims);
  }
  ValueId constant(const std::string& name, Shape shape, float low = -1.0f, float high = 1.0f) {
    return graph.add_constant(name, random_tensor(std::move(shape), seed_++, low, high));
  }
  ValueId conv(ValueId x, std::int64_t out, const ConvAttrs& a, bool bias = true) {
    const std::int64_t in = graph.value(x).shape[1];
    const float scale = 1.0f / std::sqrt(static_cast<float>(in / a.groups * a.kernel[0] * a.kernel[1]));
    const std::string name = "conv" + std::to_string(count_++);
    const ValueId w =
        constant(name + ".weight", {out, in / a.groups, a.kernel[0], a.kernel[1]}, -scale, scale);
    if (!bias) return graph.add_node(OpKind::kConv2d, name, {x, w}, a);
    const ValueId b = constant(name + ".bias", {out}, -0.5f, 0.5f);
    return graph.add_node(OpKind::kConv2d, name, {x, w, b}, a);
  }
  ValueId node(OpKind op, std::vector<ValueId> inputs, Attributes attrs = {}) {
    return graph.add_node(op, std::string(op_kind_name(op)) + std::to_string(count_++), std::move(inputs),
                          std::move(attrs));
  }
  Node& producer(ValueId value) { return graph.node(graph.value(value).producer); }
  void output(ValueId value) { graph.mark_output(value); }

  Graph graph;

 private:
  std::uint32_t seed_ = 100;
  int count_ = 0;
};

inline ConvAttrs conv_attrs(std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t groups = 1,
                            Activation activation = Activation::kNone, std::int64_t dilation = 1) {
  ConvAttrs a;
  a.kernel = {k, k};
  a.stride = {stride, stride};
  a.padding = {pad, pad, pad, pad};
  a.groups = groups;
  a.activation = activation;
  a.dilation = {dilation, dilation};
  return a;
}

inline PoolAttrs pool_attrs(std::int64_t k, std::int64_t stride, std::int64_t pad, bool ceil = false,
                            bool include_pad = true) {
  PoolAttrs p;
  p.kernel = {k, k};
  p.stride = {stride, stride};
  p.padding = {pad, pad, pad, pad};
  p.ceil_mode = ceil;
  p.count_include_pad = include_pad;
  return p;
}

inline RadixAttrs radix_attrs(std::int64_t radix, std::int64_t cardinality = 1) {
  RadixAttrs a;
  a.radix = radix;
  a.cardinality = cardinality;
  return a;
}

}  // namespace kiln::testing
