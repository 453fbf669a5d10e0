#include "data/yolo_labels.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "core/error.h"
#include "core/regular_file.h"

namespace kiln {

namespace {

constexpr std::string_view kBlanks = " \t\r";
constexpr std::size_t kFields = 5;  // class, cx, cy, w, h
constexpr std::size_t kQuotedChars = 80;

// At most kFields + 1 fields: enough to tell a line with too many apart without splitting it all.
std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = line.find_first_not_of(kBlanks);
  while (at != std::string_view::npos && fields.size() <= kFields) {
    const std::size_t end = line.find_first_of(kBlanks, at);
    fields.push_back(line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    at = end == std::string_view::npos ? end : line.find_first_not_of(kBlanks, end);
  }
  return fields;
}

std::string quoted(std::string_view text) {
  if (text.size() <= kQuotedChars) return cat('"', text, '"');
  return cat('"', text.substr(0, kQuotedChars), "...\"");
}

template <typename Number>
std::optional<Number> parse_number(std::string_view text) {
  Number value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

YoloBox parse_line(std::string_view line, const std::string& where, std::size_t num_classes) {
  const std::vector<std::string_view> fields = split_fields(line);
  require(fields.size() == kFields, where, ": expected 5 fields (class cx cy w h), got ",
          fields.size() > kFields ? "more" : std::to_string(fields.size()), ": ", quoted(line));
  const auto label = parse_number<std::int64_t>(fields[0]);
  require(label.has_value() && *label >= 0, where, ": class ", quoted(fields[0]),
          " is not a non-negative integer");
  require(static_cast<std::uint64_t>(*label) < num_classes, where, ": class ", *label, " but there are ",
          num_classes, " class names (ids 0 to ", num_classes - 1, ")");
  YoloBox box;
  box.label = *label;
  double* values[] = {&box.cx, &box.cy, &box.width, &box.height};
  const char* names[] = {"cx", "cy", "w", "h"};
  for (std::size_t i = 0; i < 4; ++i) {
    const auto value = parse_number<double>(fields[i + 1]);
    require(value.has_value() && std::isfinite(*value), where, ": ", names[i], " ", quoted(fields[i + 1]),
            " is not a finite number");
    require(*value >= 0.0 && *value <= 1.0, where, ": ", names[i], " ", quoted(fields[i + 1]),
            " is outside [0, 1] (coordinates are fractions of the image's size)");
    *values[i] = *value;
  }
  return box;
}

}  // namespace

std::vector<YoloBox> parse_yolo_labels(std::string_view text, const std::string& origin,
                                       std::size_t num_classes) {
  require(num_classes > 0, origin, ": no class names to check the labels against");
  std::vector<YoloBox> boxes;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (line.find_first_not_of(kBlanks) == std::string_view::npos) continue;
    boxes.push_back(parse_line(line, cat(origin, ":", number), num_classes));
  }
  return boxes;
}

std::vector<YoloBox> read_yolo_labels(const std::filesystem::path& file, std::size_t num_classes) {
  std::error_code error;
  if (!std::filesystem::exists(file, error)) return {};
  return parse_yolo_labels(read_regular_file(file, kMaxYoloLabelFileBytes, "a label file"), file.string(),
                           num_classes);
}

std::optional<std::filesystem::path> yolo_label_path(const std::filesystem::path& image) {
  const std::string path = std::filesystem::absolute(image).lexically_normal().string();
  const std::size_t at = path.rfind("/images/");
  if (at == std::string::npos) return std::nullopt;
  std::filesystem::path label = path.substr(0, at) + "/labels/" + path.substr(at + 8);
  label.replace_extension(".txt");
  return label;
}

}  // namespace kiln
