#include "plan/plan_info_json.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "core/error.h"

namespace kiln {

namespace {

std::string_view interpolation_name(Interpolation interpolation) {
  switch (interpolation) {
    case Interpolation::kBilinear:
      return "bilinear";
    case Interpolation::kBicubic:
      return "bicubic";
    case Interpolation::kNearest:
      return "nearest";
  }
  return "unknown";
}

std::optional<Interpolation> interpolation_from_name(std::string_view name) {
  for (const Interpolation known :
       {Interpolation::kBilinear, Interpolation::kBicubic, Interpolation::kNearest}) {
    if (interpolation_name(known) == name) return known;
  }
  return std::nullopt;
}

bool is_digest_hex(const std::string& text) {
  if (text.empty()) return true;  // no checkpoint recorded
  if (text.size() != 64) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

template <typename Number>
nlohmann::json finite(Number value, std::string_view what) {
  require(std::isfinite(value), "config ", what, " is ", value, ", which a plan cannot store");
  return static_cast<double>(value);
}

nlohmann::json config_to_json(const ModelConfig& config) {
  const PreprocessConfig& pre = config.preprocess;
  nlohmann::json mean = nlohmann::json::array();
  nlohmann::json std_dev = nlohmann::json::array();
  for (std::size_t i = 0; i < 3; ++i) {
    mean.push_back(finite(pre.mean[i], "mean"));
    std_dev.push_back(finite(pre.std[i], "std"));
  }
  nlohmann::json preprocess = {
      {"input_size", pre.input_size},
      {"interpolation", std::string(interpolation_name(pre.interpolation))},
      {"crop_pct", finite(pre.crop_pct, "crop_pct")},
      {"crop_mode", pre.crop_mode},
      {"mean", std::move(mean)},
      {"std", std::move(std_dev)},
  };
  return {
      {"architecture", config.architecture},
      {"num_classes", config.num_classes},
      {"label_names", config.label_names},
      {"preprocess", std::move(preprocess)},
  };
}

ModelConfig config_from_json(const JsonField& field) {
  ModelConfig config;
  config.architecture = field["architecture"].as_string();
  config.num_classes = field["num_classes"].as_int(0);
  config.label_names = field["label_names"].as_string_vector();
  const JsonField pre = field["preprocess"];
  config.preprocess.input_size = pre["input_size"].as_int(1);
  const JsonField interpolation = pre["interpolation"];
  const auto known = interpolation_from_name(interpolation.as_string());
  if (!known) interpolation.fail(cat("unknown interpolation '", interpolation.as_string(), "'"));
  config.preprocess.interpolation = *known;
  config.preprocess.crop_pct = pre["crop_pct"].as_double();
  config.preprocess.crop_mode = pre["crop_mode"].as_string();
  config.preprocess.mean = pre["mean"].as_float_array<3>();
  config.preprocess.std = pre["std"].as_float_array<3>();
  return config;
}

// NAME -> VALUE, every value a string; the backend checks names and values when it compiles the plan.
std::map<std::string, std::string> backend_options_from(const JsonField& field) {
  if (!field.json().is_object()) field.fail("expected an object of option names to values");
  std::map<std::string, std::string> options;
  for (const auto& item : field.json().items()) options[item.key()] = field[item.key()].as_string();
  return options;
}

}  // namespace

void write_plan_info(const PlanInfo& info, const ModelConfig& config, nlohmann::json& header) {
  require(is_digest_hex(info.checkpoint_sha256), "checkpoint sha256 '", info.checkpoint_sha256,
          "' is not 64 lower-case hex digits");
  require(info.quantization.is_object(), "the quantization section must be a JSON object");
  header["build"] = {
      {"kiln_version", info.kiln_version},
      {"backend", info.backend},
      {"precision", std::string(precision_name(info.precision))},
      {"opt_level", info.opt_level},
      {"batch", info.batch},
      {"passes", info.passes},
  };
  if (!info.precision_reason.empty()) header["build"]["precision_reason"] = info.precision_reason;
  if (!info.backend_options.empty()) header["build"]["backend_options"] = info.backend_options;
  header["bundle"] = {
      {"family", info.family},
      {"checkpoint", {{"name", info.checkpoint_name}, {"sha256", info.checkpoint_sha256}}},
      {"config", config_to_json(config)},
  };
  header["quantization"] = info.quantization;
}

void read_plan_info(const JsonField& header, PlanInfo& info, ModelConfig& config) {
  const JsonField build = header["build"];
  info.kiln_version = build["kiln_version"].as_string();
  info.backend = build["backend"].as_string();
  const JsonField precision = build["precision"];
  const auto known = precision_from_name(precision.as_string());
  if (!known) precision.fail(cat("unknown precision '", precision.as_string(), "'"));
  info.precision = *known;
  info.opt_level = build["opt_level"].as_int();
  info.batch = build["batch"].as_int();
  info.passes = build["passes"].as_string_vector();
  if (const auto reason = build.find("precision_reason")) info.precision_reason = reason->as_string();
  if (const auto options = build.find("backend_options"))
    info.backend_options = backend_options_from(*options);

  const JsonField bundle = header["bundle"];
  info.family = bundle["family"].as_string();
  const JsonField checkpoint = bundle["checkpoint"];
  info.checkpoint_name = checkpoint["name"].as_string();
  const JsonField digest = checkpoint["sha256"];
  info.checkpoint_sha256 = digest.as_string();
  if (!is_digest_hex(info.checkpoint_sha256)) digest.fail("expected 64 lower-case hex digits or \"\"");
  config = config_from_json(bundle["config"]);

  const JsonField quantization = header["quantization"];
  if (!quantization.json().is_object()) quantization.fail("expected an object");
  info.quantization = quantization.json();
}

}  // namespace kiln
