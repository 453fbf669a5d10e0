// In-memory checkpoints with the key set and shapes timm's ResNet / ResNeSt / EfficientNet modules would
// save, generated from an architecture description that mirrors timm's constructor arguments (not from the
// builders under test), filled with seeded random values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kiln::testing {

enum class StemType { kPlain, kDeep, kDeepTiered };

// Arguments of timm's ResNet(...) and of its blocks.
struct ResNetSpec {
  bool bottleneck = true;  // Bottleneck (expansion 4) or BasicBlock (expansion 1)
  std::vector<std::int64_t> layers = {3, 4, 6, 3};
  std::vector<std::int64_t> channels = {64, 128, 256, 512};
  StemType stem = StemType::kPlain;
  std::int64_t stem_width = 64;
  bool avg_down = false;
  std::int64_t cardinality = 1;
  std::int64_t base_width = 64;
  std::int64_t in_chans = 3;
  std::int64_t num_classes = 1000;
};

// Arguments of timm's ResNet(block=ResNestBottleneck, ...).
struct ResNestSpec {
  std::vector<std::int64_t> layers = {3, 4, 6, 3};
  std::vector<std::int64_t> channels = {64, 128, 256, 512};
  StemType stem = StemType::kDeep;
  std::int64_t stem_width = 32;
  bool avg_down = true;
  std::int64_t cardinality = 1;
  std::int64_t base_width = 64;
  std::int64_t radix = 2;
  std::int64_t in_chans = 3;
  std::int64_t num_classes = 1000;
};

// Arguments of timm's _gen_efficientnet (efficientnet_b0's arch_def scaled by the multipliers).
struct EfficientNetSpec {
  double channel_multiplier = 1.0;
  double depth_multiplier = 1.0;
  bool squeeze_excite = true;  // false: the arch_def without its _se0.25 suffixes
  std::int64_t in_chans = 3;
  std::int64_t num_classes = 1000;
};

// timm's make_divisible(value, divisor, min_value) with round_limit 0.9.
std::int64_t make_divisible(double value, std::int64_t divisor, std::int64_t min_value);

std::map<std::string, Tensor> resnet_checkpoint(const ResNetSpec& spec, std::uint64_t seed = 1);
std::map<std::string, Tensor> resnest_checkpoint(const ResNestSpec& spec, std::uint64_t seed = 1);
std::map<std::string, Tensor> efficientnet_checkpoint(const EfficientNetSpec& spec, std::uint64_t seed = 1);

// Elements of every float tensor (the parameters a graph should hold).
std::int64_t float_parameter_count(const std::map<std::string, Tensor>& weights);

}  // namespace kiln::testing
