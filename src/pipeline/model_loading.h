// Loading a model from a checkpoint and its config into a graph, in one place for every command: the
// config beside the checkpoint, the family's defaults, the classifier-width check; a detector's own
// config.json; and building a checkpoint into a plan in memory.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "families/registry.h"
#include "graph/graph.h"
#include "io/safetensors.h"
#include "io/timm_config.h"
#include "plan/plan.h"

namespace kiln::pipeline {

struct LoadedModel {
  const FamilyInfo* family = nullptr;
  std::shared_ptr<const SafetensorsFile> checkpoint;
  std::filesystem::path config_path;  // empty when the family defaults were used
  ModelConfig config;
  Graph graph;
};

// Every tensor of a checkpoint by name (views into the mapped file).
std::map<std::string, Tensor> checkpoint_weights(const SafetensorsFile& file);

// config.json is taken from `config_path`, else from beside the checkpoint if present, else the
// family's defaults apply.
LoadedModel load_model(const std::string& family, const std::filesystem::path& checkpoint,
                       const std::optional<std::filesystem::path>& config_path);

// A detector's graph for batches of `batch` images (-1: any), from its config.json: `config_path`, else
// the one beside the checkpoint, which must exist.
DetectorModel load_detector(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                            const std::optional<std::filesystem::path>& config_path, std::int64_t batch);

// A checkpoint built into a plan in memory, with the default build settings (fp32, all passes), for
// running a checkpoint without a separate `kiln build`.
Plan build_in_memory(const std::string& family, const std::filesystem::path& checkpoint,
                     const std::optional<std::filesystem::path>& config_path);

std::shared_ptr<const Plan> load_plan(const std::filesystem::path& path);

}  // namespace kiln::pipeline
