// Which quantize points the CUDA backend computes in their input's producer (quantize_fusion.h),
// decided on the host: checked without a GPU.
#include <gtest/gtest.h>

#if KILN_HAVE_CUDA
#include <algorithm>

#include "backends/cuda/program/arena.h"
#include "backends/cuda/program/fusion.h"
#include "fp8_graph_util.h"
#include "graph/shape_inference.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA
using testing::conv_attrs;
using testing::fp8_conv;
using testing::pool_attrs;
using testing::quantize;
using testing::radix_attrs;
using testing::SmallGraph;

const ConvAttrs kRelu3x3 = conv_attrs(3, 1, 1, 1, Activation::kRelu);

NodeId producer_of(const SmallGraph& g, ValueId v) { return g.graph.value(v).producer; }

cuda::Fusions fusions_of(const SmallGraph& g, bool fuse_quantize = true) {
  return cuda::find_fusions(g.graph, g.graph.topological_order(), fuse_quantize);
}

bool executed(const SmallGraph& g, const cuda::Fusions& f, NodeId node) {
  const auto s = cuda::schedule_steps(g.graph, g.graph.topological_order(), f);
  return std::find(s.executed.begin(), s.executed.end(), node) != s.executed.end();
}

std::size_t at(NodeId id) { return static_cast<std::size_t>(id); }

// input -> quantize -> FP8 conv (ReLU) -> quantize -> FP8 conv: the second quantize point's codes are
// the first convolution's only output; the first one reads a graph input, which no step produces.
TEST(CudaQuantizeFusionTest, AnFp8ConvolutionWritesTheNextLayersCodes) {
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId q1 = quantize(g, x, 0.02f);
  const ValueId c1 = fp8_conv(g, q1, 32, kRelu3x3);
  const ValueId q2 = quantize(g, c1, 0.05f);
  g.output(fp8_conv(g, q2, 16, conv_attrs(1, 1, 0)));
  const cuda::Fusions f = fusions_of(g);
  const NodeId conv1 = producer_of(g, c1), quantize1 = producer_of(g, q1), quantize2 = producer_of(g, q2);
  EXPECT_EQ(f.codes_writer[at(quantize1)], kNoNode);
  EXPECT_TRUE(executed(g, f, quantize1));
  EXPECT_EQ(f.quantize_into_producer[at(conv1)], quantize2);
  EXPECT_EQ(f.codes_writer[at(quantize2)], conv1);
  EXPECT_FALSE(f.keeps_value[at(conv1)]);  // nobody else reads the fp16 output
  EXPECT_FALSE(executed(g, f, quantize2));

  const cuda::Fusions off = fusions_of(g, false);
  EXPECT_EQ(off.codes_writer[at(quantize2)], kNoNode);
  EXPECT_TRUE(off.keeps_value[at(conv1)]);
  EXPECT_TRUE(executed(g, off, quantize2));
}

// A value read by the quantize point and by someone else (a graph output, a residual add) is written
// twice by its producer: fp16 and codes.
TEST(CudaQuantizeFusionTest, AnotherReaderMakesADualWrite) {
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId pooled = g.node(OpKind::kMaxPool2d, {x}, pool_attrs(3, 1, 1));
  const ValueId q = quantize(g, pooled, 0.02f);
  const ValueId c = fp8_conv(g, q, 16, conv_attrs(1, 1, 0));
  const ValueId sum = g.node(OpKind::kAdd, {c, pooled}, AddAttrs{Activation::kRelu});
  const ValueId q2 = quantize(g, sum, 0.03f);
  const ValueId out = fp8_conv(g, q2, 16, conv_attrs(1, 1, 0));
  g.output(sum);
  g.output(out);
  const cuda::Fusions f = fusions_of(g);
  const NodeId pool = producer_of(g, pooled), add = producer_of(g, sum);
  EXPECT_EQ(f.quantize_into_producer[at(pool)], producer_of(g, q));
  EXPECT_TRUE(f.keeps_value[at(pool)]);  // the add reads it as its residual
  // The convolution runs at the add's step, which writes the sum (a graph output) and its codes.
  EXPECT_EQ(f.conv_into_add[at(add)], producer_of(g, c));
  EXPECT_EQ(f.quantize_into_producer[at(add)], producer_of(g, q2));
  EXPECT_TRUE(f.keeps_value[at(add)]);
}

// Quantize points of one value sharing its scale share the producer's codes; one with another scale
// keeps its own step.
TEST(CudaQuantizeFusionTest, OneScaleIsFusedPerProducer) {
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId relu = g.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu});
  const ValueId same1 = quantize(g, relu, 0.02f);
  const ValueId other = quantize(g, relu, 0.04f);
  const ValueId same2 = quantize(g, relu, 0.02f);
  for (const ValueId q : {same1, other, same2}) g.output(fp8_conv(g, q, 16, conv_attrs(1, 1, 0)));
  const cuda::Fusions f = fusions_of(g);
  const NodeId act = producer_of(g, relu);
  EXPECT_EQ(f.quantize_into_producer[at(act)], producer_of(g, same1));
  EXPECT_EQ(f.codes_writer[at(producer_of(g, same1))], act);
  EXPECT_EQ(f.codes_writer[at(producer_of(g, same2))], act);
  EXPECT_EQ(f.codes_writer[at(producer_of(g, other))], kNoNode);
  EXPECT_TRUE(executed(g, f, producer_of(g, other)));
  EXPECT_TRUE(f.keeps_value[at(act)]);  // the quantize point of the other scale reads it

  // The shared codes are one buffer of one byte per element, written at the activation's step and
  // alive until the last FP8 convolution reading them.
  const auto order = g.graph.topological_order();
  const auto schedule = cuda::schedule_steps(g.graph, order, f);
  const auto shapes = infer_shapes(g.graph, {{2, 16, 8, 8}});
  const cuda::ArenaAssignment a = cuda::assign_arena(g.graph, order, schedule, shapes, 2);
  const int codes = a.buffer_of[at(same1)];
  ASSERT_GE(codes, 0);
  EXPECT_EQ(a.buffer_of[at(same2)], codes);
  EXPECT_NE(a.buffer_of[at(other)], codes);
  const auto& buffer = a.buffers[static_cast<std::size_t>(codes)];
  EXPECT_EQ(buffer.bytes, 2u * 16 * 8 * 8);
  EXPECT_EQ(buffer.first, schedule.position[at(act)]);
  const NodeId last_reader = g.graph.consumers()[at(same2)].front();
  EXPECT_EQ(buffer.last, schedule.position[at(last_reader)]);
}

// Producers without a codes epilogue keep the quantize point's step: a batch norm, a channel slice, a
// concat; and so does a graph input.
TEST(CudaQuantizeFusionTest, ProducersWithoutACodesEpilogueKeepTheStep) {
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId bn = g.node(OpKind::kBatchNorm,
                            {x, g.constant("g", {16}, 0.5f, 1.0f), g.constant("b", {16}),
                             g.constant("m", {16}), g.constant("v", {16}, 0.5f, 1.0f)},
                            BatchNormAttrs{1e-5f});
  const ValueId joined = g.node(OpKind::kConcat, {x, bn}, ConcatAttrs{1});
  const ValueId slice = g.node(OpKind::kChannelSlice, {joined}, SliceAttrs{1, 8, 24});
  for (const ValueId v : {x, bn, joined, slice}) {
    const ValueId q = quantize(g, v, 0.02f);
    g.output(fp8_conv(g, q, 16, conv_attrs(1, 1, 0)));
    const cuda::Fusions f = fusions_of(g);
    EXPECT_EQ(f.codes_writer[at(producer_of(g, q))], kNoNode) << g.graph.value(v).name;
    EXPECT_TRUE(executed(g, f, producer_of(g, q)));
  }
}

// ResNeSt's producers of FP8 inputs: an fp16 convolution, the average pools (downsampling, avd), the
// split attention's weighted sum, and its global pool of the radix sum (the gate's fc1 in FP8).
TEST(CudaQuantizeFusionTest, KilnsOwnKernelsWriteCodes) {
  SmallGraph g;
  const ValueId x = g.input("x", {32, 8, 8});
  const ValueId logits = g.input("logits", {32, 1, 1});
  const ValueId avg = g.node(OpKind::kAvgPool2d, {x}, pool_attrs(2, 2, 0));
  const ValueId sum = g.node(OpKind::kRadixWeightedSum, {x, logits}, radix_attrs(2));
  const ValueId conv = g.conv(x, 16, conv_attrs(3, 1, 1, 1, Activation::kRelu));
  const ValueId radix_sum = g.node(OpKind::kRadixSum, {x}, radix_attrs(2));
  const ValueId gap = g.node(OpKind::kGlobalAvgPool, {radix_sum});
  for (const ValueId v : {avg, sum, conv, gap}) {
    const ValueId q = quantize(g, v, 0.02f);
    g.output(fp8_conv(g, q, 16, conv_attrs(1, 1, 0)));
  }
  const cuda::Fusions f = fusions_of(g);
  EXPECT_EQ(f.radix_sum_into_pool[at(producer_of(g, gap))], producer_of(g, radix_sum));
  for (const ValueId v : {avg, sum, conv, gap}) {
    const NodeId producer = producer_of(g, v);
    EXPECT_NE(f.quantize_into_producer[at(producer)], kNoNode) << g.graph.node(producer).name;
    EXPECT_FALSE(f.keeps_value[at(producer)]) << g.graph.node(producer).name;
  }
}

// int8 codes are written where E4M3 ones are: an fp16 or int8 convolution, alone or at its residual
// add's step, and a pool write their int8 readers' codes, and no int8 quantize point keeps a step.
TEST(CudaQuantizeFusionTest, ProducersWriteInt8Codes) {
  constexpr QuantFormat kInt8 = QuantFormat::kInt8;
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId stem = g.conv(x, 32, kRelu3x3);  // fp16
  const ValueId q1 = quantize(g, stem, 0.02f, kInt8);
  const ValueId c1 = fp8_conv(g, q1, 32, kRelu3x3, true, 31, kInt8);
  const ValueId q2 = quantize(g, c1, 0.03f, kInt8);
  const ValueId c2 = fp8_conv(g, q2, 32, conv_attrs(1, 1, 0), true, 32, kInt8);
  const ValueId sum = g.node(OpKind::kAdd, {c2, stem}, AddAttrs{Activation::kRelu});
  const ValueId q3 = quantize(g, sum, 0.04f, kInt8);
  const ValueId pooled =
      g.node(OpKind::kMaxPool2d, {fp8_conv(g, q3, 32, kRelu3x3, true, 33, kInt8)}, pool_attrs(3, 1, 1));
  const ValueId q4 = quantize(g, pooled, 0.05f, kInt8);
  g.output(fp8_conv(g, q4, 16, conv_attrs(1, 1, 0), true, 34, kInt8));
  const cuda::Fusions f = fusions_of(g);
  EXPECT_EQ(f.codes_writer[at(producer_of(g, q1))], producer_of(g, stem));
  EXPECT_TRUE(f.keeps_value[at(producer_of(g, stem))]);  // the add reads it as its residual
  EXPECT_EQ(f.codes_writer[at(producer_of(g, q2))], producer_of(g, c1));
  EXPECT_FALSE(f.keeps_value[at(producer_of(g, c1))]);
  const NodeId add = producer_of(g, sum);
  EXPECT_EQ(f.conv_into_add[at(add)], producer_of(g, c2));
  EXPECT_EQ(f.codes_writer[at(producer_of(g, q3))], add);
  EXPECT_EQ(f.codes_writer[at(producer_of(g, q4))], producer_of(g, pooled));
  for (const ValueId q : {q1, q2, q3, q4}) EXPECT_FALSE(executed(g, f, producer_of(g, q)));
}

// An add computed alone (no convolution at its step) and an activation write int8 codes as they write
// E4M3 ones; a value's E4M3 and int8 codes of one scale are two sets: the second keeps its step.
TEST(CudaQuantizeFusionTest, ElementwiseStepsWriteOneSetOfCodesEither) {
  SmallGraph g;
  const ValueId x = g.input("x", {16, 8, 8});
  const ValueId y = g.input("y", {16, 8, 8});
  const ValueId sum = g.node(OpKind::kAdd, {x, y}, AddAttrs{Activation::kRelu});
  const ValueId relu = g.node(OpKind::kActivation, {x}, ActivationAttrs{Activation::kRelu});
  const ValueId int8_of_sum = quantize(g, sum, 0.02f, QuantFormat::kInt8);
  const ValueId int8_of_relu = quantize(g, relu, 0.02f, QuantFormat::kInt8);
  const ValueId e4m3_of_relu = quantize(g, relu, 0.02f);
  g.output(fp8_conv(g, int8_of_sum, 16, conv_attrs(1, 1, 0), true, 31, QuantFormat::kInt8));
  g.output(fp8_conv(g, int8_of_relu, 16, conv_attrs(1, 1, 0), true, 32, QuantFormat::kInt8));
  g.output(fp8_conv(g, e4m3_of_relu, 16, conv_attrs(1, 1, 0), true, 33));
  const cuda::Fusions f = fusions_of(g);
  EXPECT_EQ(f.codes_writer[at(producer_of(g, int8_of_sum))], producer_of(g, sum));
  EXPECT_EQ(f.codes_writer[at(producer_of(g, int8_of_relu))], producer_of(g, relu));
  EXPECT_EQ(f.codes_writer[at(producer_of(g, e4m3_of_relu))], kNoNode);
  EXPECT_TRUE(executed(g, f, producer_of(g, e4m3_of_relu)));
}
#endif

}  // namespace
}  // namespace kiln
