// Calibration: running the fp32 graph over calibration images and histogramming |x| of every tensor an
// FP8 layer will read, then choosing each tensor's scale with a calibrator (quant/calibrator.h).
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
  // Observes `tensors` of `graph` (fp32, after graph passes) on `backend`, one image at a time.
  ActivationCalibration(const Graph& graph, std::vector<ValueId> tensors, const std::string& backend,
                        int threads = 0);

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

 private:
  std::vector<std::string> names_;
  std::vector<AbsHistogram> histograms_;
  std::vector<int> output_index_;  // per observed tensor: its output of the compiled model, -1 for the input
  std::unique_ptr<CompiledModel> model_;
  std::size_t images_ = 0;
};

}  // namespace kiln
