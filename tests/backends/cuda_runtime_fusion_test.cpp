// Fused SiLU and sigmoid epilogues on cuDNN's runtime-compiled engines (cudnn_graph_conv.h), on a GPU: fp16
// convolutions with those epilogues, built at opt level 3,
// against the reference backend with runtime fusion on and off; that the H200-class GPUs this backend
// targets pick them for YOLOv10-like layers; and a plan's runtime-compiled tactic restored from its
// serialized engine giving the built engine's bits. The GPU tests skip without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"
#include "cuda_test_util.h"
#include "graph/precision_assignment.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::random_tensor;
using testing::SmallGraph;

// One fp16 convolution with an activation, as the Engine hands an fp16 plan's graph over.
struct ConvCase {
  std::int64_t c, k, size, kernel, stride, batch;
  Activation act;
  std::string name() const {
    return cat(c, " -> ", k, " ", kernel, "x", kernel, "/", stride, " at ", size, "x", size, ", batch ",
               batch, act == Activation::kSilu ? " silu" : " sigmoid");
  }
};

Graph conv_graph(const ConvCase& z) {
  SmallGraph g;
  g.output(g.conv(g.input("x", {z.c, z.size, z.size}), z.k,
                  conv_attrs(z.kernel, z.stride, z.kernel / 2, 1, z.act)));
  assign_precision(g.graph, Precision::kF16);
  widen_constants_to_f32(g.graph);
  return g.graph;
}

// YOLOv10n's C2f 1x1 and 3x3 convolutions and its strided 3x3, an EfficientNet expansion, a sigmoid gate
// over pixels.
const ConvCase kCases[] = {{32, 32, 80, 1, 1, 8, Activation::kSilu},
                           {16, 16, 80, 3, 1, 8, Activation::kSilu},
                           {32, 64, 80, 3, 2, 4, Activation::kSilu},
                           {24, 144, 56, 1, 1, 2, Activation::kSilu},
                           {64, 64, 28, 1, 1, 2, Activation::kSigmoid}};

// `runtime_fusion`: the cuda backend's runtime-fusion option (cuda_options.h).
CompileOptions level3(std::int64_t batch, bool runtime_fusion = true) {
  CompileOptions options;
  options.batch = batch;
  options.opt_level = 3;
  options.backend_options = {{"runtime-fusion", runtime_fusion ? "on" : "off"}};
  return options;
}

// fp16 on both sides; the fused epilogue applies the activation to the f32 accumulator, the reference to
// the fp16-rounded convolution, so an output straddling a rounding boundary lands one fp16 step (2^-11
// relative) apart: well under 2e-3 relative L2.
TEST(CudaRuntimeFusionTest, MatchesTheReferenceWithRuntimeFusionOnAndOff) {
  KILN_SKIP_WITHOUT_GPU();
  bool any_runtime_compiled = false;
  for (const bool on : {true, false}) {
    for (const ConvCase& z : kCases) {
      SCOPED_TRACE(cat(z.name(), on ? ", runtime fusion on" : ", runtime fusion off"));
      const Graph graph = conv_graph(z);
      const auto model = make_backend("cuda")->compile(graph, level3(z.batch, on));
      const bool runtime_compiled = model->describe().find("runtime-compiled") != std::string::npos;
      if (!on) {
        EXPECT_FALSE(runtime_compiled) << model->describe();
      }
      any_runtime_compiled |= runtime_compiled;
      const Tensor x = random_tensor({z.batch, z.c, z.size, z.size}, 51);
      const Tensor ref = testing::run_on("cpu-reference", graph, {x}).at(0);
      EXPECT_LE(testing::relative_difference(model->run({x}).front(), ref), 2e-3);
    }
  }
  // On the H200 the fused runtime-compiled engine wins these layers (families' profiles); a GPU or cuDNN
  // where none wins makes this fail so that the loss is seen.
  EXPECT_TRUE(any_runtime_compiled);
}

TEST(CudaRuntimeFusionTest, APlansRuntimeCompiledTacticRestoresTheSameBits) {
  KILN_SKIP_WITHOUT_GPU();
  const ConvCase z = kCases[0];
  const Graph graph = conv_graph(z);
  const auto built = make_backend("cuda")->compile(graph, level3(z.batch));
  if (built->describe().find("runtime-compiled") == std::string::npos)
    GTEST_SKIP() << "no runtime-compiled engine won this layer here: " << built->describe();
  CompileOptions options = level3(z.batch);
  options.layer_data = built->layer_data();
  const auto restored = make_backend("cuda")->compile(graph, options);
  EXPECT_NE(restored->describe().find("runtime-compiled"), std::string::npos) << restored->describe();
  const Tensor x = random_tensor({z.batch, z.c, z.size, z.size}, 52);
  const Tensor a = built->run({x}).front(), b = restored->run({x}).front();
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.bytes(), b.bytes(), a.nbytes()), 0);
}

}  // namespace
}  // namespace kiln
