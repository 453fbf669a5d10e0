#include "backends/cuda/device_preprocess.h"

#include <algorithm>
#include <vector>

#include "backends/cuda/kernels/image_kernels.h"
#include "io/resample_tables.h"

namespace kiln::cuda {
namespace {

// Keeps `buffer` at least `bytes` large (a new allocation synchronizes the device, so no queued kernel
// still reads the old one).
void reserve(DeviceBuffer& buffer, std::size_t bytes) {
  if (buffer.bytes() < bytes) buffer = DeviceBuffer(std::max(bytes, buffer.bytes() * 3 / 2));
}

// A ResampleAxis appended to `tables`; returns where its start, length and weights begin.
struct TableOffsets {
  std::size_t start = 0, length = 0, weights = 0;
};
TableOffsets append_axis(const ResampleAxis& axis, std::vector<std::int32_t>& tables) {
  TableOffsets at{tables.size(), tables.size() + axis.start.size(),
                  tables.size() + axis.start.size() + axis.length.size()};
  tables.insert(tables.end(), axis.start.begin(), axis.start.end());
  tables.insert(tables.end(), axis.length.begin(), axis.length.end());
  tables.insert(tables.end(), axis.weights.begin(), axis.weights.end());
  return at;
}

ResampleTable device_table(const ResampleAxis& axis, const std::int32_t* base, const TableOffsets& at) {
  return {base + at.start, base + at.length, base + at.weights, static_cast<int>(axis.taps),
          static_cast<int>(axis.start.size())};
}

void append_taps(const std::vector<LinearTap>& taps, std::vector<std::int32_t>& tables) {
  for (const LinearTap& tap : taps) tables.insert(tables.end(), {tap.index, tap.weight0, tap.weight1});
}

}  // namespace

const std::uint8_t* DevicePreprocessor::upload_image(const Image& image, cudaStream_t stream) {
  require(image.width > 0 && image.height > 0 &&
              image.rgb.size() == static_cast<std::size_t>(image.width * image.height * 3),
          "preprocess: expected a non-empty RGB image, got ", image.width, "x", image.height, " with ",
          image.rgb.size(), " bytes");
  reserve(image_, image.rgb.size());
  check(cudaMemcpyAsync(image_.data(), image.rgb.data(), image.rgb.size(), cudaMemcpyHostToDevice, stream),
        "copying an image to the device");
  return static_cast<const std::uint8_t*>(image_.data());
}

const std::int32_t* DevicePreprocessor::upload_tables(const std::vector<std::int32_t>& tables,
                                                      cudaStream_t stream) {
  reserve(tables_, tables.size() * sizeof(std::int32_t));
  check(cudaMemcpyAsync(tables_.data(), tables.data(), tables.size() * sizeof(std::int32_t),
                        cudaMemcpyHostToDevice, stream),
        "copying resize tables to the device");
  return static_cast<const std::int32_t*>(tables_.data());
}

void DevicePreprocessor::eval_transform(const Image& image, const PreprocessConfig& config, float* out,
                                        cudaStream_t stream) {
  const EvalResize geometry = eval_resize_geometry(image.width, image.height, config);
  const CropWindow& window = geometry.window;
  const ResampleAxis columns =
      resample_axis(image.width, geometry.width, window.left, window.width, config.interpolation);
  const ResampleAxis rows =
      resample_axis(image.height, geometry.height, window.top, window.height, config.interpolation);
  // The source rows the vertical pass reads.
  const SampleRange read = samples_read(rows, image.height);
  const auto row_begin = static_cast<int>(read.begin), row_end = static_cast<int>(read.end);

  std::vector<std::int32_t> tables;
  const TableOffsets column_at = append_axis(columns, tables), row_at = append_axis(rows, tables);
  const std::uint8_t* pixels = upload_image(image, stream);
  const std::int32_t* base = upload_tables(tables, stream);
  const auto width = static_cast<int>(window.width);
  reserve(rows_, static_cast<std::size_t>(row_end - row_begin) * static_cast<std::size_t>(width) * 3 + 1);
  auto* resized_rows = static_cast<std::uint8_t*>(rows_.data());
  check(resample_rows(pixels, static_cast<int>(image.width), row_begin, row_end - row_begin,
                      device_table(columns, base, column_at), resized_rows, stream),
        "launching the horizontal resize");
  Normalize normalize{};
  for (int c = 0; c < 3; ++c) {
    normalize.mean[c] = config.mean[static_cast<std::size_t>(c)];
    normalize.std[c] = config.std[static_cast<std::size_t>(c)];
  }
  check(resample_columns_normalize(resized_rows, width, row_begin, device_table(rows, base, row_at),
                                   normalize, out, stream),
        "launching the vertical resize");
}

void DevicePreprocessor::letterbox(const Image& image, const LetterboxPlacement& placement, float* out,
                                   cudaStream_t stream) {
  require(placement.size > 0 && placement.scaled_width > 0 && placement.scaled_height > 0 &&
              placement.left >= 0 && placement.top >= 0 &&
              placement.left + placement.scaled_width <= placement.size &&
              placement.top + placement.scaled_height <= placement.size,
          "letterbox: a ", placement.scaled_width, "x", placement.scaled_height, " image at (",
          placement.left, ", ", placement.top, ") does not fit a ", placement.size, " square");
  std::vector<std::int32_t> tables;
  append_taps(linear_taps(image.width, placement.scaled_width, true), tables);
  append_taps(linear_taps(image.height, placement.scaled_height, false), tables);
  LetterboxArgs args;
  args.image = upload_image(image, stream);
  const std::int32_t* base = upload_tables(tables, stream);
  args.width = static_cast<int>(image.width);
  args.height = static_cast<int>(image.height);
  args.x_taps = base;
  args.y_taps = base + 3 * placement.scaled_width;
  args.scaled_width = static_cast<int>(placement.scaled_width);
  args.scaled_height = static_cast<int>(placement.scaled_height);
  args.left = static_cast<int>(placement.left);
  args.top = static_cast<int>(placement.top);
  args.size = static_cast<int>(placement.size);
  args.fill = placement.fill;
  check(letterbox_normalize(args, out, stream), "launching the letterbox");
}

}  // namespace kiln::cuda
