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

namespace {

// "1st", "2nd", "3rd", "4th", "11th", "22nd".
std::string ordinal(std::size_t n) {
  const std::size_t tens = n % 100, ones = n % 10;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return cat(n, suffix);
}

}  // namespace

std::string calibration_note(const nlohmann::json& source) {
  const auto used = source.at("calibration_images").get<std::size_t>();
  const auto total = source.at("dataset_images").get<std::size_t>();
  const auto sample = source.at("sample").get<std::size_t>();
  const auto every = source.at("every").get<std::size_t>();
  const auto skipped = source.value("skipped", std::size_t{0});
  std::string note =
      cat("calibrated on ", used, " of ", total, " images in ", source.at("data").get<std::string>());
  if (every == 1) {
    note += sample == total ? std::string(" (all of them)")
                            : cat(" (a sample at a fixed stride; --images sets its size)");
  } else {
    note += cat(" (every ", ordinal(every), " of a ", sample, "-image sample; the other ",
                sample - used - skipped, " held out for kiln eval; --images and --every choose them)");
  }
  if (skipped > 0) note += cat("; ", skipped, " could not be read");
  return note;
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
