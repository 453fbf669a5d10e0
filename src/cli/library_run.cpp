// kiln run through libkiln.so: the plan loaded, an engine compiled and one context run by the C API.
#include "cli/library_run.h"

#include <chrono>
#include <kiln/kiln.hpp>
#include <sstream>

#include "core/error.h"
#include "plan/plan_writer.h"

namespace kiln::cli {

namespace {

sdk::Plan load_into_library(const LibraryModel& model) {
  if (!model.plan_file.empty()) return sdk::Plan::load(model.plan_file);
  require(model.built != nullptr, "no plan to run");
  std::ostringstream bytes;
  write_plan(bytes, *model.built, model.name);
  const std::string text = std::move(bytes).str();
  return sdk::Plan::from_memory(std::as_bytes(std::span(text)), model.name);
}

}  // namespace

LibraryRun run_with_library(const LibraryModel& model, const LibraryEngineSettings& settings,
                            const Tensor& batch) {
  const sdk::Plan plan = load_into_library(model);
  sdk::EngineOptions options;
  options.backend = settings.backend;
  options.batch = batch.dim(0);
  options.strict_backend = settings.strict_backend;
  options.tactic_cache = settings.tactic_cache;
  const sdk::Engine engine(plan, options);
  sdk::Context context = engine.context();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::vector<float>> outputs = context.run(batch.f32());
  const auto stop = std::chrono::steady_clock::now();
  require(!outputs.empty(), model.name, ": the plan has no output");
  return {Tensor::from_f32(Shape(engine.outputs().at(0).shape), outputs.front()), engine.backend(),
          engine.fallback_layers(), std::chrono::duration<double>(stop - start).count()};
}

}  // namespace kiln::cli
