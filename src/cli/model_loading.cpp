#include "cli/model_loading.h"

#include <cstring>

#include "builder/build_plan.h"
#include "core/error.h"
#include "graph/verifier.h"
#include "io/image.h"
#include "io/imagenet_labels.h"
#include "io/npy.h"
#include "plan/plan_reader.h"
#include "runtime/engine.h"

namespace kiln::cli {

LoadedModel load_model(const std::string& family, const std::filesystem::path& checkpoint,
                       const std::optional<std::filesystem::path>& config_path) {
  LoadedModel model;
  model.family = &find_family(family);
  model.checkpoint = std::make_shared<const SafetensorsFile>(SafetensorsFile::open(checkpoint));
  model.config = model.family->default_config;
  if (config_path) {
    model.config_path = *config_path;
  } else if (const auto beside = checkpoint.parent_path() / "config.json"; std::filesystem::exists(beside)) {
    model.config_path = beside;
  }
  if (!model.config_path.empty()) model.config = read_timm_config(model.config_path, model.config);
  std::map<std::string, Tensor> weights;
  for (const auto& name : model.checkpoint->names()) weights.emplace(name, model.checkpoint->tensor(name));
  try {
    model.graph = model.family->build(weights, model.config, -1);
  } catch (const Error& error) {
    fail(checkpoint.string(), ": ", error.what());
  }
  verify(model.graph);
  const Shape& logits = model.graph.value(model.graph.outputs().at(0)).shape;
  require(logits.back() == model.config.num_classes, checkpoint.string(), ": the classifier has ", logits.back(),
          " outputs but ", model.config_path.empty() ? "the family default" : model.config_path.string(),
          " says num_classes ", model.config.num_classes);
  return model;
}

Plan build_in_memory(const std::string& family, const std::filesystem::path& checkpoint,
                     const std::optional<std::filesystem::path>& config_path) {
  LoadedModel model = load_model(family, checkpoint, config_path);
  BuildOptions options;
  options.backend = default_backend();
  BuildInput input{std::move(model.graph), model.config, std::string(model.family->name),
                   checkpoint.filename().string(), ""};
  return build_plan(std::move(input), options).plan;
}

std::shared_ptr<const Plan> load_plan(const std::filesystem::path& path) {
  return std::make_shared<const Plan>(read_plan(path));
}

namespace {

bool has_npy_extension(const std::filesystem::path& file) {
  auto extension = file.extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".npy";
}

}  // namespace

InputBatch load_inputs(const std::vector<std::filesystem::path>& files, const PreprocessConfig& preprocess) {
  require(!files.empty(), "no --input given");
  const std::int64_t size = preprocess.input_size;
  const Shape image_shape = {3, size, size};
  std::vector<Tensor> parts;
  InputBatch batch;
  for (const auto& file : files) {
    if (has_npy_extension(file)) {
      Tensor tensor = read_npy(file);
      require(tensor.dtype() == DType::kF32, file.string(), ": expected float32 data, got ", dtype_name(tensor.dtype()));
      if (tensor.rank() == 3) tensor = tensor.reshaped({1, tensor.dim(0), tensor.dim(1), tensor.dim(2)});
      require(tensor.rank() == 4 && tensor.dim(1) == 3 && tensor.dim(2) == size && tensor.dim(3) == size,
              file.string(), ": expected an NCHW batch of shape [N, 3, ", size, ", ", size, "], got ",
              shape_str(tensor.shape()));
      for (std::int64_t i = 0; i < tensor.dim(0); ++i) batch.labels.push_back(cat(file.string(), "[", i, "]"));
      parts.push_back(std::move(tensor));
    } else {
      Tensor tensor = preprocess_image(decode_image(file), preprocess);
      require(tensor.shape() == image_shape, file.string(), ": preprocessing gave ", shape_str(tensor.shape()));
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

std::vector<std::string> class_names(const ModelConfig& config) {
  if (!config.label_names.empty()) return config.label_names;
  if (config.num_classes == 1000) return imagenet_class_names();
  return {};
}

}  // namespace kiln::cli
