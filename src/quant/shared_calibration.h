// One calibration pass shared by several FP8 builds of the same graph on the same images (a study's
// variants): the first build observes every tensor any recipe can quantize, and each build then chooses
// the scales of the tensors its own layers read, with its own calibrator, from the same histograms. A
// per-tensor histogram does not depend on which other tensors are observed, so each build's scales are
// those its own calibration pass would choose, at the cost of one pass instead of one per build.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quant/activation_calibration.h"

namespace kiln {

struct CalibrationImages;

class SharedCalibration {
 public:
  // The histograms of every FP8-quantizable layer's input in `graph` (fp32, after passes) over
  // `images`, and of each channel of those a depthwise convolution reads, observed on the first call for
  // a graph of this structure; a graph of another structure (another optimization level) gets its own
  // pass.
  const ActivationCalibration& observed(const Graph& graph, const std::vector<Tensor>& images,
                                        const std::string& backend, int threads);
  std::size_t passes() const { return passes_; }

 private:
  struct Entry {
    std::vector<std::string> fingerprint;  // the observed tensors' names and the graph's size
    std::unique_ptr<ActivationCalibration> calibration;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::size_t passes_ = 0;
};

}  // namespace kiln
