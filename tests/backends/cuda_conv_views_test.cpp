// Channel views (channel_views.h): which values of a YOLOv10 C2f block become views and where they live
// (host); on a GPU, an fp16 convolution reading channels [16, 32) of a 48-channel NHWC tensor, adding
// them as its residual, and writing channels [32, 48) of another (ConvGeometry's pitches, cudnn_graph_conv.h)
// against the same convolution on packed copies, and whole C2f blocks built with views against the
// reference backend. The GPU tests skip without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda_test_util.h"
#include "graph/precision_assignment.h"
#include "graph/shape_inference.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "testing/random_tensor.h"

#if KILN_HAVE_CUDA
#include <cudnn.h>

#include "backends/cuda/convolution/cudnn_graph_conv.h"
#include "backends/cuda/program/arena.h"
#include "backends/cuda/program/channel_views.h"
#include "cuda_kernel_test_util.h"
#endif

namespace kiln {
namespace {

using testing::conv_attrs;
using testing::SmallGraph;

// A C2f block as merge_concat_slices leaves it: cv1 (1x1) -> [cv1, bottleneck(second half)] -> cv2, the
// bottleneck's two 3x3 convolutions added to the half they read (shortcut) or not; SiLU throughout.
struct C2f {
  SmallGraph g;
  ValueId cv1, half, sum, joined;
};
[[maybe_unused]] C2f c2f_block(std::int64_t c, bool shortcut) {
  C2f b;
  const auto silu = [](std::int64_t k) { return conv_attrs(k, 1, k / 2, 1, Activation::kSilu); };
  b.cv1 = b.g.conv(b.g.input("x", {c, 20, 20}), 2 * c, silu(1));
  b.half = b.g.node(OpKind::kChannelSlice, {b.cv1}, SliceAttrs{.groups = 1, .begin = c, .end = 2 * c});
  const ValueId m = b.g.conv(b.g.conv(b.half, c, silu(3)), c, silu(3));
  b.sum = shortcut ? b.g.node(OpKind::kAdd, {b.half, m}, AddAttrs{}) : m;
  b.joined = b.g.node(OpKind::kConcat, {b.cv1, b.sum}, ConcatAttrs{1});
  b.g.output(b.g.conv(b.joined, c, silu(1)));
  assign_precision(b.g.graph, Precision::kF16);
  widen_constants_to_f32(b.g.graph);
  return b;
}

// YOLOv10's neck joins: a low-resolution convolution upsampled x2 and concatenated with a convolution of
// the input, then that join's downsampled convolution concatenated with the low-resolution one (which the
// upsample then reads as a view).
struct Neck {
  SmallGraph g;
  ValueId low, up, side, joined, down, joined2;
};
[[maybe_unused]] Neck neck_block() {
  Neck b;
  const auto silu = [](std::int64_t k, std::int64_t stride) {
    return conv_attrs(k, stride, k / 2, 1, Activation::kSilu);
  };
  const ValueId x = b.g.input("x", {16, 20, 20});
  b.low = b.g.conv(x, 32, silu(3, 2));
  b.up = b.g.node(OpKind::kUpsample, {b.low}, UpsampleAttrs{2});
  b.side = b.g.conv(x, 16, silu(1, 1));
  b.joined = b.g.node(OpKind::kConcat, {b.up, b.side}, ConcatAttrs{1});
  b.down = b.g.conv(b.g.conv(b.joined, 16, silu(3, 1)), 16, silu(3, 2));
  b.joined2 = b.g.node(OpKind::kConcat, {b.down, b.low}, ConcatAttrs{1});
  b.g.output(b.g.conv(b.joined2, 16, silu(1, 1)));
  assign_precision(b.g.graph, Precision::kF16);
  widen_constants_to_f32(b.g.graph);
  return b;
}

// SPPF: a 1x1 convolution, three 5x5 stride-1 max pools in a chain, all four concatenated -> 1x1.
struct Sppf {
  SmallGraph g;
  ValueId cv1, pools[3], joined;
};
[[maybe_unused]] Sppf sppf_block() {
  Sppf b;
  b.cv1 = b.g.conv(b.g.input("x", {16, 20, 20}), 16, conv_attrs(1, 1, 0, 1, Activation::kSilu));
  ValueId last = b.cv1;
  for (ValueId& pool : b.pools)
    last = pool = b.g.node(OpKind::kMaxPool2d, {last}, testing::pool_attrs(5, 1, 2));
  b.joined = b.g.node(OpKind::kConcat, {b.cv1, b.pools[0], b.pools[1], b.pools[2]}, ConcatAttrs{1});
  b.g.output(b.g.conv(b.joined, 16, conv_attrs(1, 1, 0, 1, Activation::kSilu)));
  assign_precision(b.g.graph, Precision::kF16);
  widen_constants_to_f32(b.g.graph);
  return b;
}

#if KILN_HAVE_CUDA
cuda::ChannelViews views_of(const Graph& graph, bool runtime_fused_convs) {
  const std::vector<NodeId> order = graph.topological_order();
  const cuda::Fusions f = cuda::find_fusions(graph, order);
  const std::int64_t c = graph.value(graph.inputs()[0]).shape[1];
  return cuda::find_channel_views(graph, order, f, infer_shapes(graph, {{2, c, 20, 20}}),
                                  runtime_fused_convs);
}

TEST(CudaChannelViewsTest, AC2fBlockConcatenatesAndSlicesWithoutCopies) {
  for (const bool shortcut : {true, false}) {
    SCOPED_TRACE(shortcut ? "shortcut" : "no shortcut");
    const C2f b = c2f_block(16, shortcut);
    const cuda::ChannelViews views = views_of(b.g.graph, true);
    EXPECT_EQ(views.count(), 3u);
    const auto expect_view = [&](ValueId v, std::int64_t offset) {
      const cuda::ChannelView& view = views.of[static_cast<std::size_t>(v)];
      EXPECT_EQ(view.root, b.joined) << b.g.graph.value(v).name;
      EXPECT_EQ(view.offset, offset) << b.g.graph.value(v).name;
      EXPECT_EQ(view.pitch, 48) << b.g.graph.value(v).name;
    };
    expect_view(b.cv1, 0);
    expect_view(b.half, 16);  // a slice of a view: resolved to the concat
    expect_view(b.sum, 32);
    EXPECT_FALSE(views.is_view(b.joined));
  }
}

TEST(CudaChannelViewsTest, NoViewsWithoutRuntimeFusedConvolutionsOrWhereAReaderCopies) {
  EXPECT_EQ(views_of(c2f_block(16, true).g.graph, false).count(), 0u);
  // A max pool reads cv1's output: cv1 keeps its buffer; the slice is still a view of it.
  C2f b = c2f_block(16, false);
  b.g.output(b.g.node(OpKind::kMaxPool2d, {b.cv1}, testing::pool_attrs(3, 1, 1)));
  assign_precision(b.g.graph, Precision::kF16);
  const cuda::ChannelViews views = views_of(b.g.graph, true);
  EXPECT_FALSE(views.is_view(b.cv1));
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.half)].root, b.cv1);
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.half)].pitch, 32);
  EXPECT_TRUE(views.is_view(b.sum));
  // Starts off the 8-channel grid are not views.
  EXPECT_EQ(views_of(c2f_block(12, true).g.graph, true).count(), 0u);
}

TEST(CudaChannelViewsTest, UpsamplesReadAndWriteViewsInNeckJoins) {
  const Neck b = neck_block();
  const cuda::ChannelViews views = views_of(b.g.graph, true);
  EXPECT_EQ(views.count(), 4u);
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.up)].root, b.joined);
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.side)].offset, 32);
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.side)].pitch, 48);
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.down)].root, b.joined2);
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.low)].root, b.joined2);  // the upsample reads it there
  EXPECT_EQ(views.of[static_cast<std::size_t>(b.low)].offset, 16);
}

TEST(CudaChannelViewsTest, SppfsPoolsRunAsOneCascadeWritingTheirChannelsOfTheJoin) {
  const Sppf b = sppf_block();
  const Graph& graph = b.g.graph;
  const std::vector<NodeId> order = graph.topological_order();
  const cuda::Fusions f = cuda::find_fusions(graph, order);
  const NodeId first = graph.value(b.pools[0]).producer;
  const auto& chain = f.pools_into_pool[static_cast<std::size_t>(first)];
  EXPECT_EQ(chain[0], graph.value(b.pools[1]).producer);
  EXPECT_EQ(chain[1], graph.value(b.pools[2]).producer);
  const cuda::Schedule schedule = cuda::schedule_steps(graph, order, f);
  EXPECT_EQ(schedule.written_inside.size(), 2u);
  const cuda::ChannelViews views = views_of(graph, true);
  EXPECT_EQ(views.count(), 4u);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(views.of[static_cast<std::size_t>(b.pools[j])].offset, 16 * (j + 1));
  // Without views the later pools' outputs keep buffers, written at the first pool's step.
  const std::vector<Shape> shapes = infer_shapes(graph, {{2, 16, 20, 20}});
  const cuda::ArenaAssignment a = cuda::assign_arena(graph, order, schedule, shapes, 2);
  const int b3 = a.buffer_of[static_cast<std::size_t>(b.pools[2])];
  ASSERT_GE(b3, 0);
  EXPECT_EQ(a.buffers[static_cast<std::size_t>(b3)].first,
            schedule.position[static_cast<std::size_t>(first)]);
}

TEST(CudaChannelViewsTest, ARootBufferLivesFromItsFirstViewsWriter) {
  const C2f b = c2f_block(16, true);
  const Graph& graph = b.g.graph;
  const std::vector<NodeId> order = graph.topological_order();
  const cuda::Fusions f = cuda::find_fusions(graph, order);
  const cuda::Schedule schedule = cuda::schedule_steps(graph, order, f);
  const std::vector<Shape> shapes = infer_shapes(graph, {{2, 16, 20, 20}});
  const cuda::ChannelViews views = cuda::find_channel_views(graph, order, f, shapes, true);
  const cuda::ArenaAssignment a = cuda::assign_arena(graph, order, schedule, shapes, 2, views);
  const int root = a.buffer_of[static_cast<std::size_t>(b.joined)];
  for (const ValueId v : {b.cv1, b.half, b.sum}) EXPECT_EQ(a.buffer_of[static_cast<std::size_t>(v)], root);
  EXPECT_EQ(a.element_offset[static_cast<std::size_t>(b.sum)], 32);
  const NodeId cv1 = graph.value(b.cv1).producer;
  EXPECT_EQ(a.buffers[static_cast<std::size_t>(root)].first,
            schedule.position[static_cast<std::size_t>(cv1)]);
}

// Whole blocks (C2f, neck joins, SPPF) on the GPU, views on and off, against the reference: fp16 both sides,
// as in cuda_runtime_fusion_test (each output one fp16 step apart at most, well under 2e-3 relative L2).
TEST(CudaChannelViewsTest, BlocksWithViewsMatchTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  for (const int block : {0, 1, 2, 3}) {
    const Graph graph = block < 2    ? c2f_block(16, block == 0).g.graph
                        : block == 2 ? neck_block().g.graph
                                     : sppf_block().g.graph;
    const Tensor x = testing::random_tensor({4, 16, 20, 20}, 71);
    const Tensor ref = testing::run_on("cpu-reference", graph, {x}).at(0);
    for (const std::string views : {"on", "off"}) {
      SCOPED_TRACE(cat(block == 0   ? "C2f, shortcut"
                       : block == 1 ? "C2f"
                                    : "neck",
                       ", channel-views=", views));
      CompileOptions options;
      options.batch = 4;
      options.opt_level = 3;
      options.backend_options = {{"channel-views", views}};
      const auto model = make_backend("cuda")->compile(graph, options);
      const bool in_place = model->describe().find("written in place") != std::string::npos ||
                            model->describe().find("concat") == std::string::npos;
      EXPECT_EQ(in_place, views == "on") << model->describe();
      EXPECT_LE(testing::relative_difference(model->run({x}).front(), ref), 2e-3);
    }
  }
}

constexpr int kPitch = 48, kBegin = 16, kWidth = 16, kYBegin = 32;

// [n, h, w, width] of channels [begin, begin + width) of a [n, h, w, pitch] tensor.
Tensor channels(const Tensor& wide, int begin, int width) {
  const std::int64_t pixels = wide.numel() / kPitch;
  Tensor out(DType::kF32, {pixels, width});
  for (std::int64_t p = 0; p < pixels; ++p)
    for (int c = 0; c < width; ++c)
      out.mutable_f32()[static_cast<std::size_t>(p * width + c)] =
          wide.f32()[static_cast<std::size_t>(p * kPitch + begin + c)];
  return out;
}

double relative(const Tensor& a, const Tensor& b) {
  double diff = 0, norm = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const double d = a.f32()[static_cast<std::size_t>(i)] - b.f32()[static_cast<std::size_t>(i)];
    diff += d * d;
    norm += static_cast<double>(b.f32()[static_cast<std::size_t>(i)]) * b.f32()[static_cast<std::size_t>(i)];
  }
  return std::sqrt(diff / norm);
}

struct Handle {
  cudnnHandle_t h = nullptr;
  Handle() { cuda::check(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown, "cudnn"); }
  ~Handle() { cudnnDestroy(h); }
};

// Runs `conv` with its first working tactic and reports whether it had one.
bool run_conv(cuda::CudnnGraphConv& conv, const void* x, const void* w, const void* b, void* y,
              void* workspace, std::size_t bytes) {
  cuda::ConvBuffers io;
  io.x = io.residual = x;
  io.weight = w;
  io.bias = b;
  io.y = y;
  cuda::TacticRace<cuda::GraphConvTactic> race(
      false, nullptr);  // the first that runs (no capture on the default stream)
  conv.offer_candidates(race, io, workspace, bytes);
  if (!race.winner()) return false;
  conv.use(*race.winner());
  conv.enqueue(io, workspace, nullptr);
  return cudaDeviceSynchronize() == cudaSuccess;
}

// Which of x (and the residual) and y are views.
struct Views {
  bool x, y;
};

TEST(CudaConvViewsTest, ReadsAndWritesChannelViewsAsPackedTensors) {
  KILN_SKIP_WITHOUT_GPU();
  Handle handle;
  // SiLU as YOLOv10's convolutions (no precompiled engine takes views: a layer without activation finds
  // none).
  {
    const cuda::Act act = cuda::Act::kSilu;
    for (const auto& [batch, v] : {std::pair{1, Views{true, true}}, std::pair{8, Views{true, true}},
                                   std::pair{8, Views{true, false}}, std::pair{8, Views{false, true}}}) {
      SCOPED_TRACE(cat(act == cuda::Act::kSilu ? "silu" : "no activation", ", batch ", batch,
                       v.x ? ", x view" : "", v.y ? ", y view" : ""));
      cuda::ConvGeometry g;
      g.n = batch, g.c = kWidth, g.h = g.w = 40, g.k = kWidth, g.r = g.s = 3, g.out_h = g.out_w = 40;
      g.pad_h = g.pad_w = 1;
      const Tensor x_wide = testing::random_tensor({batch, 40, 40, kPitch}, 61);
      const Tensor weights = testing::random_tensor({g.k, 3, 3, g.c}, 62, -0.2f, 0.2f);
      const Tensor bias = testing::random_tensor({g.k}, 63);
      const Tensor y_wide = testing::random_tensor({batch, 40, 40, kPitch}, 64);
      cuda::DeviceBuffer xw = testing::on_device(x_wide, true), yw = testing::on_device(y_wide, true);
      cuda::DeviceBuffer xp = testing::on_device(channels(x_wide, kBegin, kWidth), true);
      cuda::DeviceBuffer yp(static_cast<std::size_t>(batch) * 40 * 40 * kWidth * 2);
      cuda::DeviceBuffer w = testing::on_device(weights, true), b = testing::on_device(bias, true);
      cuda::DeviceBuffer workspace(std::size_t{64} << 20);
      const auto at = [](cuda::DeviceBuffer& buf, int channel) {
        return static_cast<std::uint16_t*>(buf.data()) + channel;
      };

      cuda::CudnnGraphConv packed(handle.h, cuda::Elem::kF16, g, act, true);
      ASSERT_TRUE(
          run_conv(packed, xp.data(), w.data(), b.data(), yp.data(), workspace.data(), workspace.bytes()));
      g.x_pitch = g.residual_pitch = v.x ? kPitch : 0;
      g.y_pitch = v.y ? kPitch : 0;
      cuda::CudnnGraphConv view(handle.h, cuda::Elem::kF16, g, act, true);
      void* x = v.x ? static_cast<void*>(at(xw, kBegin)) : xp.data();
      cuda::DeviceBuffer y_packed(yp.bytes());
      void* y = v.y ? static_cast<void*>(at(yw, kYBegin)) : y_packed.data();
      ASSERT_TRUE(run_conv(view, x, w.data(), b.data(), y, workspace.data(), workspace.bytes()))
          << "cuDNN offers no engine for NHWC channel views";
      const Tensor want = testing::from_device(yp, DType::kF16, {batch * 40 * 40, kWidth});
      if (!v.y) {
        EXPECT_LE(relative(testing::from_device(y_packed, DType::kF16, {batch * 40 * 40, kWidth}), want),
                  2e-3);
        continue;
      }
      const Tensor got = testing::from_device(yw, DType::kF16, {batch, 40, 40, kPitch});
      // Both run cuDNN's fused fp16 graph; engines may differ in summation order: a few fp16 steps apart.
      EXPECT_LE(relative(channels(got, kYBegin, kWidth), want), 2e-3);
      const Tensor before = testing::held(y_wide, true);
      EXPECT_EQ(relative(channels(got, 0, kYBegin), channels(before, 0, kYBegin)), 0.0)
          << "wrote outside the view";
    }
  }
}
#endif

}  // namespace
}  // namespace kiln
