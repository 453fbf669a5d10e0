#include "quant/shared_calibration.h"

#include <algorithm>

#include "core/progress.h"
#include "quant/depthwise_inputs.h"
#include "quant/fp8_rewrite.h"
#include "quant/layer_selection.h"

namespace kiln {

const ActivationCalibration& SharedCalibration::observed(const Graph& graph,
                                                         const std::vector<Tensor>& images,
                                                         const std::string& backend, int threads) {
  const std::vector<std::string> layers = quantizable_layers(graph);
  const std::vector<ValueId> tensors = fp8_activation_inputs(graph, layers);
  std::vector<std::string> fingerprint = {std::to_string(graph.nodes().size()),
                                          std::to_string(graph.values().size())};
  for (const ValueId value : tensors) fingerprint.push_back(graph.value(value).name);

  const std::lock_guard lock(mutex_);
  const auto known = std::find_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& entry) { return entry.fingerprint == fingerprint; });
  if (known != entries_.end()) return *known->calibration;
  // Channel by channel too where any depthwise convolution reads the tensor: an int8 build whose recipe
  // leaves only depthwise readers quantizes it per channel (quant/depthwise_inputs.h).
  auto calibration = std::make_unique<ActivationCalibration>(graph, tensors, backend, threads,
                                                             depthwise_read_inputs(graph, layers));
  Progress progress("calibrate (shared by the FP8 variants)", images.size());
  for (const Tensor& image : images) {
    calibration->observe(image);
    progress.advance();
  }
  progress.finish();
  ++passes_;
  entries_.push_back({std::move(fingerprint), std::move(calibration)});
  return *entries_.back().calibration;
}

}  // namespace kiln
