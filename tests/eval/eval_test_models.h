// Models for the evaluation tests: a small residual network built by hand (named layers, seeded
// weights) and the reduced ResNeSt golden checkpoint built into a plan in memory.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "builder/build_plan.h"
#include "core/dtype.h"
#include "families/registry.h"
#include "io/safetensors.h"
#include "io/timm_config.h"
#include "plan/plan.h"
#include "backends/backend.h"

namespace kiln::testing {

// The CPU backends (the CUDA one, when built, needs a GPU and has its own tests).
inline std::vector<std::string_view> cpu_backend_names() {
  std::vector<std::string_view> names;
  for (const auto name : backend_names()) {
    if (name.rfind("cpu", 0) == 0) names.push_back(name);
  }
  return names;
}

inline Tensor seeded_tensor(Shape shape, std::uint32_t seed, float amplitude) {
  Tensor t(DType::kF32, std::move(shape));
  std::mt19937 generator(seed);
  for (float& v : t.mutable_f32()) {
    v = amplitude * (static_cast<float>(generator() >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
  return t;
}

inline ConvAttrs conv3x3() {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.padding = {1, 1, 1, 1};
  return a;
}

// stem (conv 3x3) -> stem.act -> block.conv (conv 3x3) -> block.add (+ stem.act) -> block.act -> pool ->
// flatten -> fc: eight named layers, [N, 3, size, size] in, [N, classes] out.
inline Plan small_plan(std::int64_t size = 16, std::int64_t classes = 10, std::int64_t channels = 16) {
  Graph g;
  const ValueId x = g.add_input("input", {-1, 3, size, size});
  const float stem_scale = 1.0f / std::sqrt(27.0f);
  const float block_scale = 1.0f / std::sqrt(static_cast<float>(9 * channels));
  const ValueId stem =
      g.add_node(OpKind::kConv2d, "stem",
                 {x, g.add_constant("stem.weight", seeded_tensor({channels, 3, 3, 3}, 1, stem_scale)),
                  g.add_constant("stem.bias", seeded_tensor({channels}, 2, 0.1f))},
                 conv3x3());
  const ValueId stem_act = g.add_node(OpKind::kActivation, "stem.act", {stem}, ActivationAttrs{});
  const ValueId conv = g.add_node(
      OpKind::kConv2d, "block.conv",
      {stem_act,
       g.add_constant("block.conv.weight", seeded_tensor({channels, channels, 3, 3}, 3, block_scale)),
       g.add_constant("block.conv.bias", seeded_tensor({channels}, 4, 0.1f))},
      conv3x3());
  const ValueId add = g.add_node(OpKind::kAdd, "block.add", {conv, stem_act}, AddAttrs{});
  const ValueId act = g.add_node(OpKind::kActivation, "block.act", {add}, ActivationAttrs{});
  const ValueId pool = g.add_node(OpKind::kGlobalAvgPool, "pool", {act});
  const ValueId flat = g.add_node(OpKind::kFlatten, "flatten", {pool});
  const ValueId fc =
      g.add_node(OpKind::kLinear, "fc",
                 {flat, g.add_constant("fc.weight", seeded_tensor({classes, channels}, 5, 1.0f)),
                  g.add_constant("fc.bias", seeded_tensor({classes}, 6, 0.1f))});
  g.mark_output(fc);
  Plan plan;
  plan.info.family = "test_small";
  plan.config.num_classes = classes;
  plan.config.preprocess.input_size = size;
  plan.graph = std::move(g);
  return plan;
}

// `plan` with the named constant multiplied element-wise by (1 + noise in [-amplitude, amplitude]).
inline Plan perturbed(const Plan& plan, const std::string& constant, float amplitude,
                      std::uint32_t seed = 99) {
  Plan copy = plan;
  for (ValueId id = 0; id < static_cast<ValueId>(copy.graph.values().size()); ++id) {
    Value& value = copy.graph.value(id);
    if (value.name != constant) continue;
    Tensor changed = value.constant.to(DType::kF32);
    const Tensor noise = seeded_tensor(changed.shape(), seed, amplitude);
    auto out = changed.mutable_f32();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] *= 1.0f + noise.f32()[i];
    value.constant = changed;
  }
  return copy;
}

// small_plan() with block.conv as an FP8 layer, as the FP8 build makes one: its activation through a
// quantize point ("block.conv.input_quant") and its weight as E4M3 codes times per-channel scales
// ("block.conv.weight_dequant").
inline Plan small_fp8_plan(std::int64_t size = 16, std::int64_t classes = 10, std::int64_t channels = 16) {
  Plan plan = small_plan(size, classes, channels);
  Graph& g = plan.graph;
  const NodeId conv = *g.find_node("block.conv");
  const ValueId activation = g.node(conv).inputs[0];
  const Tensor weight = g.value(g.node(conv).inputs[1]).constant;
  const auto out_channels = static_cast<std::size_t>(weight.dim(0));
  const std::size_t per_channel = static_cast<std::size_t>(weight.numel()) / out_channels;
  Tensor scales(DType::kF32, {weight.dim(0)});
  Tensor scaled(DType::kF32, weight.shape());
  for (std::size_t o = 0; o < out_channels; ++o) {
    float amax = 0.0f;
    for (std::size_t i = 0; i < per_channel; ++i)
      amax = std::max(amax, std::fabs(weight.f32()[o * per_channel + i]));
    const float scale = amax / kE4M3Max;
    scales.mutable_f32()[o] = scale;
    for (std::size_t i = 0; i < per_channel; ++i) {
      scaled.mutable_f32()[o * per_channel + i] = weight.f32()[o * per_channel + i] / scale;
    }
  }
  const ValueId quantized =
      g.add_node(OpKind::kQuantize, "block.conv.input_quant", {activation}, QuantizeAttrs{0.01f});
  const ValueId dequantized = g.add_node(OpKind::kDequantize, "block.conv.weight_dequant",
                                         {g.add_constant("block.conv.weight_fp8", scaled.to(DType::kF8E4M3)),
                                          g.add_constant("block.conv.weight_scale", scales)});
  Node& node = g.node(conv);
  node.inputs[0] = quantized;
  node.inputs[1] = dequantized;
  node.precision = Precision::kF8;
  plan.info.precision = Precision::kF8;
  return plan;
}

inline const std::filesystem::path kGoldenTiny =
    std::filesystem::path(KILN_TEST_DATA_DIR) / "golden" / "resnest_tiny";

// The reduced ResNeSt checkpoint as `kiln build` makes it, at `precision`.
inline Plan tiny_resnest_plan(Precision precision) {
  const FamilyInfo& family = find_family("timm_resnest");
  const SafetensorsFile checkpoint = SafetensorsFile::open(kGoldenTiny / "model.safetensors");
  std::map<std::string, Tensor> weights;
  for (const auto& name : checkpoint.names()) weights.emplace(name, checkpoint.tensor(name));
  const ModelConfig config = read_timm_config(kGoldenTiny / "config.json", family.default_config);
  BuildOptions options;
  options.precision = precision;
  BuildInput input{family.build(weights, config, -1), config, std::string(family.name), "model.safetensors",
                   ""};
  return build_plan(std::move(input), options).plan;
}

}  // namespace kiln::testing
