#include "data/idx_import.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "core/error.h"
#include "core/progress.h"
#include "data/class_names.h"
#include "data/dataset_folder_guard.h"
#include "data/tar_writer.h"
#include "io/atomic_file.h"
#include "io/image.h"

namespace kiln {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLabelsFile = "labels.txt";

struct IdxPair {
  IdxImages images;
  IdxLabels labels;
  std::vector<std::string> names;
};

// "out/" and "out" name the same folder; paths inside it are compared relative to it.
fs::path folder_path(const fs::path& dir) {
  fs::path path = dir.lexically_normal();
  if (!path.has_filename() && path.has_parent_path()) path = path.parent_path();
  return path;
}

std::vector<NamedPath> inputs_of(const IdxImportRequest& request) {
  std::vector<NamedPath> inputs = {{"--idx-images", request.images}, {"--idx-labels", request.labels}};
  if (request.names) inputs.push_back({"--names", *request.names});
  return inputs;
}

void check_request(const IdxImportRequest& request) {
  require(request.shard_size > 0, "--shard-size: expected at least 1 image per shard");
  require(request.first > 0, "--first: expected at least 1 image");
  const std::string& prefix = request.prefix;
  const bool plain = std::all_of(prefix.begin(), prefix.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.';
  });
  require(!prefix.empty() && plain && prefix.front() != '.', "--prefix \"", prefix,
          "\": expected letters, digits, '-', '_' or '.', not starting with '.'");
}

IdxPair read_pair(const IdxImportRequest& request) {
  IdxPair pair;
  pair.images = read_idx_images(request.images, request.first);
  pair.labels = read_idx_labels(request.labels, request.first);
  check_idx_pair(pair.images, request.images, pair.labels, request.labels);
  require(request.first == kAllItems || request.first <= pair.images.count, "--first ", request.first, ": ",
          request.images.string(), " holds only ", pair.images.count, " images");
  const auto& labels = pair.labels.labels;
  const std::size_t classes = *std::max_element(labels.begin(), labels.end()) + std::size_t{1};
  if (!request.names) {
    pair.names = index_class_names(classes);
    return pair;
  }
  pair.names = read_class_names(*request.names);
  for (std::size_t index = 0; index < labels.size(); ++index) {
    require(labels[index] < pair.names.size(), request.labels.string(), ": image ", index, " has label ",
            int{labels[index]}, " but ", request.names->string(), " names ", pair.names.size(),
            " classes (0 to ", pair.names.size() - 1, ")");
  }
  return pair;
}

// The image's index in the IDX file, zero-padded to at least six digits.
std::string sample_key(std::size_t index, std::size_t count) {
  const std::size_t width = std::max<std::size_t>(6, std::to_string(count - 1).size());
  std::string key = std::to_string(index);
  return std::string(width - std::min(width, key.size()), '0') + key;
}

std::string shard_file_name(const std::string& prefix, std::size_t shard) {
  char number[16];
  std::snprintf(number, sizeof(number), "%06zu", shard);
  return prefix + "-" + number + ".tar";
}

std::vector<std::uint8_t> sample_png(const IdxImages& images, std::size_t index, const std::string& name) {
  const std::size_t pixels = images.rows * images.cols;
  const std::span<const std::uint8_t> grey(images.pixels.data() + index * pixels, pixels);
  return encode_grey_png(grey, static_cast<std::int64_t>(images.cols), static_cast<std::int64_t>(images.rows),
                         name);
}

// The files the import writes, relative to OUT.
std::set<fs::path> planned_files(const IdxImportRequest& request, const IdxPair& pair,
                                 const std::vector<std::string>& folders) {
  std::set<fs::path> files = {kLabelsFile};
  const std::size_t count = pair.images.kept();
  if (request.format == IdxImportFormat::kWebDataset) {
    const std::size_t shards = (count + request.shard_size - 1) / request.shard_size;
    for (std::size_t shard = 0; shard < shards; ++shard) files.insert(shard_file_name(request.prefix, shard));
    return files;
  }
  for (std::size_t index = 0; index < count; ++index) {
    files.insert(fs::path(folders[pair.labels.labels[index]]) /
                 (sample_key(index, pair.images.count) + ".png"));
  }
  return files;
}

std::vector<fs::path> write_shards(const IdxImportRequest& request, const IdxPair& pair, const fs::path& out,
                                   Progress* progress) {
  std::vector<fs::path> shards;
  const std::size_t count = pair.images.kept();
  for (std::size_t first = 0; first < count; first += request.shard_size) {
    const fs::path path = out / shard_file_name(request.prefix, shards.size());
    write_file_atomically(path, [&](std::ostream& stream) {
      TarWriter tar(stream, path.string());
      for (std::size_t index = first; index < std::min(count, first + request.shard_size); ++index) {
        const std::string key = sample_key(index, pair.images.count);
        tar.add(key + ".png", sample_png(pair.images, index, path.string() + ":" + key));
        const std::string label = std::to_string(pair.labels.labels[index]);
        tar.add(key + ".cls", {reinterpret_cast<const std::uint8_t*>(label.data()), label.size()});
        if (progress) progress->advance();
      }
      tar.finish();
    });
    shards.push_back(path);
  }
  return shards;
}

void write_class_folders(const IdxPair& pair, const std::vector<std::string>& folders, const fs::path& out,
                         Progress* progress) {
  for (std::size_t index = 0; index < pair.images.kept(); ++index) {
    const fs::path folder = out / folders[pair.labels.labels[index]];
    fs::create_directories(folder);
    const fs::path path = folder / (sample_key(index, pair.images.count) + ".png");
    const std::vector<std::uint8_t> png = sample_png(pair.images, index, path.string());
    write_file_atomically(path, [&](std::ostream& stream) {
      stream.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    });
    if (progress) progress->advance();
  }
}

}  // namespace

IdxImportResult import_idx(const IdxImportRequest& request) {
  check_request(request);
  const fs::path out = folder_path(request.out);
  const std::vector<NamedPath> inputs = inputs_of(request);
  check_dataset_folder(out, inputs, request.force);
  const IdxPair pair = read_pair(request);
  const bool folder_layout = request.format == IdxImportFormat::kFolder;
  const std::vector<std::string> folders =
      folder_layout ? class_folder_names(pair.names, request.names ? request.names->string() : "--idx-labels")
                    : std::vector<std::string>{};
  check_dataset_folder_files(out, planned_files(request, pair, folders), inputs);

  fs::create_directories(out);
  IdxImportResult result;
  result.images = pair.images.kept();
  result.images_in_file = pair.images.count;
  result.rows = pair.images.rows;
  result.cols = pair.images.cols;
  result.class_names = pair.names;
  result.class_counts.assign(pair.names.size(), 0);
  for (const std::uint8_t label : pair.labels.labels) ++result.class_counts[label];
  std::optional<Progress> progress;
  if (request.progress) progress.emplace("import", result.images);
  Progress* shown = progress ? &*progress : nullptr;
  if (folder_layout) {
    write_class_folders(pair, folders, out, shown);
  } else {
    result.shards = write_shards(request, pair, out, shown);
  }
  result.labels_file = out / kLabelsFile;
  const std::string text = class_names_text(folder_layout ? folders : pair.names);
  write_file_atomically(result.labels_file, [&](std::ostream& stream) { stream << text; });
  if (progress) progress->finish();
  return result;
}

}  // namespace kiln
