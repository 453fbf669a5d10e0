#include "pipeline/model_loading.h"

#include <iostream>

#include "builder/build_plan.h"
#include "core/error.h"
#include "graph/verifier.h"
#include "plan/plan_reader.h"
#include "runtime/engine.h"

namespace kiln::pipeline {

std::map<std::string, Tensor> checkpoint_weights(const SafetensorsFile& file) {
  std::map<std::string, Tensor> weights;
  for (const auto& name : file.names()) weights.emplace(name, file.tensor(name));
  return weights;
}

namespace {

bool builds_architecture(const FamilyInfo& family, const std::string& architecture) {
  for (const std::string_view prefix : family.architectures) {
    if (architecture.starts_with(prefix)) return true;
  }
  return false;
}

// A config.json naming another family's architecture is refused: its settings are not this family's.
void check_architecture(const FamilyInfo& family, const ModelConfig& config,
                        const std::filesystem::path& config_path) {
  if (config.architecture.empty() || builds_architecture(family, config.architecture)) return;
  for (const FamilyInfo& other : families()) {
    require(&other == &family || !builds_architecture(other, config.architecture), config_path.string(),
            ": says architecture ", config.architecture, " (family ", other.name,
            "), but the family given is ", family.name, ": give --family ", other.name,
            " or the config of a ", family.name, " checkpoint");
  }
}

// Without a config.json the family's defaults apply, but the classes are the checkpoint's own.
void use_family_defaults(LoadedModel& model, const std::filesystem::path& checkpoint) {
  std::cerr << "kiln: note: no config.json beside " << checkpoint.string() << ": using " << model.family->name
            << "'s defaults (" << model.family->defaults_from << ")";
  const std::string key(model.family->classifier_weight);
  if (!key.empty() && model.checkpoint->contains(key) && model.checkpoint->tensor(key).rank() == 2) {
    model.config.num_classes = model.checkpoint->tensor(key).dim(0);
    std::cerr << " with the " << model.config.num_classes << " classes of " << key;
  }
  std::cerr << "\n";
}

}  // namespace

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
  if (!model.config_path.empty()) {
    model.config = read_timm_config(model.config_path, model.config);
    check_architecture(*model.family, model.config, model.config_path);
  } else {
    use_family_defaults(model, checkpoint);
  }
  try {
    model.graph = model.family->build(checkpoint_weights(*model.checkpoint), model.config, -1);
  } catch (const Error& error) {
    fail(checkpoint.string(), ": ", error.what());
  }
  verify(model.graph);
  const Shape& logits = model.graph.value(model.graph.outputs().at(0)).shape;
  require(logits.back() == model.config.num_classes, checkpoint.string(), ": the classifier has ",
          logits.back(), " outputs but ",
          model.config_path.empty() ? "the family default" : model.config_path.string(), " says num_classes ",
          model.config.num_classes);
  return model;
}

DetectorModel load_detector(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                            const std::optional<std::filesystem::path>& config_path, std::int64_t batch) {
  const std::filesystem::path config = config_path ? *config_path : checkpoint.parent_path() / "config.json";
  require(std::filesystem::exists(config), config.string(),
          ": missing; a detector checkpoint needs its config.json (model, imgsz, names)");
  const SafetensorsFile file = SafetensorsFile::open(checkpoint);
  try {
    return detector.load(checkpoint_weights(file), config, batch);
  } catch (const Error& error) {
    fail(checkpoint.string(), ": ", error.what());
  }
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

}  // namespace kiln::pipeline
