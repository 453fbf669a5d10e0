#include "data/labels_file.h"

#include <charconv>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/regular_file.h"

namespace kiln {

namespace {

constexpr std::string_view kSpaces = " \t\r";
// A line per image: 64 MB is a million names of 60 characters.
constexpr std::uint64_t kMaxLabelsFileBytes = 64ull << 20;

std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(kSpaces);
  return text.substr(first, last - first + 1);
}

std::optional<std::int64_t> parse_label(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

struct LabelLine {
  std::string_view name;
  std::string_view label;
};

// Splits at the last comma, else at the last run of blanks; nullopt when there is no separator.
std::optional<LabelLine> split_line(std::string_view line) {
  std::size_t at = line.rfind(',');
  std::size_t after = at + 1;
  if (at == std::string_view::npos) {
    const std::size_t label_start = line.find_last_of(" \t");
    if (label_start == std::string_view::npos) return std::nullopt;
    after = label_start + 1;
    at = line.find_last_not_of(" \t", label_start);
    at = at == std::string_view::npos ? 0 : at + 1;
  }
  return LabelLine{trim(line.substr(0, at)), trim(line.substr(after))};
}

}  // namespace

std::optional<std::filesystem::path> find_labels_file(const std::filesystem::path& dir) {
  std::error_code ec;
  const std::filesystem::path txt = dir / "labels.txt";
  const std::filesystem::path csv = dir / "labels.csv";
  const bool has_txt = std::filesystem::is_regular_file(txt, ec);
  const bool has_csv = std::filesystem::is_regular_file(csv, ec);
  if (has_txt && has_csv) fail(dir.string(), ": has both labels.txt and labels.csv (keep one)");
  if (has_txt) return txt;
  if (has_csv) return csv;
  return std::nullopt;
}

std::map<std::string, std::int64_t> read_labels_file(const std::filesystem::path& path) {
  std::istringstream in(read_regular_file(path, kMaxLabelsFileBytes, "a labels file"));
  std::map<std::string, std::int64_t> labels;
  std::map<std::string, int> first_line;
  bool first = true;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    const std::string_view line = trim(text);
    if (line.empty() || line.front() == '#') continue;
    const bool header_allowed = first;
    first = false;
    const auto parts = split_line(line);
    const auto label = parts ? parse_label(parts->label) : std::nullopt;
    if (!label || parts->name.empty()) {
      if (header_allowed && parts) continue;
      fail(path.string(), ":", number, ": expected NAME,LABEL or NAME LABEL with an integer label, got \"",
           line, "\"");
    }
    if (*label < 0) fail(path.string(), ":", number, ": label ", *label, " is negative");
    const std::string name(parts->name);
    const auto [it, inserted] = first_line.emplace(name, number);
    if (!inserted) {
      fail(path.string(), ":", number, ": \"", name, "\" is listed again (first on line ", it->second, ")");
    }
    labels.emplace(name, *label);
  }
  if (in.bad()) fail(path.string(), ": read error");
  if (labels.empty()) fail(path.string(), ": no labels (expected NAME,LABEL or NAME LABEL lines)");
  return labels;
}

}  // namespace kiln
