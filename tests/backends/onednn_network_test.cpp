// Whole ResNeSt-like networks on the oneDNN backend against the reference backend, including repeated
// runs that would expose activation buffers reused too early.
#include <gtest/gtest.h>

#include "onednn_test_util.h"
#include "testing/resnest_like_graph.h"

namespace kiln {
namespace {

using testing::expect_matches_reference;
using testing::random_tensor;
using testing::relative_difference;
using testing::resnest_like_graph;
using testing::ResnestLikeOptions;
using testing::run_on;

ResnestLikeOptions small(std::int64_t width, bool fused) {
  ResnestLikeOptions o;
  o.image = 64;
  o.stem_width = width / 2;
  o.base_width = width;
  o.depths = {2, 2, 2, 1};
  o.classes = 10;
  o.fused = fused;
  return o;
}

struct NetworkCase {
  std::int64_t width;
  bool fused;
  std::int64_t batch;
};

class NetworkTest : public ::testing::TestWithParam<NetworkCase> {};

TEST_P(NetworkTest, MatchesReference) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const NetworkCase c = GetParam();
  const Graph graph = resnest_like_graph(small(c.width, c.fused));
  expect_matches_reference(graph, {random_tensor({c.batch, 3, 64, 64}, 7)});
}

// Width 16 keeps every radix split a whole nChw16c block; 12 does not, which takes the NCHW route.
INSTANTIATE_TEST_SUITE_P(Widths, NetworkTest,
                         ::testing::Values(NetworkCase{16, true, 1}, NetworkCase{16, false, 1},
                                           NetworkCase{12, true, 1}, NetworkCase{16, true, 4},
                                           NetworkCase{12, false, 4}));

TEST(NetworkReuseTest, RepeatedRunsSeeOnlyTheirOwnInput) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const Graph graph = resnest_like_graph(small(16, true));
  CompileOptions options;
  options.batch = 2;
  auto model = make_backend("cpu")->compile(graph, options);
  const Tensor a = random_tensor({2, 3, 64, 64}, 1);
  const Tensor b = random_tensor({2, 3, 64, 64}, 2, -2.0f, 3.0f);
  const Tensor first = model->run({a}).at(0);
  const Tensor second = model->run({b}).at(0);
  const Tensor third = model->run({a}).at(0);
  EXPECT_EQ(testing::values(first), testing::values(third));  // nothing left over from the run on b
  EXPECT_LE(relative_difference(first, run_on("cpu-reference", graph, {a}).at(0)),
            testing::kBackendTolerance);
  EXPECT_LE(relative_difference(second, run_on("cpu-reference", graph, {b}).at(0)),
            testing::kBackendTolerance);
}

TEST(NetworkProfileTest, ReportsLayersByName) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const Graph graph = resnest_like_graph(small(16, true));
  CompileOptions options;
  options.profile = true;
  auto model = make_backend("cpu")->compile(graph, options);
  model->run({random_tensor({1, 3, 64, 64}, 3)});
  const auto profile = model->last_profile();
  ASSERT_FALSE(profile.empty());
  double total = 0.0;
  bool saw_conv = false;
  for (const LayerTime& layer : profile) {
    EXPECT_TRUE(graph.find_node(layer.name).has_value()) << layer.name;
    EXPECT_GE(layer.milliseconds, 0.0);
    total += layer.milliseconds;
    saw_conv = saw_conv || layer.name == "layer1.0.conv2.conv";
  }
  EXPECT_GT(total, 0.0);
  EXPECT_TRUE(saw_conv);
}

TEST(NetworkThreadsTest, OneThreadGivesTheSameAnswer) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const Graph graph = resnest_like_graph(small(16, true));
  CompileOptions options;
  options.threads = 1;
  expect_matches_reference(graph, {random_tensor({1, 3, 64, 64}, 5)}, testing::kBackendTolerance, options);
}

}  // namespace
}  // namespace kiln
