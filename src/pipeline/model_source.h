// A model as a family manifest describes it: the manifest read and validated, and the checkpoint
// loaded with every check the manifest asks for (its sha256 pin, its input size, the config beside the
// checkpoint or the family's defaults). `kiln build` and `kiln study` both load through here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "builder/build_plan.h"
#include "families/registry.h"
#include "manifest/manifest.h"
#include "quant/calibration_images.h"

namespace kiln::pipeline {

// The manifest `argument` names (families/NAME, a manifest.toml, or a family name looked up under
// `families_dir`), read and validated against the families kiln can build.
Manifest load_validated_manifest(const std::string& argument, const std::filesystem::path& families_dir);

// The names of the families kiln can build, as validate_manifest() takes them.
std::vector<std::string> known_family_names();

struct ModelSource {
  const FamilyInfo* family = nullptr;  // null for a detector family
  BuildInput input;  // the graph as the family built it, the config and the checkpoint's name and digest
  std::optional<DetectorSection> detector;  // detector families: the plan's detector section
  // How an FP8 build makes calibration images into inputs; empty: timm's eval transform of input.config.
  ImageToInput to_input;
};

// Whether model.checkpoint_sha256 applies: it pins the Hub checkpoint, so it does not describe a file
// the manifest names itself (a study's reduced demo checkpoint).
enum class Sha256Pin { kEnforce, kNotThisFile };

// Fails when the checkpoint's sha256 differs from the manifest's pin (checked before the checkpoint is
// parsed) or the config's input size from the manifest's. A detector family loads its checkpoint with its
// own config.json (pipeline/detector_plan.h).
ModelSource load_model_source(const Manifest& manifest, const std::filesystem::path& checkpoint,
                              const std::optional<std::filesystem::path>& config_path,
                              Sha256Pin pin = Sha256Pin::kEnforce);

// build_plan() on the source, the detector section (if any) added to the plan.
BuildResult build_model(ModelSource source, const BuildOptions& options);

}  // namespace kiln::pipeline
