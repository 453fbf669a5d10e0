#include "quant/activation_calibration.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/error.h"

namespace kiln {

ActivationCalibration::ActivationCalibration(const Graph& graph, std::vector<ValueId> tensors,
                                             const std::string& backend, int threads,
                                             const std::vector<ValueId>& per_channel) {
  Graph observed = graph;
  int next_output = static_cast<int>(observed.outputs().size());
  for (const ValueId value : tensors) {
    names_.push_back(graph.value(value).name);
    histograms_.emplace_back();
    const Shape& shape = graph.value(value).shape;
    const bool channels = std::find(per_channel.begin(), per_channel.end(), value) != per_channel.end();
    require(!channels || shape.size() == 4, "calibration: per-channel statistics of '", names_.back(),
            "' need a tensor of rank 4, got ", shape_str(shape));
    channel_histograms_.emplace_back(channels ? static_cast<std::size_t>(shape[1]) : 0);
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
    const Tensor& value = index < 0 ? image : outputs.at(static_cast<std::size_t>(index));
    histograms_[i].observe(value.f32());
    std::vector<AbsHistogram>& channels = channel_histograms_[i];
    if (channels.empty()) continue;
    require(value.rank() == 4 && static_cast<std::size_t>(value.dim(1)) == channels.size(), "calibration: '",
            names_[i], "' has shape ", shape_str(value.shape()), ", expected ", channels.size(), " channels");
    // [N, C, H, W] row-major: channel c of image n is one run of H x W values.
    const auto plane = static_cast<std::size_t>(value.dim(2) * value.dim(3));
    const auto values = value.f32();
    for (std::size_t run = 0; run * plane < values.size(); ++run)
      channels[run % channels.size()].observe(values.subspan(run * plane, plane));
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
  return histograms_[index_of(tensor)];
}

bool ActivationCalibration::observed_per_channel(const std::string& tensor) const {
  return !channel_histograms_[index_of(tensor)].empty();
}

std::vector<CalibrationResult> ActivationCalibration::choose_channels(CalibrationMethod method,
                                                                      const CalibrationOptions& options,
                                                                      const std::string& tensor) const {
  require(images_ > 0, "calibration saw no images");
  const std::vector<AbsHistogram>& channels = channel_histograms_[index_of(tensor)];
  require(!channels.empty(), "calibration did not observe the channels of '", tensor, "' apart");
  // Channels are independent and a search over one histogram takes milliseconds (entropy, mse), so a
  // tensor of a thousand channels is worth the machine's cores; each result lands in its own slot, so
  // the outcome does not depend on the order the threads take them.
  std::vector<CalibrationResult> results(channels.size());
  std::vector<std::string> errors(channels.size());
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t c = next++; c < channels.size(); c = next++) {
      try {
        results[c] = choose_amax(channels[c], method, options);
      } catch (const Error& error) {
        errors[c] = error.what();
      }
    }
  };
  const std::size_t workers =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, channels.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  for (std::size_t c = 0; c < errors.size(); ++c) {
    if (!errors[c].empty()) fail("calibrating channel ", c, " of '", tensor, "': ", errors[c]);
  }
  return results;
}

std::size_t ActivationCalibration::index_of(const std::string& tensor) const {
  const auto it = std::find(names_.begin(), names_.end(), tensor);
  require(it != names_.end(), "calibration did not observe '", tensor, "'");
  return static_cast<std::size_t>(it - names_.begin());
}

}  // namespace kiln
