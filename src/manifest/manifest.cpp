#include "manifest/manifest.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/regular_file.h"

namespace kiln {

namespace {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<Task, 2> kTaskNames = {{
    {Task::kClassification, "classification"},
    {Task::kDetection, "detection"},
}};
constexpr NameTable<QuantGranularity, 2> kGranularityNames = {{
    {QuantGranularity::kPerChannel, "per-channel"},
    {QuantGranularity::kPerTensor, "per-tensor"},
}};
constexpr NameTable<Calibration, 4> kCalibrationNames = {{
    {Calibration::kMax, "max"},
    {Calibration::kPercentile, "percentile"},
    {Calibration::kEntropy, "entropy"},
    {Calibration::kMse, "mse"},
}};
constexpr NameTable<Precision, 5> kPrecisionNames = {{
    {Precision::kF32, "fp32"},
    {Precision::kF16, "fp16"},
    {Precision::kBf16, "bf16"},
    {Precision::kF8, "fp8"},
    {Precision::kI8, "int8"},
}};

template <typename E, std::size_t N>
std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [candidate, name] : table) {
    if (candidate == value) return name;
  }
  return "unknown";
}

template <typename E, std::size_t N>
std::string names_of(const NameTable<E, N>& table) {
  std::string names;
  for (const auto& [value, name] : table) names += cat(names.empty() ? "" : ", ", name);
  return names;
}

std::string joined(std::initializer_list<std::string_view> names) {
  std::string text;
  for (const auto name : names) text += cat(text.empty() ? "" : ", ", name);
  return text;
}

// "a string", "an integer", ...: what a TOML value is, for "expected X, got Y" messages.
std::string_view type_phrase(toml::node_type type) {
  switch (type) {
    case toml::node_type::none:
      return "nothing";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "a list";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
  }
  return "an unknown value";
}

template <typename T>
std::string streamed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// [study] is free-form: every TOML value maps to its JSON counterpart; dates and times become strings.
nlohmann::json toml_to_json(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::none:
      return nullptr;
    case toml::node_type::table: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& [key, value] : *node.as_table()) object[std::string(key.str())] = toml_to_json(value);
      return object;
    }
    case toml::node_type::array: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& element : *node.as_array()) array.push_back(toml_to_json(element));
      return array;
    }
    case toml::node_type::string:
      return node.as_string()->get();
    case toml::node_type::integer:
      return node.as_integer()->get();
    case toml::node_type::floating_point:
      return node.as_floating_point()->get();
    case toml::node_type::boolean:
      return node.as_boolean()->get();
    case toml::node_type::date:
      return streamed(*node.as_date());
    case toml::node_type::time:
      return streamed(*node.as_time());
    case toml::node_type::date_time:
      return streamed(*node.as_date_time());
  }
  return nullptr;
}

// Reads the keys of one section, failing with "<file>: key '<section>.<key>': ..." messages.
class SectionReader {
 public:
  // Fails on a key not in `keys`: a typo must not silently fall back to a default.
  SectionReader(const std::filesystem::path& path, std::string_view section, const toml::table& table,
                std::initializer_list<std::string_view> keys)
      : path_(path), section_(section), table_(table) {
    for (const auto& [key, value] : table) {
      bool known = false;
      for (const auto candidate : keys) known = known || key.str() == candidate;
      if (!known) fail_at(key.str(), "unknown key (expected one of ", joined(keys), ")");
    }
  }

  [[noreturn]] void fail_at(std::string_view key, auto&&... parts) const {
    fail(path_.string(), ": key '", section_, ".", key, "': ", parts...);
  }

  bool has(std::string_view key) const { return table_.contains(key); }

  std::string string(std::string_view key) const { return *value<std::string>(key, "a string"); }
  std::optional<std::string> optional_string(std::string_view key) const {
    return has(key) ? std::optional(string(key)) : std::nullopt;
  }
  std::int64_t integer(std::string_view key) const { return *value<std::int64_t>(key, "an integer"); }

  template <typename E, std::size_t N>
  E choice(std::string_view key, const NameTable<E, N>& table) const {
    const std::string name = string(key);
    for (const auto& [value, candidate] : table) {
      if (candidate == name) return value;
    }
    fail_at(key, "expected one of ", names_of(table), ", got '", name, "'");
  }

  // An integer, or a list of integers.
  std::vector<std::int64_t> integer_list(std::string_view key) const {
    const toml::node& node = required(key, "an integer or a list of integers");
    if (const auto single = node.value_exact<std::int64_t>()) return {*single};
    const toml::array* array = node.as_array();
    if (array == nullptr) wrong_type(key, "an integer or a list of integers", node);
    std::vector<std::int64_t> values;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto element = (*array)[i].value_exact<std::int64_t>();
      if (!element) wrong_type(cat(key, "[", i, "]"), "an integer", (*array)[i]);
      values.push_back(*element);
    }
    return values;
  }

  std::vector<std::string> string_list(std::string_view key) const {
    const toml::node& node = required(key, "a list of strings");
    const toml::array* array = node.as_array();
    if (array == nullptr) wrong_type(key, "a list of strings", node);
    std::vector<std::string> values;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const auto element = (*array)[i].value_exact<std::string>();
      if (!element) wrong_type(cat(key, "[", i, "]"), "a string", (*array)[i]);
      values.push_back(*element);
    }
    return values;
  }

 private:
  const toml::node& required(std::string_view key, std::string_view expected) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) fail_at(key, "required key is missing (expected ", expected, ")");
    return *node;
  }

  [[noreturn]] void wrong_type(std::string_view key, std::string_view expected,
                               const toml::node& node) const {
    fail_at(key, "expected ", expected, ", got ", type_phrase(node.type()));
  }

  // value_exact: no silent conversions (an integer where a string belongs is an error, 224.0 is no size).
  template <typename T>
  std::optional<T> value(std::string_view key, std::string_view expected) const {
    const toml::node& node = required(key, expected);
    std::optional<T> result = node.value_exact<T>();
    if (!result) wrong_type(key, expected, node);
    return result;
  }

  const std::filesystem::path& path_;
  std::string_view section_;
  const toml::table& table_;
};

// The sections a manifest may have; model, input and build are required.
constexpr std::array<std::string_view, 5> kSections = {"model", "input", "build", "quantization", "study"};

const toml::table* section(const toml::table& root, const std::filesystem::path& path, std::string_view name,
                           bool is_required) {
  const toml::node* node = root.get(name);
  if (node == nullptr) {
    if (is_required) fail(path.string(), ": key '", name, "': required section [", name, "] is missing");
    return nullptr;
  }
  const toml::table* table = node->as_table();
  if (table == nullptr) {
    fail(path.string(), ": key '", name, "': expected a table ([", name, "]), got ",
         type_phrase(node->type()));
  }
  return table;
}

QuantizationSettings read_quantization(const SectionReader& reader) {
  QuantizationSettings settings;
  settings.weights = reader.choice("weights", kGranularityNames);
  settings.activations = reader.choice("activations", kGranularityNames);
  settings.calibration = reader.choice("calibration", kCalibrationNames);
  settings.calibration_images = reader.integer("calibration_images");
  settings.recipe = reader.string("recipe");
  return settings;
}

}  // namespace

std::string_view task_name(Task task) { return name_of(kTaskNames, task); }
std::string_view granularity_name(QuantGranularity granularity) {
  return name_of(kGranularityNames, granularity);
}
std::string_view calibration_name(Calibration calibration) { return name_of(kCalibrationNames, calibration); }

Manifest parse_manifest(std::string_view text, const std::filesystem::path& path) {
  toml::table root;
  try {
    root = toml::parse(text, path.string());
  } catch (const toml::parse_error& error) {
    const toml::source_position where = error.source().begin;
    // toml++ quotes the offending character, which may be a line break: the message stays one line.
    std::string description(error.description());
    std::replace_if(
        description.begin(), description.end(), [](unsigned char c) { return c < 0x20 || c == 0x7F; }, '?');
    fail(path.string(), ":", where.line, ":", where.column, ": invalid TOML: ", description);
  }
  for (const auto& [key, value] : root) {
    bool known = false;
    for (const auto name : kSections) known = known || key.str() == name;
    if (!known) {
      fail(path.string(), ": key '", key.str(), "': unknown section (expected one of model, input, build, ",
           "quantization, study)");
    }
  }

  Manifest manifest;
  manifest.path = path;

  const SectionReader model(path, "model", *section(root, path, "model", true),
                            {"family", "hub_id", "revision", "checkpoint_sha256", "task"});
  manifest.family = model.string("family");
  manifest.hub_id = model.string("hub_id");
  manifest.revision = model.string("revision");
  manifest.checkpoint_sha256 = model.optional_string("checkpoint_sha256").value_or("");
  manifest.task = model.choice("task", kTaskNames);

  const SectionReader input(path, "input", *section(root, path, "input", true), {"size", "batch"});
  manifest.input_size = input.integer("size");
  manifest.batch_sizes = input.integer_list("batch");

  const SectionReader build(path, "build", *section(root, path, "build", true),
                            {"precision", "opt_level", "backends"});
  manifest.precision = build.choice("precision", kPrecisionNames);
  manifest.opt_level = build.integer("opt_level");
  if (build.has("backends")) manifest.backends = build.string_list("backends");

  if (const toml::table* table = section(root, path, "quantization", false)) {
    manifest.quantization = read_quantization(
        SectionReader(path, "quantization", *table,
                      {"weights", "activations", "calibration", "calibration_images", "recipe"}));
  }
  if (const toml::table* table = section(root, path, "study", false)) manifest.study = toml_to_json(*table);
  return manifest;
}

Manifest load_manifest(const std::filesystem::path& path) {
  std::error_code error;
  require(std::filesystem::exists(path, error), path.string(), ": no such manifest file");
  return parse_manifest(read_regular_file(path, kMaxManifestBytes, "a manifest"), path);
}

nlohmann::json manifest_to_json(const Manifest& manifest) {
  nlohmann::json json = {
      {"model",
       {{"family", manifest.family},
        {"hub_id", manifest.hub_id},
        {"revision", manifest.revision},
        {"checkpoint_sha256", manifest.checkpoint_sha256},
        {"task", task_name(manifest.task)}}},
      {"input", {{"size", manifest.input_size}, {"batch", manifest.batch_sizes}}},
      {"build",
       {{"precision", name_of(kPrecisionNames, manifest.precision)},
        {"opt_level", manifest.opt_level},
        {"backends", manifest.backends}}},
  };
  if (manifest.quantization) {
    const QuantizationSettings& q = *manifest.quantization;
    json["quantization"] = {{"weights", granularity_name(q.weights)},
                            {"activations", granularity_name(q.activations)},
                            {"calibration", calibration_name(q.calibration)},
                            {"calibration_images", q.calibration_images},
                            {"recipe", q.recipe}};
  }
  if (!manifest.study.is_null()) json["study"] = manifest.study;
  return json;
}

}  // namespace kiln
