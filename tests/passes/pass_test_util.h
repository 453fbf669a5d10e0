// Helpers for the pass tests: small graphs with seeded random weights, and a check that a rewritten
// graph computes the same function as the original on the reference executor.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "reference/executor.h"
#include "graph/graph.h"
#include "testing/random_tensor.h"

namespace kiln::testing {

struct ConvSpec {
  std::int64_t in = 4;
  std::int64_t out = 4;
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t groups = 1;
  bool bias = false;
};

// A conv with "same" padding and weights named like a checkpoint's ("<name>.weight", "<name>.bias").
inline ValueId add_conv(Graph& graph, const std::string& name, ValueId x, const ConvSpec& spec,
                        std::uint32_t seed) {
  ConvAttrs attrs;
  attrs.kernel = {spec.kernel, spec.kernel};
  attrs.stride = {spec.stride, spec.stride};
  const std::int64_t pad = spec.kernel / 2;
  attrs.padding = {pad, pad, pad, pad};
  attrs.groups = spec.groups;
  std::vector<ValueId> inputs = {
      x,
      graph.add_constant(name + ".weight",
                         random_tensor({spec.out, spec.in / spec.groups, spec.kernel, spec.kernel}, seed))};
  if (spec.bias) inputs.push_back(graph.add_constant(name + ".bias", random_tensor({spec.out}, seed + 1)));
  return graph.add_node(OpKind::kConv2d, name, std::move(inputs), attrs);
}

// An inference BN with statistics far from the identity, so a fold that drops a term shows:
// gamma in [0.5, 1.5], beta and mean in [-0.5, 0.5] (nonzero almost surely), var in [0.5, 2].
inline ValueId add_batchnorm(Graph& graph, const std::string& name, ValueId x, std::int64_t channels,
                             std::uint32_t seed, float epsilon = 1e-5f) {
  const ValueId gamma = graph.add_constant(name + ".weight", random_tensor({channels}, seed, 0.5f, 1.5f));
  const ValueId beta = graph.add_constant(name + ".bias", random_tensor({channels}, seed + 1, -0.5f, 0.5f));
  const ValueId mean =
      graph.add_constant(name + ".running_mean", random_tensor({channels}, seed + 2, -0.5f, 0.5f));
  const ValueId var =
      graph.add_constant(name + ".running_var", random_tensor({channels}, seed + 3, 0.5f, 2.0f));
  return graph.add_node(OpKind::kBatchNorm, name, {x, gamma, beta, mean, var}, BatchNormAttrs{epsilon});
}

inline ValueId add_activation(Graph& graph, const std::string& name, ValueId x,
                              Activation activation = Activation::kRelu) {
  return graph.add_node(OpKind::kActivation, name, {x}, ActivationAttrs{activation});
}

inline std::size_t count_live(const Graph& graph, OpKind op) {
  return static_cast<std::size_t>(
      std::count_if(graph.nodes().begin(), graph.nodes().end(),
                    [&](const Node& node) { return !node.dead && node.op == op; }));
}

inline const Node& node_named(const Graph& graph, const std::string& name) {
  const auto id = graph.find_node(name);
  EXPECT_TRUE(id.has_value()) << "no live node named " << name;
  return graph.node(id.value());
}

inline double relative_error(const Tensor& y, const Tensor& y0) {
  EXPECT_EQ(y.shape(), y0.shape());
  const auto a = y.f32();
  const auto b = y0.f32();
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// Random inputs for every graph input, a batch of 2 where the batch is dynamic.
inline std::vector<Tensor> random_inputs(const Graph& graph, std::uint32_t seed) {
  std::vector<Tensor> inputs;
  for (const ValueId id : graph.inputs()) {
    Shape shape = graph.value(id).shape;
    if (shape[0] == -1) shape[0] = 2;
    inputs.push_back(random_tensor(shape, seed++));
  }
  return inputs;
}

// Folding BN into weights reorders fp32 rounding: the folded weights are rounded once, where the
// unfused graph rounds the conv output before the BN's affine map. Each rounding is relatively 2^-24
// (~6e-8), so the outputs agree to about 1e-7 relative to their norm for these sizes and statistics
// (3e-8 to 1e-7 observed); 1e-5 leaves margin, while a fold that drops a term or mixes up channels
// errs by ~1e-1.
inline constexpr double kRewriteTolerance = 1e-5;

// Runs both graphs on the same random inputs and expects every output to agree within `tolerance`.
inline void expect_same_function(const Graph& before, const Graph& after, std::uint32_t seed = 1234,
                                 double tolerance = kRewriteTolerance) {
  const std::vector<Tensor> inputs = random_inputs(before, seed);
  const std::vector<Tensor> y0 = run_reference(before, inputs);
  const std::vector<Tensor> y = run_reference(after, inputs);
  ASSERT_EQ(y.size(), y0.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    EXPECT_LE(relative_error(y[i], y0[i]), tolerance) << "output " << i;
  }
}

}  // namespace kiln::testing
