#include "quant/calibration_images.h"

#include <algorithm>

#include "core/error.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "data/image_loop.h"
#include "data/open_dataset.h"
#include "data/sampling.h"

namespace kiln {

namespace {

using LoadChosen = std::function<CalibrationImages(const Dataset&, std::span<const std::size_t>)>;

// The fixed-stride sample and its calibration split, loaded by `load`, with the source recorded.
CalibrationImages sample_and_load(const CalibrationImageOptions& options, const LoadChosen& load) {
  require(options.images >= 1, "--calib-images must be at least 1");
  require(options.every >= 1, "--calib-every must be at least 1");
  const Dataset dataset = open_dataset(options.data);
  const std::size_t sample_size = std::min(dataset.size(), options.images * options.every);
  const std::vector<std::size_t> chosen = calibration_indices(dataset, options);

  CalibrationImages result = load(dataset, chosen);
  require(!result.images.empty(), options.data, ": none of the ", chosen.size(),
          " calibration images could be read");
  const std::size_t skipped = chosen.size() - result.images.size();
  result.source = {{"data", options.data},
                   {"kind", dataset_kind_name(dataset.kind())},
                   {"dataset_images", dataset.size()},
                   {"sample", sample_size},
                   {"every", options.every},
                   {"calibration_images", result.images.size()},
                   {"skipped", skipped},
                   {"fingerprint", calibration_fingerprint(dataset, chosen)}};
  return result;
}

void keep(CalibrationImages& result, const Tensor& input) {
  result.images.push_back(input.clone().reshaped({1, input.dim(0), input.dim(1), input.dim(2)}));
}

}  // namespace

CalibrationImages load_calibration_images(const CalibrationImageOptions& options,
                                          const PreprocessConfig& preprocess) {
  return sample_and_load(options, [&](const Dataset& dataset, std::span<const std::size_t> chosen) {
    return load_calibration_images(dataset, chosen, preprocess, options.strict);
  });
}

CalibrationImages load_calibration_images(const CalibrationImageOptions& options,
                                          const ImageToInput& to_input) {
  return sample_and_load(options, [&](const Dataset& dataset, std::span<const std::size_t> chosen) {
    return load_calibration_images(dataset, chosen, to_input, options.strict);
  });
}

std::vector<std::size_t> calibration_indices(const Dataset& dataset, const CalibrationImageOptions& options) {
  const std::size_t sample_size = std::min(dataset.size(), options.images * options.every);
  const std::vector<std::size_t> sample = stride_sample(dataset.size(), sample_size);
  std::vector<std::size_t> chosen = split_every(sample, options.every).calibration;
  if (chosen.size() > options.images) chosen.resize(options.images);
  return chosen;
}

std::string calibration_fingerprint(const Dataset& dataset, std::span<const std::size_t> indices) {
  std::string listing;
  for (const std::size_t index : indices) {
    const Sample& sample = dataset.sample(index);
    std::error_code error;
    const std::uintmax_t bytes = sample.size ? *sample.size : std::filesystem::file_size(sample.file, error);
    listing += cat(sample.name, "\t", error ? 0 : bytes, "\n");
  }
  return sha256_hex(std::as_bytes(std::span<const char>(listing)));
}

CalibrationImages load_calibration_images(const Dataset& dataset, std::span<const std::size_t> indices,
                                          const PreprocessConfig& preprocess, bool strict) {
  CalibrationImages result;
  Progress progress("load calibration images", indices.size());
  for_each_image(
      dataset, indices, preprocess, [&](std::size_t, const Tensor& input) { keep(result, input); }, strict,
      &progress);
  return result;
}

CalibrationImages load_calibration_images(const Dataset& dataset, std::span<const std::size_t> indices,
                                          const ImageToInput& to_input, bool strict) {
  CalibrationImages result;
  Progress progress("load calibration images", indices.size());
  for_each_decoded_image(
      dataset, indices, [&](std::size_t, const Image& image) { keep(result, to_input(image)); }, strict,
      &progress);
  return result;
}

}  // namespace kiln
