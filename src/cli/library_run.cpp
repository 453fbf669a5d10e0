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

sdk::Engine compile(const LibraryModel& model, const LibraryEngineSettings& settings, std::int64_t batch) {
  sdk::EngineOptions options;
  options.backend = settings.backend;
  options.batch = batch;
  options.strict_backend = settings.strict_backend;
  options.tactic_cache = settings.tactic_cache;
  return sdk::Engine(load_into_library(model), options);
}

// One run of a fresh context of `engine`, timed without the engine's compile; `run` gives the outputs.
template <typename Run>
LibraryRun timed_run(const LibraryModel& model, const sdk::Engine& engine, Run&& run) {
  sdk::Context context = engine.context();
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::vector<float>> outputs = run(context);
  const auto stop = std::chrono::steady_clock::now();
  require(!outputs.empty(), model.name, ": the plan has no output");
  return {Tensor::from_f32(Shape(engine.outputs().at(0).shape), outputs.front()), engine.backend(),
          engine.fallback_layers(), std::chrono::duration<double>(stop - start).count()};
}

}  // namespace

LibraryRun run_with_library(const LibraryModel& model, const LibraryEngineSettings& settings,
                            const Tensor& batch) {
  const sdk::Engine engine = compile(model, settings, batch.dim(0));
  return timed_run(model, engine, [&](sdk::Context& context) { return context.run(batch.f32()); });
}

LibraryRun run_photos_with_library(const LibraryModel& model, const LibraryEngineSettings& settings,
                                   std::span<const Image> photos) {
  const sdk::Engine engine = compile(model, settings, static_cast<std::int64_t>(photos.size()));
  std::vector<sdk::ImageView> views;
  for (const Image& photo : photos)
    views.push_back({photo.rgb, photo.width, photo.height, 0, KILN_PIXELS_RGB8});
  return timed_run(model, engine, [&](sdk::Context& context) { return context.run_images(views); });
}

}  // namespace kiln::cli
