#include "families/yolov10/config.h"

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/user_json.h"

namespace kiln {

namespace {

constexpr std::int64_t kLargestStride = 32;  // P5: every input side must divide into it
// YOLOv10 is trained at 640 and run up to a few times that; a larger side is a typo, and its activations
// would need tens of GB before the first layer ran (a 100000-pixel side: 120 GB for the input alone).
constexpr std::int64_t kLargestImgsz = 4096;
constexpr std::array<std::string_view, 6> kModels = {"yolov10n.yaml", "yolov10s.yaml", "yolov10m.yaml",
                                                     "yolov10b.yaml", "yolov10l.yaml", "yolov10x.yaml"};

std::int64_t positive_integer(const nlohmann::json& root, const char* key, const std::string& origin,
                              std::int64_t fallback) {
  if (!root.contains(key)) return fallback;
  const auto& value = root[key];
  require(value.is_number_integer() && value.get<std::int64_t>() > 0, origin, ": key '", key,
          "': expected a positive integer, got ", value.dump());
  return value.get<std::int64_t>();
}

YoloConfig read_config(const nlohmann::json& root, const std::string& origin) {
  require(root.is_object(), origin, ": expected a JSON object");
  YoloConfig config;

  require(root.contains("model") && root["model"].is_string(), origin,
          ": key 'model': expected the model's yaml name, such as \"yolov10n.yaml\"");
  config.model = root["model"].get<std::string>();
  bool known = false;
  std::string list;
  for (const auto model : kModels) {
    known = known || model == config.model;
    list += list.empty() ? "" : ", ";
    list += model;
  }
  require(known, origin, ": key 'model': unknown model '", config.model, "' (known: ", list, ")");

  if (root.contains("task")) {
    require(root["task"].is_string(), origin, ": key 'task': expected a string");
    config.task = root["task"].get<std::string>();
  }
  require(config.task == "detect", origin, ": key 'task': expected \"detect\", got \"", config.task, "\"");

  config.imgsz = positive_integer(root, "imgsz", origin, config.imgsz);
  require(config.imgsz % kLargestStride == 0, origin, ": key 'imgsz': expected a multiple of ",
          kLargestStride, " (the stride of the coarsest detection level), got ", config.imgsz);
  require(config.imgsz <= kLargestImgsz, origin, ": key 'imgsz': expected at most ", kLargestImgsz,
          " pixels, got ", config.imgsz);
  config.max_det = positive_integer(root, "max_det", origin, config.max_det);

  require(root.contains("names"), origin,
          ": key 'names': missing (the class names, {\"0\": \"person\", ...})");
  const auto& names = root["names"];
  if (names.is_array()) {
    for (const auto& name : names) {
      require(name.is_string(), origin, ": key 'names': expected strings, got ", name.dump());
      config.names.push_back(name.get<std::string>());
    }
  } else {
    require(names.is_object(), origin, ": key 'names': expected an object of id -> name or a list of names");
    config.names.resize(names.size());
    for (const auto& [id, name] : names.items()) {
      std::size_t index = 0;
      std::size_t used = 0;
      try {
        index = std::stoul(id, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      require(used == id.size() && index < names.size(), origin, ": key 'names': ids must be 0 .. ",
              names.size() - 1, ", got '", id, "'");
      require(name.is_string(), origin, ": key 'names.", id, "': expected a string");
      config.names[index] = name.get<std::string>();
    }
  }
  require(!config.names.empty(), origin, ": key 'names': no classes");
  return config;
}

}  // namespace

YoloConfig parse_yolo_config(const std::string& text, const std::string& origin) {
  const nlohmann::json root = parse_user_json(text, origin);
  return with_json_errors(origin, "unexpected JSON value", [&] { return read_config(root, origin); });
}

YoloConfig read_yolo_config(const std::filesystem::path& path) {
  return parse_yolo_config(read_regular_file(path, kMaxConfigBytes, "a config.json"), path.string());
}

}  // namespace kiln
