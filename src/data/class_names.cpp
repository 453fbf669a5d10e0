#include "data/class_names.h"

#include <map>
#include <set>

#include "core/error.h"
#include "data/labels_file.h"

namespace kiln {

std::vector<std::string> read_class_names(const std::filesystem::path& path) {
  const std::map<std::string, std::int64_t> labels = read_labels_file(path);
  std::map<std::int64_t, std::string> by_index;
  for (const auto& [name, index] : labels) {
    const auto [it, inserted] = by_index.emplace(index, name);
    if (!inserted) {
      fail(path.string(), ": class ", index, " is named twice (\"", it->second, "\" and \"", name,
           "\"); expected one NAME,INDEX line per class");
    }
  }
  std::vector<std::string> names;
  for (const auto& [index, name] : by_index) {
    if (index != static_cast<std::int64_t>(names.size())) {
      fail(path.string(), ": no name for class ", names.size(), " (the names run to class ",
           by_index.rbegin()->first, "); expected one NAME,INDEX line for each class from 0");
    }
    names.push_back(name);
  }
  return names;
}

std::vector<std::string> index_class_names(std::size_t count) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < count; ++i) names.push_back(std::to_string(i));
  return names;
}

std::vector<std::string> class_folder_names(const std::vector<std::string>& names,
                                            const std::string& source) {
  std::vector<std::string> folders;
  std::map<std::string, std::size_t> seen;
  for (std::size_t index = 0; index < names.size(); ++index) {
    std::string folder = names[index];
    for (char& c : folder) {
      if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
    }
    if (!folder.empty() && folder.front() == '.') folder.front() = '_';
    const auto [it, inserted] = seen.emplace(folder, index);
    if (!inserted) {
      fail(source, ": classes ", it->second, " (\"", names[it->second], "\") and ", index, " (\"",
           names[index], "\") give the same folder name \"", folder, "\"; rename one");
    }
    folders.push_back(folder);
  }
  return folders;
}

std::optional<std::vector<std::string>> webdataset_class_names(const Dataset& dataset) {
  if (dataset.kind() != DatasetKind::kWebDataset || dataset.shards().empty()) return std::nullopt;
  const std::optional<std::filesystem::path> file = find_labels_file(dataset.shards().front().parent_path());
  if (!file) return std::nullopt;
  return read_class_names(*file);
}

std::string class_names_text(const std::vector<std::string>& names) {
  std::string text = "# class name,index\n";
  for (std::size_t index = 0; index < names.size(); ++index) {
    text += names[index] + "," + std::to_string(index) + "\n";
  }
  return text;
}

}  // namespace kiln
