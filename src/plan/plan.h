// A plan: an optimized graph plus everything the runtime needs to serve it on its own (the model's
// config, where its weights came from and how it was built). plan_writer.h saves one, plan_reader.h
// loads one; plan_format.h defines the file.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "io/timm_config.h"
#include "plan/detector_section.h"
#include "plan/plan_format.h"

namespace kiln {

struct PlanInfo {
  // Set by the reader from the file; the writer always writes kPlanFormatVersion.
  std::uint32_t format_version = kPlanFormatVersion;
  std::string kiln_version = KILN_VERSION;  // the kiln that built the plan
  std::string family;                       // model family, e.g. "resnest"
  std::string backend;                      // backend the plan was built for
  Precision precision = Precision::kF32;    // the build's requested precision; nodes carry their own
  // Why the build chose `precision` when none was asked for (e.g. bf16 over the manifest's fp16 on a
  // CPU that runs it, naming oneDNN's ISA); empty otherwise, and absent from older plans.
  std::string precision_reason;
  std::int64_t opt_level = 0;
  std::int64_t batch = 1;           // batch size the plan was built for
  std::string checkpoint_name;      // e.g. "model.safetensors"
  std::string checkpoint_sha256;    // 64 lower-case hex digits, or empty
  std::vector<std::string> passes;  // graph passes applied, in order
  // The backend's options as the build resolved them (every one, NAME -> VALUE; empty for a backend
  // without options and in older plans, which run the backend's defaults).
  std::map<std::string, std::string> backend_options;
  // Backend data per layer (chosen layout, tactic, ...), keyed by node name. Only live nodes may
  // have an entry.
  std::map<std::string, nlohmann::json> layer_data;
  // Quantization settings (FP8 scales and the like); always a JSON object.
  nlohmann::json quantization = nlohmann::json::object();
};

struct Plan {
  PlanInfo info;
  ModelConfig config;
  Graph graph;
  std::optional<DetectorSection> detector;  // set for detector plans only
};

}  // namespace kiln
