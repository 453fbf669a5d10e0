#include "pipeline/model_source.h"

#include <iostream>

#include "core/error.h"
#include "core/sha256.h"
#include "manifest/manifest_location.h"
#include "pipeline/detector_plan.h"
#include "pipeline/model_loading.h"

namespace kiln::pipeline {

std::vector<std::string> known_family_names() {
  std::vector<std::string> known;
  for (const auto& family : families()) known.emplace_back(family.name);
  for (const auto& detector : detectors()) known.emplace_back(detector.name);
  return known;
}

namespace {

// The manifest's input size is its Hub checkpoint's; a checkpoint trained at another size (its config.json
// says so: a classifier's input size, a detector's imgsz) is built at its own, as timm and the YOLOv10
// authors' code would run it, and the difference is said once.
void note_own_input_size(const Manifest& manifest, const std::filesystem::path& checkpoint,
                         std::int64_t config_size) {
  if (config_size == manifest.input_size) return;
  std::cerr << "kiln: note: building at " << config_size << "x" << config_size << ", the input size of "
            << checkpoint.string() << "'s config; " << manifest.path.string() << "'s " << manifest.input_size
            << " is for " << (manifest.hub_id.empty() ? manifest.family : manifest.hub_id) << "\n";
}

}  // namespace

Manifest load_validated_manifest(const std::string& argument, const std::filesystem::path& families_dir) {
  const Manifest manifest = load_manifest(resolve_manifest_path(argument, families_dir));
  validate_manifest(manifest, known_family_names());
  return manifest;
}

ModelSource load_model_source(const Manifest& manifest, const std::filesystem::path& checkpoint,
                              const std::optional<std::filesystem::path>& config_path, Sha256Pin pin) {
  const std::string digest = sha256_file_hex(checkpoint);
  const bool pinned = pin == Sha256Pin::kEnforce && !manifest.checkpoint_sha256.empty();
  require(!pinned || manifest.checkpoint_sha256 == digest, checkpoint.string(), ": sha256 ", digest,
          " differs from the ", manifest.checkpoint_sha256, " that ", manifest.path.string(), " pins");
  if (const DetectorInfo* detector = find_detector(manifest.family)) {
    ModelSource source = load_detector_source(*detector, checkpoint, config_path, digest);
    note_own_input_size(manifest, checkpoint, source.detector->image_size);
    return source;
  }
  LoadedModel model = load_model(manifest.family, checkpoint, config_path);
  note_own_input_size(manifest, checkpoint, model.config.preprocess.input_size);
  ModelSource source;
  source.family = model.family;
  source.input = BuildInput{std::move(model.graph), model.config, std::string(model.family->name),
                            checkpoint.filename().string(), digest};
  return source;
}

BuildResult build_model(ModelSource source, const BuildOptions& options) {
  BuildResult result = build_plan(std::move(source.input), options);
  result.plan.detector = std::move(source.detector);
  return result;
}

}  // namespace kiln::pipeline
