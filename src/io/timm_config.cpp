// Reading timm's config.json. The Hub layout (timm's save_config_for_hf) keeps the architecture,
// num_classes and label names at the top level and the eval settings under "pretrained_cfg"; files
// without "pretrained_cfg" are the older flat layout, where everything sits at the top level and the
// label names may be called "labels". Top-level num_classes and label_names win over the ones in
// pretrained_cfg, as in timm's loader. A JSON null counts as absent, as timm treats None.
#include "io/timm_config.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/user_json.h"

namespace kiln {
namespace {

using Json = nlohmann::json;

class ConfigReader {
 public:
  explicit ConfigReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void bad(const std::string& key, const std::string& expected) const {
    fail(path_, ": key '", key, "': expected ", expected);
  }

  // The value of `key` in `object`, or nullptr when absent or null.
  static const Json* find(const Json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<std::string> string(const Json& object, const std::string& prefix, const char* key) const {
    const Json* value = find(object, key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) bad(prefix + key, "a string");
    return value->get<std::string>();
  }

  std::optional<std::int64_t> positive_int(const Json& object, const std::string& prefix,
                                           const char* key) const {
    const Json* value = find(object, key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer() ||
        (value->is_number_unsigned() && value->get<std::uint64_t>() > INT64_MAX) ||
        value->get<std::int64_t>() <= 0) {
      bad(prefix + key, "a positive integer");
    }
    return value->get<std::int64_t>();
  }

  std::optional<std::array<float, 3>> triple(const Json& object, const std::string& prefix, const char* key,
                                             bool nonzero) const {
    const Json* value = find(object, key);
    if (value == nullptr) return std::nullopt;
    const char* expected = nonzero ? "a list of 3 non-zero numbers" : "a list of 3 numbers";
    if (!value->is_array() || value->size() != 3) bad(prefix + key, expected);
    std::array<float, 3> out{};
    for (std::size_t i = 0; i < 3; ++i) {
      const Json& item = (*value)[i];
      if (!item.is_number()) bad(prefix + key, expected);
      out[i] = static_cast<float>(item.get<double>());
      if (nonzero && out[i] == 0.0f) bad(prefix + key, expected);
    }
    return out;
  }

  // A list of names, or an object {"<class index>": name} (timm writes one when indices have gaps;
  // missing indices get an empty name).
  std::vector<std::string> names(const Json& value, const std::string& key, std::int64_t num_classes) const {
    std::vector<std::string> out;
    if (value.is_array()) {
      for (const Json& item : value) {
        if (!item.is_string()) bad(key, "a list of strings");
        out.push_back(item.get<std::string>());
      }
      if (static_cast<std::int64_t>(out.size()) != num_classes) {
        bad(key, cat(num_classes, " names (num_classes), got ", out.size()));
      }
      return out;
    }
    if (!value.is_object()) bad(key, "a list of strings or an object mapping class indices to strings");
    out.resize(static_cast<std::size_t>(num_classes));
    for (const auto& [index_text, name] : value.items()) {
      std::int64_t index = -1;
      const char* end = index_text.data() + index_text.size();
      const auto parsed = std::from_chars(index_text.data(), end, index);
      if (parsed.ec != std::errc() || parsed.ptr != end || index < 0 || index >= num_classes) {
        bad(key, cat("class indices in [0, ", num_classes, "), got '", index_text, "'"));
      }
      if (!name.is_string()) bad(key, "string names");
      out[static_cast<std::size_t>(index)] = name.get<std::string>();
    }
    return out;
  }

 private:
  std::string path_;
};

Interpolation parse_interpolation(const ConfigReader& reader, const std::string& key,
                                  const std::string& name) {
  if (name == "bilinear") return Interpolation::kBilinear;
  if (name == "bicubic") return Interpolation::kBicubic;
  if (name == "nearest") return Interpolation::kNearest;
  if (name == "box" || name == "hamming" || name == "lanczos") {
    reader.bad(key, cat("'bilinear', 'bicubic' or 'nearest' (interpolation '", name, "' is unsupported)"));
  }
  reader.bad(key, cat("'bilinear', 'bicubic' or 'nearest', got '", name, "'"));
}

// [3, H, W] with H == W, as timm's input_size tuple.
std::int64_t parse_input_size(const ConfigReader& reader, const std::string& key, const Json& value) {
  const char* expected = "[3, H, W] with H == W > 0";
  if (!value.is_array() || value.size() != 3) reader.bad(key, expected);
  std::array<std::int64_t, 3> dims{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!value[i].is_number_integer()) reader.bad(key, expected);
    dims[i] = value[i].get<std::int64_t>();
  }
  if (dims[0] != 3 || dims[1] != dims[2] || dims[1] <= 0) {
    reader.bad(key, cat(expected, ", got [", dims[0], ", ", dims[1], ", ", dims[2], "]"));
  }
  return dims[1];
}

// Where the settings sit: under pretrained_cfg in the Hub layout, at the top level in the flat one.
struct TimmLayout {
  const Json& root;
  const Json* nested;  // pretrained_cfg; nullptr in the flat layout
  const Json& cfg;     // *nested, or root
  std::string prefix;  // how keys under cfg are named in errors
};

// num_classes: top level over pretrained_cfg.
void read_num_classes(const ConfigReader& reader, const TimmLayout& layout, ModelConfig& out) {
  std::optional<std::int64_t> num_classes = reader.positive_int(layout.cfg, layout.prefix, "num_classes");
  std::string key = layout.prefix + "num_classes";
  if (layout.nested != nullptr) {
    if (auto top = reader.positive_int(layout.root, "", "num_classes")) {
      num_classes = top;
      key = "num_classes";
    }
  }
  if (!num_classes) return;
  if (*num_classes > kMaxTimmClasses) {
    reader.bad(key, cat("at most ", kMaxTimmClasses, " classes, got ", *num_classes));
  }
  out.num_classes = *num_classes;
}

// label_names: top level over pretrained_cfg; in the flat layout, the old name "labels" wins.
void read_label_names(const ConfigReader& reader, const TimmLayout& layout, ModelConfig& out) {
  const Json* labels = nullptr;
  std::string labels_key;
  const auto take = [&](const Json& object, const std::string& key_prefix, const char* key) {
    if (const Json* value = ConfigReader::find(object, key)) {
      labels = value;
      labels_key = key_prefix + key;
    }
  };
  if (layout.nested != nullptr) {
    take(*layout.nested, layout.prefix, "label_names");
    take(layout.root, "", "label_names");
  } else {
    take(layout.root, "", "label_names");
    take(layout.root, "", "labels");
  }
  if (labels != nullptr) {
    out.label_names = reader.names(*labels, labels_key, out.num_classes);
  } else if (!out.label_names.empty() &&
             static_cast<std::int64_t>(out.label_names.size()) != out.num_classes) {
    out.label_names.clear();  // the default names belong to a different head
  }
}

// timm repairs older exports whose fixed-size model was built with another img_size.
void apply_model_args(const ConfigReader& reader, const TimmLayout& layout, PreprocessConfig& pre) {
  const Json* model_args = ConfigReader::find(layout.root, "model_args");
  if (model_args == nullptr || layout.nested == nullptr) return;
  if (!model_args->is_object()) reader.bad("model_args", "an object");
  const Json* fixed = ConfigReader::find(layout.cfg, "fixed_input_size");
  const Json* img_size = ConfigReader::find(*model_args, "img_size");
  if (img_size != nullptr && fixed != nullptr && fixed->is_boolean() && fixed->get<bool>()) {
    const char* expected = "a positive integer or [H, W] with H == W > 0";
    std::int64_t side = 0;
    if (img_size->is_number_integer()) {
      side = img_size->get<std::int64_t>();
    } else if (img_size->is_array() && img_size->size() == 2 && (*img_size)[0].is_number_integer() &&
               (*img_size)[0] == (*img_size)[1]) {
      side = (*img_size)[0].get<std::int64_t>();
    }
    if (side <= 0) reader.bad("model_args.img_size", expected);
    pre.input_size = side;
  }
  if (const Json* in_chans = ConfigReader::find(*model_args, "in_chans")) {
    if (!in_chans->is_number_integer() || in_chans->get<std::int64_t>() != 3) {
      reader.bad("model_args.in_chans", "3 (RGB input)");
    }
  }
}

// The eval transform after the input size: resize interpolation, center crop and normalization.
void read_eval_transform(const ConfigReader& reader, const TimmLayout& layout, const std::string& name,
                         PreprocessConfig& pre) {
  const Json& cfg = layout.cfg;
  const std::string& prefix = layout.prefix;
  if (auto interpolation = reader.string(cfg, prefix, "interpolation")) {
    pre.interpolation = parse_interpolation(reader, prefix + "interpolation", *interpolation);
  }
  if (const Json* value = ConfigReader::find(cfg, "crop_pct")) {
    if (!value->is_number() || !(value->get<double>() > 0.0 && value->get<double>() <= 1.0)) {
      reader.bad(prefix + "crop_pct", "a number in (0, 1]");
    }
    pre.crop_pct = value->get<double>();
  }
  if (auto crop_mode = reader.string(cfg, prefix, "crop_mode")) {
    if (*crop_mode == "squash" || *crop_mode == "border") {
      fail(name, ": key '", prefix, "crop_mode': '", *crop_mode,
           "' is unsupported (kiln implements only 'center')");
    }
    if (*crop_mode != "center") reader.bad(prefix + "crop_mode", cat("'center', got '", *crop_mode, "'"));
    pre.crop_mode = *crop_mode;
  }
  if (auto mean = reader.triple(cfg, prefix, "mean", false)) pre.mean = *mean;
  if (auto stdev = reader.triple(cfg, prefix, "std", true)) pre.std = *stdev;
}

ModelConfig read_config(const Json& root, const std::string& name, const ModelConfig& defaults) {
  require(root.is_object(), name, ": expected a JSON object at the top level");
  const ConfigReader reader(name);

  // Flat (older) layout when there is no pretrained_cfg.
  const Json* nested = ConfigReader::find(root, "pretrained_cfg");
  if (nested != nullptr && !nested->is_object()) reader.bad("pretrained_cfg", "an object");
  const TimmLayout layout{root, nested, nested != nullptr ? *nested : root,
                          nested != nullptr ? "pretrained_cfg." : ""};

  ModelConfig out = defaults;
  if (auto architecture = reader.string(root, "", "architecture")) out.architecture = *architecture;
  read_num_classes(reader, layout, out);
  read_label_names(reader, layout, out);
  if (const Json* value = ConfigReader::find(layout.cfg, "input_size")) {
    out.preprocess.input_size = parse_input_size(reader, layout.prefix + "input_size", *value);
  }
  apply_model_args(reader, layout, out.preprocess);
  read_eval_transform(reader, layout, name, out.preprocess);
  return out;
}

}  // namespace

ModelConfig read_timm_config(const std::filesystem::path& path, const ModelConfig& defaults) {
  const std::string name = path.string();
  const Json root = parse_user_json(read_regular_file(path, kMaxConfigBytes, "a config.json"), name);
  return with_json_errors(name, "unexpected JSON value", [&] { return read_config(root, name, defaults); });
}

}  // namespace kiln
