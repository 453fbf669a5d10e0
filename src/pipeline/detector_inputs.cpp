#include "pipeline/detector_inputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "io/npy.h"

namespace kiln::pipeline {

namespace {

bool is_npy(const std::filesystem::path& file) {
  std::string extension = file.extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".npy";
}

// A letterboxed batch as the detector reads it: float32 [N, 3, size, size] in [0, 1].
Tensor read_letterboxed_npy(const std::filesystem::path& file, std::int64_t size) {
  Tensor tensor = read_npy(file);
  require(tensor.dtype() == DType::kF32, file.string(), ": expected float32 data, got ",
          dtype_name(tensor.dtype()));
  if (tensor.rank() == 3) tensor = tensor.reshaped({1, tensor.dim(0), tensor.dim(1), tensor.dim(2)});
  require(tensor.rank() == 4 && tensor.dim(0) > 0 && tensor.dim(1) == 3 && tensor.dim(2) == size &&
              tensor.dim(3) == size,
          file.string(), ": expected a letterboxed batch [N, 3, ", size, ", ", size, "], got ",
          shape_str(tensor.shape()));
  const auto values = tensor.f32();
  const auto bad =
      std::find_if(values.begin(), values.end(), [](float v) { return !(v >= 0.0f && v <= 1.0f); });
  require(bad == values.end(), file.string(), ": expected RGB / 255 in [0, 1], found ",
          bad == values.end() ? 0 : *bad, " at element ", bad - values.begin());
  return tensor;
}

Image row_picture(const Tensor& batch, std::int64_t row) {
  const std::int64_t height = batch.dim(2), width = batch.dim(3), area = height * width;
  Image picture{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(area * 3))};
  const auto values = batch.f32().subspan(static_cast<std::size_t>(row * 3 * area));
  for (std::int64_t i = 0; i < area; ++i) {
    for (std::int64_t c = 0; c < 3; ++c) {
      picture.rgb[static_cast<std::size_t>(i * 3 + c)] =
          static_cast<std::uint8_t>(std::lround(values[static_cast<std::size_t>(c * area + i)] * 255.0f));
    }
  }
  return picture;
}

}  // namespace

bool DetectorInputs::all_photos() const {
  return std::all_of(letterboxes.begin(), letterboxes.end(), [](const auto& box) { return box.has_value(); });
}

DetectorInputs load_detector_inputs(const std::vector<std::filesystem::path>& files,
                                    const DetectorInfo& detector, std::int64_t size) {
  require(!files.empty(), "no --input given");
  DetectorInputs inputs;
  for (const auto& file : files) {
    if (is_npy(file)) {
      const Tensor batch = read_letterboxed_npy(file, size);
      const std::size_t row_values = static_cast<std::size_t>(3 * size * size);
      for (std::int64_t i = 0; i < batch.dim(0); ++i) {
        inputs.labels.push_back(cat(file.string(), "[", i, "]"));
        inputs.letterboxes.emplace_back();
        inputs.pictures.push_back(row_picture(batch, i));
        Tensor row(DType::kF32, {3, size, size});
        const auto values = batch.f32().subspan(static_cast<std::size_t>(i) * row_values, row_values);
        std::copy(values.begin(), values.end(), row.mutable_f32().begin());
        inputs.letterboxed_rows.emplace_back(std::move(row));
      }
      continue;
    }
    Image image = decode_image(file);
    inputs.labels.push_back(file.string());
    inputs.letterboxes.emplace_back(detector.place(image.width, image.height, size));
    inputs.pictures.push_back(std::move(image));
    inputs.letterboxed_rows.emplace_back();
  }
  return inputs;
}

namespace {

// [rows, 3, size, size] from each row's [3, size, size] tensor, made by `row_of(i)`.
template <typename RowOf>
Tensor assemble_batch(std::size_t rows, std::int64_t size, RowOf row_of) {
  Tensor batch(DType::kF32, {static_cast<std::int64_t>(rows), 3, size, size});
  const auto out = batch.mutable_f32();
  const std::size_t row_values = static_cast<std::size_t>(3 * size * size);
  for (std::size_t i = 0; i < rows; ++i) {
    const Tensor row = row_of(i);
    std::copy(row.f32().begin(), row.f32().end(), out.begin() + static_cast<std::ptrdiff_t>(i * row_values));
  }
  return batch;
}

}  // namespace

Tensor letterbox_on_host(const DetectorInputs& inputs, const DetectorInfo& detector, std::int64_t size) {
  return assemble_batch(inputs.labels.size(), size, [&](std::size_t i) {
    return inputs.letterboxed_rows[i] ? *inputs.letterboxed_rows[i]
                                      : letterbox_tensor(detector.prepare(inputs.pictures[i], size));
  });
}

Tensor letterbox_on_host(const std::vector<Image>& photos, const DetectorInfo& detector, std::int64_t size) {
  return assemble_batch(photos.size(), size,
                        [&](std::size_t i) { return letterbox_tensor(detector.prepare(photos[i], size)); });
}

}  // namespace kiln::pipeline
