// An Ultralytics data.yaml, the part evaluation needs: `path` (the dataset root, relative to the file
// when relative), `val` (the validation images folder, relative to the root), `nc` and `names` (a block
// mapping "  0: person", a block list "  - person", or a flow list "[person, car]"). Other keys, and
// the indented lines under them, are skipped. This is a line reader for that subset, not YAML.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

inline constexpr std::uintmax_t kMaxDataYamlBytes = 1u << 20;

struct YoloDataYaml {
  std::optional<std::string> path, val;
  std::vector<std::string> names;  // by class id
};

// `origin` names the text in errors ("ORIGIN:LINE: ..."). Fails without names, when nc disagrees with
// them, or when mapping ids are not 0 to N-1 each once.
YoloDataYaml parse_yolo_data_yaml(std::string_view text, const std::string& origin);

YoloDataYaml read_yolo_data_yaml(const std::filesystem::path& file);

}  // namespace kiln
