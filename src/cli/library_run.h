// kiln run's classifier inference goes through libkiln.so's C API (include/kiln/kiln.hpp), the same
// path an application that embeds kiln takes; the program only prepares the batch and reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "plan/plan.h"

namespace kiln::cli {

// Where the library takes the plan from: the plan file, or (for a checkpoint run) the plan the program
// built in memory, handed over as its bytes.
struct LibraryModel {
  std::filesystem::path plan_file;  // empty: `built` holds the plan
  const Plan* built = nullptr;
  std::string name;  // stands for the model in messages
};

struct LibraryEngineSettings {
  std::string backend;  // empty: the library's default
  bool strict_backend = false;
  std::string tactic_cache;
};

struct LibraryRun {
  Tensor logits;  // the first output, [batch, classes]
  std::string backend;
  std::vector<std::string> fallback_layers;
  double seconds = 0;  // the context's run alone (host buffers in and out), not the engine's compile
};

// Compiles the model for `batch`'s size on the library and runs `batch` once.
LibraryRun run_with_library(const LibraryModel& model, const LibraryEngineSettings& settings, const Tensor& batch);

}  // namespace kiln::cli
