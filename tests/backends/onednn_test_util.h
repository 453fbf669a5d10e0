// Shared helpers for the oneDNN backend tests: run a graph on the "cpu" backend and on the reference
// backend and compare. Tests skip when the backend is not built into this binary.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "reference_test_util.h"
#include "backends/backend.h"

namespace kiln::testing {

inline bool onednn_built() {
  const auto names = backend_names();
  return std::find(names.begin(), names.end(), "cpu") != names.end();
}

#define KILN_SKIP_WITHOUT_ONEDNN()                                                                         \
  if (!::kiln::testing::onednn_built()) GTEST_SKIP() << "the oneDNN backend is not built (KILN_ONEDNN is " \
                                                        "off)"

// Whether the cpu backend runs int8 layers on oneDNN's int8 kernels here (its environment's "int8" fact);
// without int8 dot products it simulates them in f32.
inline bool cpu_int8_kernels() {
  if (!onednn_built()) return false;
  for (const BackendFact& fact : make_backend("cpu")->environment()) {
    if (fact.key == "int8") return fact.value.starts_with("native");
  }
  return false;
}

#define KILN_SKIP_WITHOUT_INT8_KERNELS()    \
  if (!::kiln::testing::cpu_int8_kernels()) \
  GTEST_SKIP() << "this CPU has no int8 dot products: int8 is simulated"

// oneDNN accumulates in fp32, in an order of its own (blocked over channels and taps), while the
// reference accumulates in double and rounds once. A sum of K products then differs by about
// sqrt(K) * 2^-24 relative (a few 1e-7 for K in the thousands); 1e-5 leaves room for that and for the
// compounding through a network's depth, while any indexing or layout mistake is O(1).
inline constexpr double kBackendTolerance = 1e-5;

inline std::vector<Tensor> run_on(std::string_view backend, const Graph& graph,
                                  const std::vector<Tensor>& inputs, CompileOptions options = {}) {
  options.batch = inputs.front().dim(0);
  return make_backend(backend)->compile(graph, options)->run(inputs);
}

// ||y - ref|| / ||ref|| over all elements.
inline double relative_difference(const Tensor& y, const Tensor& ref) {
  EXPECT_EQ(y.shape(), ref.shape());
  const auto ys = y.f32();
  const auto rs = ref.f32();
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < ys.size() && i < rs.size(); ++i) {
    const double d = static_cast<double>(ys[i]) - rs[i];
    diff += d * d;
    norm += static_cast<double>(rs[i]) * rs[i];
  }
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// Runs `graph` on both backends and checks every output.
inline void expect_matches_reference(const Graph& graph, const std::vector<Tensor>& inputs,
                                     double tolerance = kBackendTolerance, CompileOptions options = {}) {
  const auto ours = run_on("cpu", graph, inputs, options);
  const auto ref = run_on("cpu-reference", graph, inputs, options);
  ASSERT_EQ(ours.size(), ref.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_LE(relative_difference(ours[i], ref[i]), tolerance) << "output " << i;
  }
}

}  // namespace kiln::testing
