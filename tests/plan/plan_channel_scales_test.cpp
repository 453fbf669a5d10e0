// Per-channel int8 input scales (QuantizeAttrs::channel_scales) in plan files: kept bit for bit, left out
// of plans that have none (so plans from before them read and write as they did), and a list that does
// not fit its tensor refused in one line naming the layer.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/printer.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "plan_test_util.h"
#include "reference/executor.h"

namespace kiln {
namespace {

using plan_test::TempDir;

// x -> int8 quantize (one scale per channel, or one) -> depthwise int8 convolution.
Plan depthwise_int8_plan(bool per_channel) {
  Plan plan;
  Graph& g = plan.graph;
  const ValueId x = g.add_input("x", {-1, 3, 4, 4});
  QuantizeAttrs quantize{0.5f, true};
  if (per_channel) quantize.channel_scales = {0.125f, 0.5f, 0.0078125f};
  const ValueId q = g.add_node(OpKind::kQuantize, "x.quantize", {x}, quantize);
  const ValueId codes = g.add_constant(
      "dw.weight_int8", Tensor::from_f32({3, 1, 3, 3}, std::vector<float>(27, 3.0f)).to(DType::kI8));
  const ValueId scales =
      g.add_constant("dw.weight_scale", Tensor::from_f32({3}, std::vector<float>{0.25f, 0.5f, 1.0f}));
  const ValueId w = g.add_node(OpKind::kDequantize, "dw.weight_dequantize", {codes, scales});
  ConvAttrs dw;
  dw.kernel = {3, 3};
  dw.padding = {1, 1, 1, 1};
  dw.groups = 3;
  const ValueId y = g.add_node(OpKind::kConv2d, "dw", {q, w}, dw);
  g.node(g.value(y).producer).precision = Precision::kI8;
  g.mark_output(y);
  return plan;
}

std::size_t layer_index(const nlohmann::json& header, const std::string& name) {
  const nlohmann::json& layers = header["graph"]["layers"];
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i]["name"] == name) return i;
  }
  ADD_FAILURE() << "no layer " << name;
  return 0;
}

TEST(PlanChannelScales, KeptBitForBitAndRunTheSame) {
  const TempDir dir;
  const Plan plan = depthwise_int8_plan(true);
  write_plan(dir / "dw.kplan", plan);
  const Plan loaded = read_plan(dir / "dw.kplan");
  plan_test::expect_same_graph(plan.graph, loaded.graph);
  const Node& point = loaded.graph.node(*loaded.graph.find_node("x.quantize"));
  EXPECT_EQ(point.attr<QuantizeAttrs>().channel_scales, (std::vector<float>{0.125f, 0.5f, 0.0078125f}));
  EXPECT_NE(print_graph(loaded.graph).find("channel_scales=3:[0.0078125,0.5]"), std::string::npos)
      << print_graph(loaded.graph);

  Tensor input(DType::kF32, {2, 3, 4, 4});
  float value = -1.3f;
  for (float& element : input.mutable_f32()) element = (value += 0.0437f);
  const Tensor before = run_reference(plan.graph, {input}).at(0);
  const Tensor after = run_reference(loaded.graph, {input}).at(0);
  ASSERT_EQ(before.numel(), after.numel());
  EXPECT_EQ(std::memcmp(before.data<float>(), after.data<float>(), static_cast<std::size_t>(before.nbytes())),
            0);
}

TEST(PlanChannelScales, PlansWithoutThemHoldNoKeyAndStillLoad) {
  const TempDir dir;
  write_plan(dir / "tensor.kplan", depthwise_int8_plan(false));
  const std::vector<std::byte> file = plan_test::read_bytes(dir / "tensor.kplan");
  const nlohmann::json header = plan_test::header_of(file);
  const nlohmann::json& attrs =
      header["graph"]["layers"][layer_index(header, "x.quantize")]["attributes"]["quantize"];
  EXPECT_FALSE(attrs.contains("channel_scales")) << attrs;
  EXPECT_TRUE(read_plan(dir / "tensor.kplan").graph.node(0).attr<QuantizeAttrs>().channel_scales.empty());
}

TEST(PlanChannelScales, AListThatDoesNotFitItsTensorIsRefusedNamingTheLayer) {
  const TempDir dir;
  write_plan(dir / "dw.kplan", depthwise_int8_plan(true));
  const std::vector<std::byte> good = plan_test::read_bytes(dir / "dw.kplan");
  const std::size_t layer = layer_index(plan_test::header_of(good), "x.quantize");
  const auto error_for = [&](const nlohmann::json& channel_scales) {
    const auto path = dir / "bad.kplan";
    plan_test::write_bytes(path, plan_test::with_header(good, [&](nlohmann::json& h) {
                             h["graph"]["layers"][layer]["attributes"]["quantize"]["channel_scales"] =
                                 channel_scales;
                           }));
    try {
      read_plan(path);
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      return message;
    }
    return std::string();
  };
  EXPECT_NE(error_for({0.5, 0.5})
                .find("layer 'x.quantize' (quantize): 2 channel scales for an input of shape "
                      "[-1, 3, 4, 4]: expected one per channel (axis 1)"),
            std::string::npos);
  EXPECT_NE(error_for({0.5, -0.5, 0.5})
                .find("layer 'x.quantize' (quantize): expected positive finite channel "
                      "scales, got -0.5"),
            std::string::npos);
  EXPECT_NE(error_for(nlohmann::json::array()).find("channel_scales': expected a non-empty list"),
            std::string::npos);
  EXPECT_NE(error_for("0.5").find("channel_scales': expected an array"), std::string::npos);
}

}  // namespace
}  // namespace kiln
