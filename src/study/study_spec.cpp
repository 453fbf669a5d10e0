#include "study/study_spec.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/error.h"
#include "graph/graph.h"
#include "quant/calibration_method.h"
#include "quant/layer_selection.h"

namespace kiln {
namespace {

const std::vector<std::string> kDefaultVariants = {
    "fp32", "fp16", "fp8 all max", "fp8 nose max", "fp8 nose-L1 max", "fp8 all entropy", "fp8 auto max"};

// Typed reads of optional [study] keys, failing with the manifest's path and the key.
class StudyReader {
 public:
  StudyReader(const nlohmann::json& study, const std::filesystem::path& path) : study_(study), path_(path) {}

  template <typename T>
  void read(const char* key, T& value) const {
    if (!study_.contains(key)) return;
    const nlohmann::json& v = study_.at(key);
    bool ok = false;
    if constexpr (std::is_same_v<T, std::string>) {
      ok = v.is_string();
    } else if constexpr (std::is_floating_point_v<T>) {
      ok = v.is_number();
    } else {
      ok = v.is_number_integer() && v.get<std::int64_t>() >= 0;
    }
    require(ok, where(key), "expected ", expected<T>());
    value = v.get<T>();
  }
  std::string where(const char* key) const { return cat(path_.string(), ": study.", key, ": "); }

 private:
  template <typename T>
  static const char* expected() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    return "a non-negative integer";
  }
  const nlohmann::json& study_;
  const std::filesystem::path& path_;
};

}  // namespace

std::vector<std::string> split_study_variants(std::string_view list) {
  const auto starts_variant = [&](std::size_t at) {
    while (at < list.size() && list[at] == ' ') ++at;
    const std::string_view rest = list.substr(at);
    return rest.starts_with("fp") || rest.starts_with("bf16") || rest.starts_with("int8");
  };
  std::vector<std::string> variants;
  std::size_t begin = 0;
  for (std::size_t at = 0; at <= list.size(); ++at) {
    if (at < list.size() && !(list[at] == ',' && starts_variant(at + 1))) continue;
    variants.emplace_back(list.substr(begin, at - begin));
    begin = at + 1;
  }
  return variants;
}

bool has_fp8_variant(const std::vector<StudyVariant>& variants) {
  return std::any_of(variants.begin(), variants.end(),
                     [](const StudyVariant& v) { return is_quantized(v.precision); });
}

StudyVariant parse_study_variant(std::string_view text) {
  std::istringstream words{std::string(text)};
  std::vector<std::string> parts;
  for (std::string word; words >> word;) parts.push_back(word);
  StudyVariant variant;
  variant.name = std::string(text);
  const std::string usage =
      "expected fp32, fp16, bf16, 'fp8 RECIPE CALIBRATOR' or 'int8 RECIPE CALIBRATOR [depthwise=per-tensor]' "
      "(e.g. 'fp8 nose max')";
  require(!parts.empty(), "study variant '", text, "': ", usage);
  const auto precision = precision_from_name(parts[0]);
  require(precision.has_value(), "study variant '", text, "': ", usage);
  variant.precision = *precision;
  if (!is_quantized(*precision)) {
    require(parts.size() == 1, "study variant '", text, "': ", usage);
    return variant;
  }
  const bool int8 = *precision == Precision::kI8;
  require(parts.size() == 3 || (int8 && parts.size() == 4), "study variant '", text, "': ", usage);
  if (parts.size() == 4) {
    constexpr std::string_view kKey = "depthwise=";
    const std::optional<DepthwiseInputScales> scales =
        parts[3].starts_with(kKey) ? depthwise_input_scales_from_name(std::string_view(parts[3]).substr(kKey.size()))
                                   : std::nullopt;
    require(scales.has_value(), "study variant '", text, "': '", parts[3],
            "' is not depthwise=per-channel or depthwise=per-tensor");
    variant.depthwise_input_scales = *scales;
  }
  variant.recipe = parts[1];
  if (variant.recipe != "auto") parse_recipe(variant.recipe);
  const auto method = calibration_method_from_name(parts[2]);
  require(method.has_value(), "study variant '", text, "': calibrator '", parts[2],
          "' is not max, percentile, entropy or mse");
  variant.method = *method;
  return variant;
}

void check_study_variants(const std::vector<StudyVariant>& variants, const std::string& where) {
  require(variants.size() <= kMaxStudyVariants, where, variants.size(), " variants, more than a study runs (",
          kMaxStudyVariants, " at most)");
  std::map<std::string, std::string> seen;  // what a variant does -> its name as first given
  for (const StudyVariant& variant : variants) {
    const bool int8 = variant.precision == Precision::kI8;
    const std::string what =
        is_quantized(variant.precision)
            ? cat(precision_name(variant.precision), " ", variant.recipe, " ", calibration_method_name(variant.method),
                  int8 ? cat(" depthwise=", depthwise_input_scales_name(variant.depthwise_input_scales)) : "")
            : std::string(precision_name(variant.precision));
    const auto [first, inserted] = seen.emplace(what, variant.name);
    if (inserted) continue;
    if (first->second == variant.name) fail(where, "'", variant.name, "' is given twice");
    fail(where, "'", first->second, "' and '", variant.name, "' are the same variant");
  }
}

namespace {

// study.variants, each parsed; a bad one is reported under the key.
void read_variants(const nlohmann::json& study, const StudyReader& reader, StudySpec& spec) {
  std::vector<std::string> variants = kDefaultVariants;
  if (study.contains("variants")) {
    const auto& list = study.at("variants");
    require(list.is_array() && !list.empty() &&
                std::all_of(list.begin(), list.end(), [](const auto& v) { return v.is_string(); }),
            reader.where("variants"), "expected a non-empty array of strings");
    variants = list.get<std::vector<std::string>>();
  }
  for (const std::string& text : variants) {
    try {
      spec.variants.push_back(parse_study_variant(text));
    } catch (const Error& error) {
      fail(reader.where("variants"), error.what());
    }
  }
  check_study_variants(spec.variants, reader.where("variants"));
}

void read_auto_target(const nlohmann::json& study, const StudyReader& reader, StudySpec& spec) {
  if (!study.contains("auto_target")) return;
  std::string target = auto_target_str(spec.auto_target);
  reader.read("auto_target", target);
  try {
    spec.auto_target = parse_auto_target(target);
  } catch (const Error& error) {
    fail(reader.where("auto_target"), error.what());
  }
}

// The demo's checkpoint and data (relative to the manifest's folder) and the sentence saying what they are.
void read_demo_paths(const nlohmann::json& study, const StudyReader& reader,
                     const std::filesystem::path& folder, StudySpec& spec) {
  std::string path;
  if (study.contains("demo_checkpoint")) {
    reader.read("demo_checkpoint", path);
    spec.demo_checkpoint = (folder / path).lexically_normal();
  }
  if (study.contains("demo_data")) {
    reader.read("demo_data", path);
    spec.demo_data = (folder / path).lexically_normal();
  }
  if (study.contains("demo_description")) reader.read("demo_description", spec.demo_description);
}

// A non-empty array of whole numbers in [low, high], as study.KEY.
std::vector<std::int64_t> read_whole_list(const nlohmann::json& study, const StudyReader& reader,
                                          const char* key, std::int64_t low, std::int64_t high) {
  const nlohmann::json& list = study.at(key);
  const bool ok =
      list.is_array() && !list.empty() && std::all_of(list.begin(), list.end(), [&](const auto& v) {
        return v.is_number_integer() && v.template get<std::int64_t>() >= low &&
               v.template get<std::int64_t>() <= high;
      });
  require(ok, reader.where(key), "expected a non-empty array of whole numbers from ", low, " to ", high);
  std::vector<std::int64_t> values;
  for (const auto& v : list) {
    const auto value = v.get<std::int64_t>();
    if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
  }
  return values;
}

// The speed matrix: every batch at every level. By default the manifest's batches, at its level and at
// level 1 (3 when the manifest's is 0 or 1), as the seed study compared them.
void read_speed_matrix(const nlohmann::json& study, const StudyReader& reader, const Manifest& manifest,
                       StudySpec& spec) {
  spec.batches = manifest.batch_sizes;
  spec.opt_levels = {manifest.opt_level, manifest.opt_level >= 2 ? 1 : 3};
  if (study.contains("batches")) spec.batches = read_whole_list(study, reader, "batches", 1, 4096);
  if (study.contains("opt_levels")) spec.opt_levels = read_whole_list(study, reader, "opt_levels", 0, 3);
  reader.read("matrix_seconds", spec.matrix_seconds);
  require(spec.matrix_seconds > 0, reader.where("matrix_seconds"), "expected a number above 0");
}

// A string that says something, as study.KEY.
std::string read_text(const nlohmann::json& value, const std::string& where) {
  const bool ok = value.is_string() && value.get<std::string>().find_first_not_of(" \t") != std::string::npos;
  require(ok, where, "expected a non-empty string");
  return value.get<std::string>();
}

std::vector<std::string> read_text_list(const nlohmann::json& study, const StudyReader& reader,
                                        const char* key) {
  if (!study.contains(key)) return {};
  const nlohmann::json& list = study.at(key);
  require(list.is_array(), reader.where(key), "expected an array of strings");
  std::vector<std::string> texts;
  for (const auto& item : list) texts.push_back(read_text(item, reader.where(key)));
  return texts;
}

// study.recipes: per recipe (a built-in name, "auto" or a pattern), the text the report quotes.
std::map<std::string, std::string> read_recipe_texts(const nlohmann::json& study, const StudyReader& reader) {
  if (!study.contains("recipes")) return {};
  const nlohmann::json& table = study.at("recipes");
  require(table.is_object(), reader.where("recipes"), "expected a table of recipe = \"text\"");
  std::map<std::string, std::string> texts;
  for (const auto& [recipe, text] : table.items()) {
    const std::string where = cat(reader.where("recipes"), recipe, ": ");
    if (recipe != "auto") {
      try {
        parse_recipe(recipe);
      } catch (const Error& error) {
        fail(where, error.what());
      }
    }
    texts[recipe] = read_text(text, where);
  }
  return texts;
}

StudyFamilyText read_family_text(const nlohmann::json& study, const StudyReader& reader) {
  StudyFamilyText text;
  if (study.contains("parts")) text.parts = read_text(study.at("parts"), reader.where("parts"));
  if (study.contains("other_layers"))
    text.other_layers = read_text(study.at("other_layers"), reader.where("other_layers"));
  text.recipes = read_recipe_texts(study, reader);
  text.revisit = read_text_list(study, reader, "revisit");
  text.not_tried = read_text_list(study, reader, "not_tried");
  return text;
}

// A misspelt key would silently keep its default, so any key not read above is an error.
void check_known_keys(const nlohmann::json& study, const std::filesystem::path& manifest_path) {
  static const std::vector<std::string> kKnown = {"variants",
                                                  "baseline",
                                                  "batch",
                                                  "images",
                                                  "every",
                                                  "calibration_images",
                                                  "min_speedup",
                                                  "max_agreement_drop",
                                                  "max_top1_drop",
                                                  "auto_target",
                                                  "sensitivity_images",
                                                  "rounds",
                                                  "seconds_per_round",
                                                  "warmup_seconds",
                                                  "profile_iterations",
                                                  "fake_quant_images",
                                                  "demo_checkpoint",
                                                  "demo_data",
                                                  "demo_description",
                                                  "batches",
                                                  "opt_levels",
                                                  "matrix_seconds",
                                                  "parts",
                                                  "recipes",
                                                  "other_layers",
                                                  "revisit",
                                                  "not_tried"};
  for (const auto& [key, value] : study.items()) {
    require(std::find(kKnown.begin(), kKnown.end(), key) != kKnown.end(), manifest_path.string(), ": study.",
            key, ": unknown key");
  }
}

}  // namespace

StudySpec study_spec_from_manifest(const Manifest& manifest) {
  StudySpec spec;
  spec.batch = manifest.batch_sizes.front();
  spec.opt_level = manifest.opt_level;
  if (manifest.quantization && manifest.quantization->calibration_images > 0) {
    spec.calibration_images = static_cast<std::size_t>(manifest.quantization->calibration_images);
  }
  const nlohmann::json study = manifest.study.is_object() ? manifest.study : nlohmann::json::object();
  const StudyReader reader(study, manifest.path);
  read_variants(study, reader, spec);
  reader.read("baseline", spec.baseline);
  require(std::any_of(spec.variants.begin(), spec.variants.end(),
                      [&](const StudyVariant& v) { return v.name == spec.baseline; }),
          reader.where("baseline"), "'", spec.baseline, "' is not one of the variants");
  reader.read("batch", spec.batch);
  reader.read("images", spec.images);
  reader.read("every", spec.every);
  reader.read("calibration_images", spec.calibration_images);
  reader.read("min_speedup", spec.min_speedup);
  reader.read("max_agreement_drop", spec.max_agreement_drop);
  reader.read("max_top1_drop", spec.max_top1_drop);
  read_auto_target(study, reader, spec);
  reader.read("sensitivity_images", spec.sensitivity_images);
  reader.read("rounds", spec.rounds);
  reader.read("seconds_per_round", spec.seconds_per_round);
  reader.read("warmup_seconds", spec.warmup_seconds);
  reader.read("profile_iterations", spec.profile_iterations);
  reader.read("fake_quant_images", spec.fake_quant_images);
  require(spec.batch >= 1 && spec.images >= 2 && spec.every >= 2 && spec.rounds >= 1 &&
              spec.seconds_per_round > 0,
          manifest.path.string(),
          ": study: batch >= 1, images >= 2, every >= 2, rounds >= 1 and seconds_per_round > 0");
  read_demo_paths(study, reader, manifest.path.parent_path(), spec);
  read_speed_matrix(study, reader, manifest, spec);
  spec.text = read_family_text(study, reader);
  check_known_keys(study, manifest.path);
  return spec;
}

nlohmann::json StudySpec::to_json() const {
  nlohmann::json names = nlohmann::json::array();
  for (const StudyVariant& v : variants) names.push_back(v.name);
  return {{"variants", names},
          {"baseline", baseline},
          {"batch", batch},
          {"opt_level", opt_level},
          {"images", images},
          {"every", every},
          {"calibration_images", calibration_images},
          {"min_speedup", min_speedup},
          {"max_agreement_drop", max_agreement_drop},
          {"max_top1_drop", max_top1_drop},
          {"auto_target", auto_target_str(auto_target)},
          {"sensitivity_images", sensitivity_images},
          {"rounds", rounds},
          {"seconds_per_round", seconds_per_round},
          {"warmup_seconds", warmup_seconds},
          {"profile_iterations", profile_iterations},
          {"fake_quant_images", fake_quant_images},
          {"batches", batches},
          {"opt_levels", opt_levels},
          {"matrix_seconds", matrix_seconds},
          {"family_text", text.to_json()}};
}

nlohmann::json StudyFamilyText::to_json() const {
  return {{"parts", parts},
          {"recipes", recipes},
          {"other_layers", other_layers},
          {"revisit", revisit},
          {"not_tried", not_tried}};
}

}  // namespace kiln
