#include "data/yolo_data_yaml.h"

#include <charconv>
#include <map>

#include "core/error.h"
#include "core/regular_file.h"

namespace kiln {

namespace {

constexpr std::string_view kBlanks = " \t\r";
constexpr std::size_t kMaxNames = 100'000;

std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlanks) - first + 1);
}

// Drops a comment: '#' at the start or after a blank, outside quotes.
std::string_view strip_comment(std::string_view line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string unquote(std::string_view text) {
  text = trim(text);
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front())
    return std::string(text.substr(1, text.size() - 2));
  return std::string(text);
}

std::optional<std::size_t> parse_id(std::string_view text) {
  std::size_t value = 0;
  text = trim(text);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Splits "key: value" at the first ": " (or a trailing ':'); nullopt when there is none.
std::optional<std::pair<std::string_view, std::string_view>> split_key(std::string_view line) {
  std::size_t at = line.find(": ");
  if (at == std::string_view::npos && !line.empty() && line.back() == ':') at = line.size() - 1;
  if (at == std::string_view::npos) return std::nullopt;
  return std::pair{trim(line.substr(0, at)), trim(line.substr(at + 1))};
}

class NamesBuilder {
 public:
  explicit NamesBuilder(const std::string& origin) : origin_(origin) {}
  void add(std::size_t id, std::string name, const std::string& where) {
    require(by_id_.size() < kMaxNames, where, ": more than ", kMaxNames, " class names");
    require(!name.empty(), where, ": class ", id, " has an empty name");
    require(by_id_.emplace(id, std::move(name)).second, where, ": class id ", id, " is named twice");
  }
  std::size_t size() const { return by_id_.size(); }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& [id, name] : by_id_) {
      require(id == names.size(), origin_, ": names: ids must run 0 to ", by_id_.size() - 1, ", but ",
              names.size(), " is missing");
      names.push_back(name);
    }
    return names;
  }

 private:
  const std::string& origin_;
  std::map<std::size_t, std::string> by_id_;
};

void parse_flow_list(std::string_view value, NamesBuilder& names, const std::string& where) {
  require(value.size() >= 2 && value.back() == ']', where, ": names: a flow list must end in ']'");
  std::string_view items = value.substr(1, value.size() - 2);
  while (!trim(items).empty()) {
    std::size_t end = 0;
    char quote = 0;
    for (; end < items.size() && (quote || items[end] != ','); ++end) {
      if (quote && items[end] == quote) {
        quote = 0;
      } else if (!quote && (items[end] == '\'' || items[end] == '"')) {
        quote = items[end];
      }
    }
    names.add(names.size(), unquote(items.substr(0, end)), where);
    items = end < items.size() ? items.substr(end + 1) : std::string_view{};
  }
}

// One indented line under `names:`: "- NAME" or "ID: NAME".
void parse_name_line(std::string_view line, NamesBuilder& names, const std::string& where) {
  if (line.front() == '-') return names.add(names.size(), unquote(line.substr(1)), where);
  const auto pair = split_key(line);
  const auto id = pair ? parse_id(pair->first) : std::nullopt;
  require(id.has_value(), where, ": names: expected \"ID: NAME\" or \"- NAME\"");
  names.add(*id, unquote(pair->second), where);
}

}  // namespace

YoloDataYaml parse_yolo_data_yaml(std::string_view text, const std::string& origin) {
  YoloDataYaml yaml;
  NamesBuilder names(origin);
  std::optional<std::size_t> nc;
  bool in_names = false, saw_names = false;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    const std::string_view raw = strip_comment(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    const std::string where = cat(origin, ":", number);
    const bool indented = raw.front() == ' ' || raw.front() == '\t';
    if (indented) {
      if (in_names) parse_name_line(line, names, where);
      continue;  // the body of a key this reader skips
    }
    in_names = false;
    const auto pair = split_key(line);
    require(pair.has_value(), where, ": expected \"KEY: VALUE\"");
    const auto& [key, value] = *pair;
    if (key == "path" || key == "val") {
      (key == "path" ? yaml.path : yaml.val) = unquote(value);
    } else if (key == "nc") {
      nc = parse_id(value);
      require(nc.has_value(), where, ": nc: expected a whole number");
    } else if (key == "names") {
      require(!saw_names, where, ": names given twice");
      saw_names = true;
      in_names = value.empty();
      if (!value.empty()) {
        require(value.front() == '[', where, ": names: expected a list or mapping of class names");
        parse_flow_list(value, names, where);
      }
    }
  }
  yaml.names = names.names();
  require(!yaml.names.empty(), origin, ": no class names (a 'names' list or mapping)");
  require(!nc || *nc == yaml.names.size(), origin, ": nc is ", nc.value_or(0), " but names lists ",
          yaml.names.size(), " classes");
  return yaml;
}

YoloDataYaml read_yolo_data_yaml(const std::filesystem::path& file) {
  return parse_yolo_data_yaml(read_regular_file(file, kMaxDataYamlBytes, "a data.yaml"), file.string());
}

}  // namespace kiln
