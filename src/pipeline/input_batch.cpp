#include "pipeline/input_batch.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/error.h"
#include "io/imagenet_labels.h"
#include "io/npy.h"

namespace kiln::pipeline {

namespace {

bool has_npy_extension(const std::filesystem::path& file) {
  auto extension = file.extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".npy";
}

}  // namespace

InputBatch load_inputs(const std::vector<std::filesystem::path>& files, const PreprocessConfig& preprocess,
                       NonFiniteInputs nonfinite) {
  require(!files.empty(), "no --input given");
  const std::int64_t size = preprocess.input_size;
  const Shape image_shape = {3, size, size};
  std::vector<Tensor> parts;
  InputBatch batch;
  for (const auto& file : files) {
    if (has_npy_extension(file)) {
      Tensor tensor = read_npy(file);
      require(tensor.dtype() == DType::kF32, file.string(), ": expected float32 data, got ",
              dtype_name(tensor.dtype()));
      if (tensor.rank() == 3) tensor = tensor.reshaped({1, tensor.dim(0), tensor.dim(1), tensor.dim(2)});
      require(tensor.rank() == 4 && tensor.dim(1) == 3 && tensor.dim(2) == size && tensor.dim(3) == size,
              file.string(), ": expected an NCHW batch of shape [N, 3, ", size, ", ", size, "], got ",
              shape_str(tensor.shape()));
      check_finite_inputs(tensor, file.string(), nonfinite);
      for (std::int64_t i = 0; i < tensor.dim(0); ++i)
        batch.labels.push_back(cat(file.string(), "[", i, "]"));
      parts.push_back(std::move(tensor));
    } else {
      Tensor tensor = preprocess_image(decode_image(file), preprocess);
      require(tensor.shape() == image_shape, file.string(), ": preprocessing gave ",
              shape_str(tensor.shape()));
      parts.push_back(tensor.reshaped({1, 3, size, size}));
      batch.labels.push_back(file.string());
    }
  }
  std::int64_t count = 0;
  for (const auto& part : parts) count += part.dim(0);
  batch.tensor = Tensor(DType::kF32, {count, 3, size, size});
  std::byte* out = batch.tensor.mutable_bytes();
  for (const auto& part : parts) {
    std::memcpy(out, part.bytes(), part.nbytes());
    out += part.nbytes();
  }
  return batch;
}

std::optional<std::vector<Image>> decode_photos(const std::vector<std::filesystem::path>& files) {
  require(!files.empty(), "no --input given");
  if (std::any_of(files.begin(), files.end(), has_npy_extension)) return std::nullopt;
  std::vector<Image> photos;
  for (const auto& file : files) photos.push_back(decode_image(file));
  return photos;
}

std::vector<std::string> class_names(const ModelConfig& config) {
  if (!config.label_names.empty()) return config.label_names;
  if (config.num_classes == 1000) return imagenet_class_names();
  return {};
}

}  // namespace kiln::pipeline
