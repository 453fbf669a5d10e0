// Narrow inputs padded to 8 channels (input_padding.h): which inputs are padded (host), the zero weight
// columns their convolutions get (host), and on a GPU an fp16 RGB stem with padding on and off against the
// reference backend. The GPU test skips without a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "graph/precision_assignment.h"
#include "graph/shape_inference.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "testing/random_tensor.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/host_constants.h"
#include "backends/cuda/input_padding.h"
#endif

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::SmallGraph;

// Another layer reading the image besides the stem.
enum class SecondReader { kNone, kAdd, kDepthwise };

// An RGB stem as YOLOv10's and EfficientNet's: 3x3 stride 2 SiLU, then a 3x3 convolution.
Graph stem(Precision precision, SecondReader reader = SecondReader::kNone, std::int64_t channels = 3) {
  SmallGraph g;
  const ValueId x = g.input("image", {channels, 32, 32});
  const ValueId y = g.conv(x, 16, conv_attrs(3, 2, 1, 1, Activation::kSilu));
  g.output(g.conv(y, 16, conv_attrs(3, 1, 1, 1, Activation::kSilu)));
  if (reader == SecondReader::kAdd) g.output(g.node(OpKind::kAdd, {x, x}, AddAttrs{}));
  if (reader == SecondReader::kDepthwise)
    g.output(g.conv(x, channels, conv_attrs(3, 1, 1, channels, Activation::kNone)));
  assign_precision(g.graph, precision);
  widen_constants_to_f32(g.graph);
  return std::move(g.graph);
}

#if KILN_HAVE_CUDA
std::vector<Shape> batch_shapes(const Graph& graph) {
  Shape input = graph.value(graph.inputs()[0]).shape;
  input[0] = 2;
  return infer_shapes(graph, {input});
}

// With padding asked for (KILN_CUDA_PAD_INPUTS=1).
std::int64_t padded_channels(const Graph& graph, cuda::Elem elem) {
  ::setenv("KILN_CUDA_PAD_INPUTS", "1", 1);
  const std::int64_t channels = cuda::find_input_padding(graph, batch_shapes(graph), elem).of(graph.inputs()[0]);
  ::unsetenv("KILN_CUDA_PAD_INPUTS");
  return channels;
}

TEST(CudaInputPaddingTest, Fp16ImagesReadOnlyByDenseConvolutionsArePaddedToEight) {
  const Graph graph = stem(Precision::kF16);
  EXPECT_EQ(padded_channels(graph, cuda::Elem::kF16), 8);
  ::setenv("KILN_CUDA_PAD_INPUTS", "1", 1);
  const cuda::InputPadding padding = cuda::find_input_padding(graph, batch_shapes(graph), cuda::Elem::kF16);
  ::unsetenv("KILN_CUDA_PAD_INPUTS");
  const std::vector<Shape> stored = cuda::stored_shapes(batch_shapes(graph), padding);
  EXPECT_EQ(stored[static_cast<std::size_t>(graph.inputs()[0])], (Shape{2, 8, 32, 32}));
  // f32 programs have no aligned-channel kernels to gain.
  EXPECT_EQ(padded_channels(stem(Precision::kF32), cuda::Elem::kF32), 0);
  // 8 channels and more are stored as they are.
  EXPECT_EQ(padded_channels(stem(Precision::kF16, SecondReader::kNone, 8), cuda::Elem::kF16), 0);
}

TEST(CudaInputPaddingTest, AnyOtherReaderKeepsTheInputAsItIs) {
  // An add would read the padding as channels; a depthwise convolution has one group per channel.
  EXPECT_EQ(padded_channels(stem(Precision::kF16, SecondReader::kAdd), cuda::Elem::kF16), 0);
  EXPECT_EQ(padded_channels(stem(Precision::kF16, SecondReader::kDepthwise), cuda::Elem::kF16), 0);
}

TEST(CudaInputPaddingTest, PaddingIsOffUnlessAskedForAndABadValueIsRefused) {
  const Graph graph = stem(Precision::kF16);
  EXPECT_EQ(cuda::find_input_padding(graph, batch_shapes(graph), cuda::Elem::kF16).of(graph.inputs()[0]), 0);
  ::setenv("KILN_CUDA_PAD_INPUTS", "0", 1);
  EXPECT_EQ(cuda::find_input_padding(graph, batch_shapes(graph), cuda::Elem::kF16).of(graph.inputs()[0]), 0);
  ::setenv("KILN_CUDA_PAD_INPUTS", "yes", 1);
  try {
    cuda::find_input_padding(graph, batch_shapes(graph), cuda::Elem::kF16);
    ADD_FAILURE() << "KILN_CUDA_PAD_INPUTS=yes was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("KILN_CUDA_PAD_INPUTS: expected 0 or 1, got 'yes'"), std::string::npos)
        << e.what();
  }
  ::unsetenv("KILN_CUDA_PAD_INPUTS");
}

TEST(CudaInputPaddingTest, PaddedChannelsGetZeroWeights) {
  // [O=1, I=2, 1, 1] padded to 4 channels.
  const Tensor krsc = cuda::to_krsc(Tensor::from_f32({1, 2, 1, 1}, std::vector<float>{3, 5}), 4);
  EXPECT_EQ(krsc.shape(), (Shape{1, 1, 1, 4}));
  EXPECT_EQ(std::vector<float>(krsc.f32().begin(), krsc.f32().end()), (std::vector<float>{3, 5, 0, 0}));
}
#endif

// fp16 both sides, as in cuda_runtime_fusion_test: two convolutions, each output one fp16 rounding step
// apart at most, well under 2e-3 relative L2. The padded channels add exact zeros, so padding on and off
// must agree as closely with the reference.
TEST(CudaInputPaddingTest, APaddedStemMatchesTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  const Graph graph = stem(Precision::kF16);
  const Tensor x = testing::random_tensor({2, 3, 32, 32}, 5);
  const Tensor ref = testing::run_on("cpu-reference", graph, {x}).at(0);
  for (const char* pad : {"1", "0"}) {
    SCOPED_TRACE(cat("KILN_CUDA_PAD_INPUTS=", pad));
    ::setenv("KILN_CUDA_PAD_INPUTS", pad, 1);
    CompileOptions options;
    options.batch = 2;
    const auto model = make_backend("cuda")->compile(graph, options);
    ::unsetenv("KILN_CUDA_PAD_INPUTS");
    const bool padded = model->describe().find("padded to 8 channels") != std::string::npos;
    EXPECT_EQ(padded, std::string(pad) == "1") << model->describe();
    EXPECT_LE(testing::relative_difference(model->run({x}).front(), ref), 2e-3);
  }
}

}  // namespace
}  // namespace kiln
