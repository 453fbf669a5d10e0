// kiln run's classifier inference goes through libkiln.so's C API (include/kiln/kiln.hpp), the same
// path an application that embeds kiln takes; the program only decodes photos or prepares a .npy batch,
// and reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/image.h"
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
  // The context's run alone (host buffers in and out, photos' preprocessing included), not the engine's
  // compile.
  double seconds = 0;
};

// Compiles the model for `batch`'s size on the library and runs `batch` once.
LibraryRun run_with_library(const LibraryModel& model, const LibraryEngineSettings& settings,
                            const Tensor& batch);

// Compiles the model for a batch of `photos` on the library and runs them once, preprocessed by the library
// (timm's eval transform; on cuda on the device).
LibraryRun run_photos_with_library(const LibraryModel& model, const LibraryEngineSettings& settings,
                                   std::span<const Image> photos);

}  // namespace kiln::cli
