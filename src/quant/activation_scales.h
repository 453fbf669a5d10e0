// The calibrated scales of the tensors quantized layers read, by tensor (value) name: one scale per
// tensor, or, for the int8 inputs of depthwise convolutions (quant/depthwise_inputs.h), one per channel
// (axis 1). A tensor is in one map or the other, never both.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct ActivationScales {
  std::map<std::string, float> tensors = {};
  std::map<std::string, std::vector<float>> channels = {};
};

}  // namespace kiln
