// A family's manifest (families/NAME/manifest.toml): which Hub checkpoint an engine is built from and
// how. Every key is required except model.checkpoint_sha256, build.backends and the [quantization] and
// [study] sections. Example:
//
//   [model]
//   family = "timm_resnest"              # a family kiln knows
//   hub_id = "timm/resnest50d.in1k"      # "owner/name" on the Hugging Face Hub
//   revision = "2239b0d8...f42092"       # a 40-hex commit, or a tag or branch name
//   checkpoint_sha256 = ""               # optional: 64 lowercase hex digits of model.safetensors
//   task = "classification"              # classification | detection
//   [input]
//   size = 224                           # square side; a multiple of 32 for detection
//   batch = [1, 32]                      # batch sizes to build for (a single integer is one size)
//   [build]
//   precision = "fp16"                   # fp32 | fp16 | bf16 | fp8 | int8
//   opt_level = 3                        # 0..3
//   backends = ["cpu", "cuda"]           # optional, default ["cpu"]
//   [quantization]                       # required with fp8, otherwise the recipe a study uses
//   weights = "per-channel"              # per-channel | per-tensor
//   activations = "per-tensor"           # per-channel | per-tensor
//   calibration = "max"                  # max | percentile | entropy | mse
//   calibration_images = 500             # positive
//   recipe = "all"                       # all | nose | nose-L1 | auto | a layer-name pattern
//   [study]                              # optional, free-form: kept as JSON for study runs
//
// Reading is two steps: load_manifest() / parse_manifest() check the TOML itself (syntax, unknown keys
// and sections, types, required keys, names of enumerated values); validate_manifest() checks values
// and their consistency. Errors are kiln::Error, one line naming the file and the dotted key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "quant/calibration_method.h"

namespace kiln {

enum class Task : std::uint8_t { kClassification, kDetection };
enum class QuantGranularity : std::uint8_t { kPerChannel, kPerTensor };
using Calibration = CalibrationMethod;  // quant/calibration_method.h

std::string_view task_name(Task task);
std::string_view granularity_name(QuantGranularity granularity);
std::string_view calibration_name(Calibration calibration);

struct QuantizationSettings {
  QuantGranularity weights = QuantGranularity::kPerChannel;
  QuantGranularity activations = QuantGranularity::kPerTensor;
  Calibration calibration = Calibration::kMax;
  std::int64_t calibration_images = 0;
  std::string recipe;  // "all", "nose", "nose-L1", "auto" or a layer-name pattern
};

struct Manifest {
  std::filesystem::path path;  // the file it was read from; errors name it

  // [model]
  std::string family;
  std::string hub_id;
  std::string revision;
  std::string checkpoint_sha256;  // empty: the checkpoint is not pinned by digest
  Task task = Task::kClassification;

  // [input]
  std::int64_t input_size = 0;
  std::vector<std::int64_t> batch_sizes;

  // [build]
  Precision precision = Precision::kF32;
  std::int64_t opt_level = 0;
  std::vector<std::string> backends{"cpu"};

  std::optional<QuantizationSettings> quantization;
  nlohmann::json study;  // null when the manifest has no [study] section
};

// Parses manifest text; `path` is used in error messages and kept in the result.
Manifest parse_manifest(std::string_view text, const std::filesystem::path& path);
// Reads and parses a manifest file.
Manifest load_manifest(const std::filesystem::path& path);

// Checks values and their consistency; `known_families` are the family names kiln can build.
void validate_manifest(const Manifest& manifest, const std::vector<std::string>& known_families);

// The manifest as JSON, with the same sections and keys as the TOML.
nlohmann::json manifest_to_json(const Manifest& manifest);

}  // namespace kiln
