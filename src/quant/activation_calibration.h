// Calibration: running the fp32 graph over calibration images and histogramming |x| of every tensor an
// FP8 or int8 layer will read, then choosing each tensor's scale with a calibrator (quant/calibrator.h).
// Tensors quantized per channel (int8 depthwise inputs, quant/depthwise_inputs.h) also get one histogram
// per channel (axis 1), from which each channel's threshold is chosen alone, on the same grid.
//
// The observed tensors become extra outputs of a copy of the graph, compiled on a normal backend, so
// calibration runs at the backend's speed rather than the reference executor's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "quant/calibrator.h"
#include "quant/histogram.h"
#include "backends/backend.h"

namespace kiln {

class ActivationCalibration {
 public:
  // Observes `tensors` of `graph` (fp32, after graph passes) on `backend`, one image at a time, and each
  // channel of those also in `per_channel` (tensors of rank 4) apart.
  ActivationCalibration(const Graph& graph, std::vector<ValueId> tensors, const std::string& backend,
                        int threads = 0, const std::vector<ValueId>& per_channel = {});

  // Runs one preprocessed image ([1, 3, H, W] f32) and adds what each observed tensor held.
  void observe(const Tensor& image);
  std::size_t images() const { return images_; }

  // Scale per observed tensor, keyed by value name.
  std::map<std::string, CalibrationResult> choose(CalibrationMethod method,
                                                  const CalibrationOptions& options = {}) const;
  // Scale per tensor of `tensors`, each of them observed.
  std::map<std::string, CalibrationResult> choose(CalibrationMethod method, const CalibrationOptions& options,
                                                  const std::vector<std::string>& tensors) const;
  const AbsHistogram& histogram(const std::string& tensor) const;

  // Whether `tensor` was observed channel by channel.
  bool observed_per_channel(const std::string& tensor) const;
  // One result per channel of `tensor`, which must have been observed per channel. A channel that was
  // zero on every image gets all_zero and a placeholder scale, as a tensor would.
  std::vector<CalibrationResult> choose_channels(CalibrationMethod method, const CalibrationOptions& options,
                                                 const std::string& tensor) const;

 private:
  std::size_t index_of(const std::string& tensor) const;

  std::vector<std::string> names_;
  std::vector<AbsHistogram> histograms_;
  std::vector<std::vector<AbsHistogram>> channel_histograms_;  // per observed tensor; empty: per tensor
  std::vector<int> output_index_;  // per observed tensor: its output of the compiled model, -1 for the input
  std::unique_ptr<CompiledModel> model_;
  std::size_t images_ = 0;
};

}  // namespace kiln
