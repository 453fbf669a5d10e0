// The cases of the cross-backend operator test: one small graph per operator and attribute set, with
// seeded random inputs and weights, run on every backend and compared with the cpu-reference backend
// (backend_ops_test.cpp), and timed per backend (backend_ops_perf.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::testing {

// Bounds on ||y - ref|| / ||ref|| over each output.
//
// fp32: the reference accumulates in double and rounds once; a backend accumulating in f32 in its own
// order (blocked, vectorised, Winograd) differs by about sqrt(K) * 2^-24 relative for a sum of K
// products, a few 1e-7 for the K of these cases (at most a few thousand); 1e-5 leaves room for that
// while any indexing or layout mistake is O(1).
inline constexpr double kF32Bound = 1e-5;
// fp16 nodes (fp16 storage, fp32 accumulation): both sides round the same values to fp16 where they are
// stored (2^-11 relative per rounding), so they differ only where their fp32 results straddle a
// rounding boundary, by one fp16 step (2^-10 relative at most); a case chains at most two rounded
// nodes: 2 * 2^-10.
inline constexpr double kF16Bound = 0x1p-9;
// FP8 E4M3 (3 mantissa bits: one step is at most 2^-3 relative, half a step 2^-4): both sides put the
// same inputs on the same grid, but a value within f32 rounding of a grid midpoint can land one step
// apart, and each such element moves its products by up to a half-step relative; 2^-4 bounds a case
// where many do, while a wrong scale or layout is O(1).
inline constexpr double kFp8Bound = 0x1p-4;

struct CaseGraph {
  Graph graph;
  std::vector<Tensor> inputs;  // one per graph input; dim 0 is the batch
};

struct OpCase {
  std::string name;  // letters, digits and underscores: part of the test's name
  OpKind op;         // the operator it checks (other nodes only feed it)
  double bound = kF32Bound;
  std::function<CaseGraph()> make;
};

// Every case, in a fixed order.
const std::vector<OpCase>& op_cases();

// The case lists, one per group of operators (op_cases() joins them).
std::vector<OpCase> convolution_cases();
std::vector<OpCase> elementwise_cases();
std::vector<OpCase> pooling_and_dense_cases();
std::vector<OpCase> split_attention_cases();
std::vector<OpCase> detection_cases();
std::vector<OpCase> fp8_producer_cases();

// The graph with every node in fp16 and its constants widened back to f32, as the Engine hands an
// fp16 plan's graph to backends.
CaseGraph as_fp16(CaseGraph c);

// The backends a case runs on: every one built in, and "cuda" even where it is not (it then skips).
std::vector<std::string> op_test_backends();

// Why `backend` cannot run case `c` here (empty when it can): the CUDA backend not built, no device,
// or a node the backend does not support. The default CPU backend is never skipped: it is the fallback
// and runs every operator itself (on the reference kernels where it has none of its own).
std::string skip_reason(const std::string& backend, const CaseGraph& c);

}  // namespace kiln::testing
