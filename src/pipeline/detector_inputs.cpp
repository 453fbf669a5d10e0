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

DetectorInputs load_detector_inputs(const std::vector<std::filesystem::path>& files,
                                    const DetectorInfo& detector, std::int64_t size) {
  require(!files.empty(), "no --input given");
  DetectorInputs inputs;
  std::vector<Tensor> parts;
  for (const auto& file : files) {
    if (is_npy(file)) {
      Tensor batch = read_letterboxed_npy(file, size);
      for (std::int64_t i = 0; i < batch.dim(0); ++i) {
        inputs.labels.push_back(cat(file.string(), "[", i, "]"));
        inputs.letterboxes.emplace_back();
        inputs.pictures.push_back(row_picture(batch, i));
      }
      parts.push_back(std::move(batch));
      continue;
    }
    Image image = decode_image(file);
    Letterbox box = detector.prepare(image, size);
    parts.push_back(letterbox_tensor(box).reshaped({1, 3, size, size}));
    inputs.labels.push_back(file.string());
    inputs.letterboxes.emplace_back(std::move(box));
    inputs.pictures.push_back(std::move(image));
  }
  inputs.tensor = Tensor(DType::kF32, {static_cast<std::int64_t>(inputs.labels.size()), 3, size, size});
  std::byte* out = inputs.tensor.mutable_bytes();
  for (const auto& part : parts) {
    std::memcpy(out, part.bytes(), part.nbytes());
    out += part.nbytes();
  }
  return inputs;
}

}  // namespace kiln::pipeline
