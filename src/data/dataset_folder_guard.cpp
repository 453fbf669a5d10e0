#include "data/dataset_folder_guard.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "data/dataset.h"
#include "data/webdataset.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// True for the files open_dataset would read as part of a dataset in this folder.
bool read_as_dataset(const fs::path& path) {
  const std::string name = path.filename().string();
  if (name == "labels.txt" || name == "labels.csv") return true;
  const std::string extension = lower(path.extension().string());
  return is_shard_name(path) || (extension.size() > 1 && is_image_extension(extension.substr(1)));
}

}  // namespace

void check_dataset_folder(const fs::path& dir, const std::vector<NamedPath>& inputs, bool force) {
  refuse_output_over_inputs({"-o", dir}, inputs);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  require(fs::is_directory(dir, ec), dir.string(), ": -o names a file; the dataset is written as a folder");
  require(force || fs::is_empty(dir, ec), dir.string(),
          ": -o is not empty: give --force to write into it (files of the same names are replaced, none "
          "deleted), or choose another -o");
}

void check_dataset_folder_files(const fs::path& dir, const std::set<fs::path>& files,
                                const std::vector<NamedPath>& inputs) {
  std::error_code root_error;
  const fs::path root = fs::weakly_canonical(dir, root_error);
  for (const NamedPath& input : inputs) {
    std::error_code input_error;
    const fs::path relative = fs::weakly_canonical(input.path, input_error).lexically_relative(root);
    if (!root_error && !input_error && files.count(relative) > 0) {
      fail((dir / relative).string(), ": -o would write over ", input.option, " '", input.path.string(),
           "'; kiln never writes over its inputs: choose another -o");
    }
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  fs::recursive_directory_iterator it(dir, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code entry_error;  // a broken link is simply not a folder
    const bool folder = it->is_directory(entry_error);
    if (!name.empty() && name.front() == '.') {
      if (folder) it.disable_recursion_pending();
      continue;  // the readers skip hidden files and folders
    }
    if (folder || !read_as_dataset(it->path())) continue;
    if (files.count(it->path().lexically_relative(dir)) > 0) continue;
    fail(it->path().string(),
         ": in -o, and would be read as part of the new dataset, but it is not one of "
         "the files written (kiln deletes nothing): move it, or choose another -o");
  }
  require(!ec, dir.string(), ": cannot list the folder (", ec.message(), ")");
}

}  // namespace kiln
