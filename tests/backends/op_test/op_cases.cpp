#include <algorithm>

#include "core/error.h"
#include "cuda_test_util.h"
#include "graph/precision_assignment.h"
#include "op_case_util.h"
#include "runtime/engine.h"

namespace kiln::testing {

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> all;
    for (auto list : {convolution_cases, elementwise_cases, pooling_and_dense_cases, split_attention_cases,
                      detection_cases, fp8_producer_cases}) {
      for (OpCase& c : list()) all.push_back(std::move(c));
    }
    return all;
  }();
  return cases;
}

OpCase graph_case(std::string name, OpKind op, std::int64_t batch, GraphBuilder build, float input_range) {
  OpCase c{std::move(name), op, kF32Bound, {}};
  c.make = [batch, build = std::move(build), input_range] {
    SmallGraph g;
    build(g);
    CaseGraph result{std::move(g.graph), {}};
    std::uint32_t seed = 1;
    for (const ValueId input : result.graph.inputs()) {
      Shape shape = result.graph.value(input).shape;
      shape[0] = batch;
      result.inputs.push_back(random_tensor(shape, seed++, -input_range, input_range));
    }
    return result;
  };
  return c;
}

CaseGraph as_fp16(CaseGraph c) {
  assign_precision(c.graph, Precision::kF16);
  widen_constants_to_f32(c.graph);
  return c;
}

OpCase fp16_case(const OpCase& c) {
  OpCase twin = c;
  twin.name += "_fp16";
  twin.bound = kF16Bound;
  twin.make = [make = c.make] { return as_fp16(make()); };
  return twin;
}

ValueId source(SmallGraph& g, ValueId x, bool behind_conv) {
  if (!behind_conv) return x;
  return g.conv(x, g.graph.value(x).shape[1], conv_attrs(1, 1, 0));
}

std::vector<std::string> op_test_backends() {
  std::vector<std::string> names;
  for (const auto name : backend_names()) names.emplace_back(name);
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) names.emplace_back("cuda");
  return names;
}

std::string skip_reason(const std::string& backend, const CaseGraph& c) {
  if (backend == "cuda" && !cuda_built()) return "the CUDA backend is not built (KILN_CUDA is off)";
  if (backend == default_backend()) return {};
  const auto runner = make_backend(backend);
  for (const NodeId id : c.graph.topological_order()) {
    const Node& node = c.graph.node(id);
    std::string reason = runner->unsupported_reason(c.graph, node);
    if (reason.empty()) reason = runner->precision_refusal(node.precision);  // int8 off a Hopper GPU
    if (!reason.empty())
      return cat("the ", backend, " backend does not run layer '", node.name, "' (", op_kind_name(node.op),
                 "): ", reason);
  }
  if (backend == "cuda" && !gpu_present()) return "no CUDA device on this machine";
  return {};
}

}  // namespace kiln::testing
