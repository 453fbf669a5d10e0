// The oneDNN backend's interface: it checks what run() is given, says per node whether its own kernels
// run it, and is the first backend listed. Its operators are checked against the reference in the
// cross-backend operator test (op_test/).
#include <gtest/gtest.h>

#include "core/error.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::pool_attrs;
using testing::random_tensor;
using testing::SmallGraph;

TEST(BackendTest, ChecksInputs) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  g.output(g.conv(g.input("x", {3, 8, 8}), 8, conv_attrs(3, 1, 1)));
  CompileOptions options;
  options.batch = 2;
  auto model = make_backend("cpu")->compile(g.graph, options);
  EXPECT_THROW(model->run({random_tensor({1, 3, 8, 8}, 1)}), Error);  // batch
  EXPECT_THROW(model->run({random_tensor({2, 3, 9, 8}, 1)}), Error);  // image size
  EXPECT_THROW(model->run({}), Error);                                // count
  EXPECT_THROW(model->run({random_tensor({2, 3, 8, 8}, 1).to(DType::kF16)}), Error);
  EXPECT_NO_THROW(model->run({random_tensor({2, 3, 8, 8}, 1)}));
}

TEST(BackendTest, SupportsReportsTheReferenceFallback) {
  KILN_SKIP_WITHOUT_ONEDNN();
  SmallGraph g;
  const ValueId x = g.input("x", {4, 8, 8});
  const ValueId counted = g.node(OpKind::kAvgPool2d, {x}, pool_attrs(3, 2, 1, true, true));
  const ValueId plain = g.node(OpKind::kAvgPool2d, {x}, pool_attrs(3, 2, 1, false, true));
  const auto backend = make_backend("cpu");
  // ceil_mode adds padding past the declared one here, which oneDNN would count: the reference runs it.
  EXPECT_FALSE(backend->supports(g.graph, g.producer(counted)));
  EXPECT_TRUE(backend->supports(g.graph, g.producer(plain)));
}

TEST(BackendTest, IsListedFirst) {
  KILN_SKIP_WITHOUT_ONEDNN();
  EXPECT_EQ(backend_names().front(), "cpu");
  EXPECT_EQ(make_backend("cpu")->name(), "cpu");
}

}  // namespace
}  // namespace kiln
