#include "quant/activation_calibration.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {

ActivationCalibration::ActivationCalibration(const Graph& graph, std::vector<ValueId> tensors,
                                             const std::string& backend, int threads) {
  Graph observed = graph;
  int next_output = static_cast<int>(observed.outputs().size());
  for (const ValueId value : tensors) {
    names_.push_back(graph.value(value).name);
    histograms_.emplace_back();
    const bool is_input =
        std::find(graph.inputs().begin(), graph.inputs().end(), value) != graph.inputs().end();
    if (is_input) {
      output_index_.push_back(-1);  // the image itself: no need to compute it
    } else {
      observed.mark_output(value);
      output_index_.push_back(next_output++);
    }
  }
  CompileOptions options;
  options.batch = 1;
  options.threads = threads;
  model_ = make_backend(backend)->compile(observed, options);
}

void ActivationCalibration::observe(const Tensor& image) {
  require(image.rank() == 4 && image.dim(0) == 1, "calibration takes one image at a time, got ",
          shape_str(image.shape()));
  const std::vector<Tensor> outputs = model_->run({image});
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const int index = output_index_[i];
    histograms_[i].observe(index < 0 ? image.f32() : outputs.at(static_cast<std::size_t>(index)).f32());
  }
  ++images_;
}

std::map<std::string, CalibrationResult> ActivationCalibration::choose(
    CalibrationMethod method, const CalibrationOptions& options) const {
  return choose(method, options, names_);
}

std::map<std::string, CalibrationResult> ActivationCalibration::choose(
    CalibrationMethod method, const CalibrationOptions& options,
    const std::vector<std::string>& tensors) const {
  require(images_ > 0, "calibration saw no images");
  std::map<std::string, CalibrationResult> scales;
  for (const std::string& name : tensors) {
    try {
      scales[name] = choose_amax(histogram(name), method, options);
    } catch (const Error& error) {
      fail("calibrating '", name, "': ", error.what());
    }
  }
  return scales;
}

const AbsHistogram& ActivationCalibration::histogram(const std::string& tensor) const {
  const auto it = std::find(names_.begin(), names_.end(), tensor);
  require(it != names_.end(), "calibration did not observe '", tensor, "'");
  return histograms_[static_cast<std::size_t>(it - names_.begin())];
}

}  // namespace kiln
