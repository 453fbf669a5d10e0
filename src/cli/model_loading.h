// What the subcommands share: loading a checkpoint with its config into a graph, and turning the
// user's --input files into one batch.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "families/registry.h"
#include "graph/graph.h"
#include "io/safetensors.h"
#include "io/timm_config.h"
#include "plan/plan.h"

namespace kiln::cli {

struct LoadedModel {
  const FamilyInfo* family = nullptr;
  std::shared_ptr<const SafetensorsFile> checkpoint;
  std::filesystem::path config_path;  // empty when the family defaults were used
  ModelConfig config;
  Graph graph;
};

// config.json is taken from `config_path`, else from beside the checkpoint if present, else the
// family's defaults apply.
LoadedModel load_model(const std::string& family, const std::filesystem::path& checkpoint,
                       const std::optional<std::filesystem::path>& config_path);

// A checkpoint built into a plan in memory, with the default build settings (fp32, all passes), for
// running a checkpoint without a separate `kiln build`.
Plan build_in_memory(const std::string& family, const std::filesystem::path& checkpoint,
                     const std::optional<std::filesystem::path>& config_path);

std::shared_ptr<const Plan> load_plan(const std::filesystem::path& path);

struct InputBatch {
  Tensor tensor;                      // [N, 3, H, W] f32
  std::vector<std::string> labels;    // one per image: the file, with "[i]" for rows of a .npy batch
};

// Images are decoded and preprocessed as timm would; .npy files are NCHW f32 batches used as given.
InputBatch load_inputs(const std::vector<std::filesystem::path>& files, const PreprocessConfig& preprocess);

// The class names to print: the config's labels, ImageNet's for a 1000-class model, else none.
std::vector<std::string> class_names(const ModelConfig& config);

}  // namespace kiln::cli
