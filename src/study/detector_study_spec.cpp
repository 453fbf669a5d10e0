#include "study/detector_study_spec.h"

#include <algorithm>

#include "core/error.h"

namespace kiln {
namespace {

const std::vector<std::string> kClassifierOnlyKeys = {"max_agreement_drop", "max_top1_drop", "auto_target",
                                                      "sensitivity_images"};

std::string where(const Manifest& manifest, const std::string& key) {
  return cat(manifest.path.string(), ": study.", key, ": ");
}

// study.KEY as a number in [low, high], when present.
void read_number(const nlohmann::json& study, const Manifest& manifest, const std::string& key, double low,
                 double high, double& value) {
  if (!study.contains(key)) return;
  const nlohmann::json& v = study.at(key);
  require(v.is_number() && v.get<double>() >= low && v.get<double>() <= high, where(manifest, key),
          "expected a number from ", low, " to ", high);
  value = v.get<double>();
}

template <typename T>
void read_whole(const nlohmann::json& study, const Manifest& manifest, const std::string& key,
                std::int64_t low, std::int64_t high, T& value) {
  if (!study.contains(key)) return;
  const nlohmann::json& v = study.at(key);
  require(v.is_number_integer() && v.get<std::int64_t>() >= low && v.get<std::int64_t>() <= high,
          where(manifest, key), "expected a whole number from ", low, " to ", high);
  value = static_cast<T>(v.get<std::int64_t>());
}

}  // namespace

const std::vector<std::string>& detector_study_keys() {
  static const std::vector<std::string> kKeys = {"parity_min_score",   "map_min_score",  "max_map_drop",
                                                 "max_map50_drop",     "bootstrap_seed", "demo_config",
                                                 "bootstrap_resamples"};
  return kKeys;
}

void require_detector_variant(const StudyVariant& variant) {
  require(variant.recipe != "auto", "study variant '", variant.name,
          "': the auto recipe searches by top-1 agreement and logit error, which a detector does not "
          "have: give a built-in or pattern recipe");
}

DetectorStudySpec detector_study_spec_from_manifest(const Manifest& manifest) {
  const nlohmann::json study = manifest.study.is_object() ? manifest.study : nlohmann::json::object();
  for (const std::string& key : kClassifierOnlyKeys) {
    require(!study.contains(key), where(manifest, key),
            "a classifier study's key; a detector study judges mAP drops (max_map_drop, max_map50_drop)");
  }
  DetectorStudySpec spec;
  read_number(study, manifest, "parity_min_score", 0.0, 1.0, spec.parity_min_score);
  read_number(study, manifest, "map_min_score", 0.0, 1.0, spec.map_min_score);
  read_number(study, manifest, "max_map_drop", 0.0, 1.0, spec.max_map_drop);
  read_number(study, manifest, "max_map50_drop", 0.0, 1.0, spec.max_map50_drop);
  read_whole(study, manifest, "bootstrap_resamples", 100, 100000, spec.bootstrap_resamples);
  read_whole(study, manifest, "bootstrap_seed", 0, std::int64_t{1} << 53, spec.bootstrap_seed);
  if (study.contains("demo_config")) {
    require(study.at("demo_config").is_string(), where(manifest, "demo_config"), "expected a string");
    spec.demo_config =
        (manifest.path.parent_path() / study.at("demo_config").get<std::string>()).lexically_normal();
  }
  // The shared keys are read as a classifier study reads them, without the detector's own.
  Manifest shared = manifest;
  shared.study = study;
  for (const std::string& key : detector_study_keys()) shared.study.erase(key);
  spec.study = study_spec_from_manifest(shared);
  for (const StudyVariant& variant : spec.study.variants) {
    try {
      require_detector_variant(variant);
    } catch (const Error& error) {
      fail(where(manifest, "variants"), error.what());
    }
  }
  return spec;
}

nlohmann::json DetectorStudySpec::to_json() const {
  nlohmann::json json = study.to_json();
  for (const std::string& key : kClassifierOnlyKeys) json.erase(key);
  json.update({{"parity_min_score", parity_min_score},
               {"map_min_score", map_min_score},
               {"max_map_drop", max_map_drop},
               {"max_map50_drop", max_map50_drop},
               {"bootstrap_resamples", bootstrap_resamples},
               {"bootstrap_seed", bootstrap_seed}});
  return json;
}

}  // namespace kiln
