// The host side of the CUDA backend, checked without a GPU: which nodes it compiles (the operator
// table), the plan's tactic records and keys, the activation arena and the constants prepared for the
// kernels.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#if KILN_HAVE_CUDA
#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/kernels/host_constants.h"
#include "backends/cuda/program/arena.h"
#include "backends/cuda/program/op_table.h"
#include "backends/cuda/tactics/stored_tactic.h"
#include "core/error.h"
#include "graph/shape_inference.h"
#include "onednn_graph_util.h"
#include "testing/resnest_like_graph.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA
using testing::conv_attrs;
using testing::SmallGraph;

// A ResNeSt of one block per stage, a few channels wide.
testing::ResnestLikeOptions tiny_resnest() {
  testing::ResnestLikeOptions o;
  std::tie(o.image, o.stem_width, o.base_width, o.classes) = std::make_tuple(32, 8, 16, 10);
  o.depths = {1, 1, 1, 1};
  return o;
}

TEST(CudaOpTableTest, EveryNodeOfAResnestCompiles) {
  const Graph graph = testing::resnest_like_graph(tiny_resnest());
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    EXPECT_EQ(cuda::unsupported_reason(graph, node), "") << node.name;
  }
}

TEST(CudaOpTableTest, AnOperatorWithoutAnEntryHasNoKernel) {
  for (int op = 0; op < kOpKindCount; ++op) {
    const auto kind = static_cast<OpKind>(op);
    if (cuda::find_cuda_op(kind) != nullptr) continue;
    Node node;
    node.op = kind;
    node.name = "layer";
    EXPECT_EQ(cuda::unsupported_reason(Graph(), node), cat(op_kind_name(kind), " has no CUDA kernel yet"));
  }
  EXPECT_NE(cuda::find_cuda_op(OpKind::kConv2d), nullptr);
}

TEST(CudaOpTableTest, ChannelScalesTakeAComputedGatePerImage) {
  Graph g;
  const ValueId x = g.add_input("x", {2, 4, 8, 8});
  const ValueId gate = g.add_input("gate", {2, 4, 1, 1});
  const ValueId y = g.add_node(OpKind::kChannelScale, "se.scale", {x, gate});
  const ValueId fixed = g.add_constant("fixed", Tensor(DType::kF32, {2, 4, 1, 1}));
  const ValueId z = g.add_node(OpKind::kChannelScale, "fixed.scale", {x, fixed});
  g.mark_output(y);
  g.mark_output(z);
  EXPECT_NE(cuda::find_cuda_op(OpKind::kChannelScale), nullptr);
  EXPECT_EQ(cuda::unsupported_reason(g, g.node(g.value(y).producer)), "");
  EXPECT_EQ(cuda::unsupported_reason(g, g.node(g.value(z).producer)), "channel scale of a constant");
}

TEST(CudaOpTableTest, RanksTheKernelsCannotTakeAreRefused) {
  SmallGraph m;
  const ValueId x = m.input("x", {4, 2, 2});
  const ValueId flat = m.node(OpKind::kFlatten, {x});
  const ValueId sequence = m.input("sequence", {4, 5});
  const ValueId relu = m.node(OpKind::kActivation, {sequence}, ActivationAttrs{Activation::kRelu});
  m.output(flat);
  m.output(relu);
  // A flatten of several pixels would need a reorder in NHWC; the row kernels take [N, C] or NHWC only.
  EXPECT_NE(cuda::unsupported_reason(m.graph, m.producer(flat)), "");
  EXPECT_EQ(cuda::unsupported_reason(m.graph, m.producer(relu)),
            "expects [N, C] or [N, C, H, W] tensors, got rank 3");
  SmallGraph ok;
  const ValueId p = ok.input("p", {4, 1, 1});
  const ValueId pflat = ok.node(OpKind::kFlatten, {p});
  ok.output(pflat);
  EXPECT_EQ(cuda::unsupported_reason(ok.graph, ok.producer(pflat)), "");
}

// Codes feed convolutions of their grid, and adds as their residual (a quantized plan's residual stream
// in codes): E4M3 and int8 alike.
TEST(CudaOpTableTest, CodesOnlyFeedQuantizedConvolutionsAndAdds) {
  for (const bool int8 : {false, true}) {
    SCOPED_TRACE(int8 ? "int8" : "E4M3");
    SmallGraph m;
    const ValueId x = m.input("x", {1, 16, 4, 4});
    const ValueId q = m.node(OpKind::kQuantize, {x}, QuantizeAttrs{0.1f, int8});
    const ValueId relu = m.node(OpKind::kActivation, {q}, ActivationAttrs{Activation::kRelu});
    m.output(relu);
    EXPECT_NE(cuda::unsupported_reason(m.graph, m.producer(q))
                  .find(int8 ? "which is neither an int8 convolution nor an add"
                             : "which is neither an FP8 convolution nor an add"),
              std::string::npos);
    SmallGraph a;
    const ValueId y = a.input("y", {1, 16, 4, 4});
    const ValueId qy = a.node(OpKind::kQuantize, {y}, QuantizeAttrs{0.1f, int8});
    a.output(a.node(OpKind::kAdd, {qy, y}, AddAttrs{}));
    EXPECT_EQ(cuda::unsupported_reason(a.graph, a.producer(qy)), "");
  }
}

TEST(CudaStoredTacticTest, AnEntryReadsBackAsWritten) {
  const cuda::StoredTactic chosen{cuda::kApiGraph, "graph91000:f16:n1c16", {false, 3, 4096, 0.0125, {}}};
  const nlohmann::json entry = cuda::tactic_entry(chosen, "NVIDIA H200");
  // The plan's format: these keys, microseconds.
  EXPECT_EQ(entry, nlohmann::json::parse(R"({"tactic": {"api": "cudnn-graph", "key": "graph91000:f16:n1c16",
      "device": "NVIDIA H200", "fused": false, "algorithm": 3, "workspace": 4096, "us": 12.5}})"));
  const std::map<std::string, nlohmann::json> layer_data{{"layer1.conv", entry}};
  const auto back = cuda::stored_tactic(layer_data, "layer1.conv", "NVIDIA H200");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->api, chosen.api);
  EXPECT_EQ(back->key, chosen.key);
  EXPECT_EQ(back->tactic.fused, false);
  EXPECT_EQ(back->tactic.algorithm, 3);
  EXPECT_EQ(back->tactic.workspace, 4096u);
  EXPECT_DOUBLE_EQ(back->tactic.milliseconds, 0.0125);
  EXPECT_FALSE(cuda::stored_tactic(layer_data, "layer1.conv", "another GPU").has_value());
  EXPECT_FALSE(cuda::stored_tactic(layer_data, "layer2.conv", "NVIDIA H200").has_value());
}

// Every way of running a layer keys its tactics with tactic_key(): the runner and library version, the
// GPU, the precision, the whole geometry, the epilogue and the runner's own variant, so that two layers
// differing in any of them never share a tactic.
TEST(CudaTacticKeyTest, TheKeyNamesEverythingATacticDependsOn) {
  cuda::ConvGeometry g;
  std::tie(g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.out_h, g.out_w) =
      std::make_tuple(2, 64, 56, 56, 128, 3, 3, 28, 28);
  std::tie(g.pad_h, g.pad_w, g.stride_h, g.stride_w) = std::make_tuple(1, 1, 2, 2);
  const cuda::TacticKey key{.runner = cuda::kApiGraph,
                            .version = "91900",
                            .precision = "fp8",
                            .geometry = g,
                            .act = cuda::Act::kRelu,
                            .residual = true,
                            .variant = "rtf:e4m3"};
  EXPECT_EQ(cuda::tactic_key(key, "NVIDIA H200"),
            "cudnn-graph@91900:NVIDIA_H200:fp8:n2c64h56w56k128r3s3p1x1u2x2d1x1g1:act1:res1:rtf:e4m3");
  cuda::TacticKey kiln = key;
  kiln.runner = cuda::kApiKilnHopper;
  kiln.version = "";
  kiln.variant = "";
  kiln.geometry.y_pitch = 256;
  EXPECT_EQ(cuda::tactic_key(kiln, "H100"),
            "kiln-hopper:H100:fp8:n2c64h56w56k128r3s3p1x1u2x2d1x1g1:pitch0/256/0:act1:res1");
  // Each field changes the key.
  const std::string base = cuda::tactic_key(key, "gpu");
  std::vector<cuda::TacticKey> changed(9, key);
  changed[0].runner = cuda::kApiLegacy;
  changed[1].version = "91901";
  changed[2].precision = "f16";
  changed[3].geometry.groups = 2;
  changed[4].geometry.dilation_w = 2;
  changed[5].act = cuda::Act::kSilu;
  changed[6].residual = false;
  changed[7].variant = "e4m3";
  changed[8].geometry.residual_pitch = 512;
  for (const cuda::TacticKey& other : changed) EXPECT_NE(cuda::tactic_key(other, "gpu"), base);
  EXPECT_NE(cuda::tactic_key(key, "another gpu"), base);
  EXPECT_EQ(cuda::key_fields({"", "engines2", "", "e4m3"}), "engines2:e4m3");
}

TEST(CudaStoredTacticTest, AMalformedEntryNamesTheLayer) {
  nlohmann::json entry = cuda::tactic_entry({cuda::kApiLegacy, "k", {}}, "gpu");
  entry["tactic"].erase("algorithm");
  try {
    cuda::stored_tactic({{"stem.conv", entry}}, "stem.conv", "gpu");
    FAIL() << "a malformed tactic was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("plan: layer 'stem.conv': malformed tactic"), std::string::npos)
        << e.what();
  }
}

TEST(CudaArenaTest, LiveValuesNeverShareBytes) {
  const Graph graph = testing::resnest_like_graph(tiny_resnest());
  const std::vector<NodeId> order = graph.topological_order();
  const cuda::Fusions fusions = cuda::find_fusions(graph, order);
  const cuda::Schedule schedule = cuda::schedule_steps(graph, order, fusions);
  const std::vector<Shape> shapes = infer_shapes(graph, {{2, 3, 32, 32}});
  const cuda::ArenaAssignment a = cuda::assign_arena(graph, order, schedule, shapes, 2);
  ASSERT_EQ(a.layout.offsets.size(), a.buffers.size());
  EXPECT_EQ(a.buffers.front().first, 0);  // the input, converted by step 0
  EXPECT_EQ(a.buffers.front().bytes, 2u * 3 * 32 * 32 * 2);
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    EXPECT_EQ(a.layout.offsets[i] % cuda::kArenaAlignment, 0u);
    for (std::size_t j = i + 1; j < a.buffers.size(); ++j) {
      const auto& p = a.buffers[i];
      const auto& q = a.buffers[j];
      if (p.first > q.last || q.first > p.last) continue;
      const bool apart = a.layout.offsets[i] + p.bytes <= a.layout.offsets[j] ||
                         a.layout.offsets[j] + q.bytes <= a.layout.offsets[i];
      EXPECT_TRUE(apart) << i << ", " << j;
    }
  }
  // Every graph output lives until the output step.
  for (const ValueId v : graph.outputs()) {
    EXPECT_EQ(a.buffers[static_cast<std::size_t>(a.buffer_of[static_cast<std::size_t>(v)])].last,
              schedule.output_step);
  }
}

TEST(CudaArenaTest, EveryInputGetsABufferAtStepZero) {
  SmallGraph m;
  const ValueId x = m.input("x", {8, 4, 4});
  const ValueId residual = m.input("residual", {8, 4, 4});
  const ValueId c = m.conv(x, 8, conv_attrs(3, 1, 1));
  m.output(m.node(OpKind::kAdd, {c, residual}, AddAttrs{Activation::kRelu}));
  const std::vector<NodeId> order = m.graph.topological_order();
  const cuda::Fusions fusions = cuda::find_fusions(m.graph, order);
  const cuda::Schedule schedule = cuda::schedule_steps(m.graph, order, fusions);
  EXPECT_EQ(schedule.executed.size(), 1u);  // the convolution runs with the add as its residual epilogue
  const cuda::ArenaAssignment a =
      cuda::assign_arena(m.graph, order, schedule, infer_shapes(m.graph, {{1, 8, 4, 4}, {1, 8, 4, 4}}), 4);
  ASSERT_EQ(a.buffers.size(), 3u);
  for (const ValueId input : {x, residual}) {
    const int b = a.buffer_of[static_cast<std::size_t>(input)];
    ASSERT_GE(b, 0);
    EXPECT_EQ(a.buffers[static_cast<std::size_t>(b)].first, 0);
    EXPECT_EQ(a.buffers[static_cast<std::size_t>(b)].last, 1);
  }
}

TEST(CudaHostConstantsTest, FiltersGoKrscAndGroupsGoBlockDiagonal) {
  // [O=2, I=2, 1, 2]: value = 1000 o + 100 i + x.
  std::vector<float> w;
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 2; ++i)
      for (int x = 0; x < 2; ++x) w.push_back(static_cast<float>(1000 * o + 100 * i + x));
  const Tensor krsc = cuda::to_krsc(Tensor::from_f32({2, 2, 1, 2}, w));
  EXPECT_EQ(krsc.shape(), (Shape{2, 1, 2, 2}));
  EXPECT_EQ(std::vector<float>(krsc.f32().begin(), krsc.f32().end()),
            (std::vector<float>{0, 100, 1, 101, 1000, 1100, 1001, 1101}));
  // Two groups of one input channel each: output 0 reads channel 0, output 1 channel 1.
  const Tensor grouped = Tensor::from_f32({2, 1, 1, 1}, std::vector<float>{5, 7});
  const Tensor dense = cuda::block_diagonal(grouped, 2, 2);
  EXPECT_EQ(std::vector<float>(dense.f32().begin(), dense.f32().end()), (std::vector<float>{5, 0, 0, 7}));
  // Two output channels of two taps of two channels each, each tap padded to four.
  const Tensor taps = Tensor::from_f32({2, 1, 2, 2}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor padded = cuda::pad_taps(taps, 4);
  EXPECT_EQ(padded.shape(), (Shape{2, 1, 2, 4}));
  EXPECT_EQ(std::vector<float>(padded.f32().begin(), padded.f32().end()),
            (std::vector<float>{1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 7, 8, 0, 0}));
}

TEST(CudaHostConstantsTest, BatchNormFoldsToScaleAndShift) {
  const auto vec = [](std::vector<float> v) {
    return Tensor::from_f32({static_cast<std::int64_t>(v.size())}, v);
  };
  const cuda::ScaleShift f =
      cuda::fold_batch_norm(vec({2, 1}), vec({1, 0}), vec({3, -1}), vec({4, 0.25f}), 0);
  EXPECT_FLOAT_EQ(f.scale.f32()[0], 1.0f);   // 2 / sqrt(4)
  EXPECT_FLOAT_EQ(f.shift.f32()[0], -2.0f);  // 1 - 3 * 1
  EXPECT_FLOAT_EQ(f.scale.f32()[1], 2.0f);   // 1 / sqrt(0.25)
  EXPECT_FLOAT_EQ(f.shift.f32()[1], 2.0f);   // 0 + 1 * 2
  const Tensor s = cuda::fp8_output_scales(0.5f, vec({4}), 3);
  EXPECT_EQ(std::vector<float>(s.f32().begin(), s.f32().end()), (std::vector<float>{2, 2, 2}));
}
#else
TEST(CudaProgramTest, Skipped) { GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)"; }
#endif

}  // namespace
}  // namespace kiln
