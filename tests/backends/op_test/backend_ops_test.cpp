// The cross-backend operator test: every case of op_case.h on every backend, against the cpu-reference
// backend, within the case's bound (op_case.h says why each bound is what it is). The cpu-reference
// backend runs its cases too, against a second compile of itself, bit for bit: that checks the case's
// graph and the oracle's determinism, not the oracle's arithmetic, which tests/backends/
// *_reference_test.cpp check against independent hand computations.
#include <gtest/gtest.h>

#include <algorithm>

#include "../onednn_test_util.h"
#include "op_case.h"

namespace kiln::testing {
namespace {

struct OpTestParam {
  const OpCase* op_case;
  std::string backend;
};

void PrintTo(const OpTestParam& p, std::ostream* out) { *out << p.op_case->name << " on " << p.backend; }

std::vector<OpTestParam> all_params() {
  std::vector<OpTestParam> params;
  for (const OpCase& c : op_cases()) {
    for (const std::string& backend : op_test_backends()) params.push_back({&c, backend});
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<OpTestParam>& info) {
  std::string backend = info.param.backend;
  std::replace(backend.begin(), backend.end(), '-', '_');
  return info.param.op_case->name + "_" + backend;
}

class BackendOpsTest : public ::testing::TestWithParam<OpTestParam> {};

TEST_P(BackendOpsTest, MatchesReference) {
  const OpCase& c = *GetParam().op_case;
  const std::string& backend = GetParam().backend;
  const CaseGraph graph = c.make();
  const std::string skip = skip_reason(backend, graph);
  if (!skip.empty()) GTEST_SKIP() << skip;
  CompileOptions options;
  options.opt_level = 1;
  const auto ours = run_on(backend, graph.graph, graph.inputs, options);
  const auto ref = run_on("cpu-reference", graph.graph, graph.inputs, options);
  ASSERT_EQ(ours.size(), ref.size());
  const double bound = backend == "cpu-reference" ? 0.0 : c.bound;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_LE(relative_difference(ours[i], ref[i]), bound) << "output " << i << " of " << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackendOpsTest, ::testing::ValuesIn(all_params()), param_name);

TEST(BackendOpsCoverage, EveryOperatorHasACase) {
  for (int op = 0; op < kOpKindCount; ++op) {
    const auto kind = static_cast<OpKind>(op);
    const bool covered =
        std::any_of(op_cases().begin(), op_cases().end(), [&](const OpCase& c) { return c.op == kind; });
    EXPECT_TRUE(covered) << op_kind_name(kind) << " has no case in tests/backends/op_test/";
  }
}

TEST(BackendOpsCoverage, EachCaseHoldsItsOperator) {
  for (const OpCase& c : op_cases()) {
    const CaseGraph graph = c.make();
    const auto& nodes = graph.graph.nodes();
    EXPECT_TRUE(std::any_of(nodes.begin(), nodes.end(), [&](const Node& n) { return n.op == c.op; }))
        << c.name;
    EXPECT_EQ(graph.inputs.size(), graph.graph.inputs().size()) << c.name;
  }
}

}  // namespace
}  // namespace kiln::testing
