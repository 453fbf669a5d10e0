#include "data/yolo_dataset.h"

#include <system_error>

#include "core/error.h"
#include "data/yolo_data_yaml.h"
#include "data/yolo_labels.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

bool is_folder(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

// The labels folder of a folder of images, which must exist; nullopt when the path has no "images".
std::optional<fs::path> labels_folder(const fs::path& images) {
  const auto label = yolo_label_path(images / "x.jpg");
  if (!label) return std::nullopt;
  return label->parent_path();
}

YoloLayout checked_layout(fs::path images, std::vector<std::string> names,
                          std::optional<fs::path> data_yaml) {
  require(is_folder(images), images.string(), ": no images folder",
          data_yaml ? cat(" (", data_yaml->string(), " names it as val)") : std::string());
  const auto labels = labels_folder(images);
  require(labels.has_value(), images.string(),
          ": the images folder's path must hold an 'images' folder for its labels to be found "
          "(/images/ -> /labels/)");
  require(is_folder(*labels), labels->string(), ": no labels folder for the images in ", images.string(),
          " (YOLO layout: /images/ -> /labels/, NAME.jpg -> NAME.txt)");
  return {std::move(images), *labels, std::move(names), std::move(data_yaml)};
}

// The layout of a folder of images given without its data.yaml, with the names of the data.yaml above it
// (up to the set's root, two levels above images/val) whose val is this folder: without them the classes
// would take the model's names, another set's.
YoloLayout layout_of_images(const fs::path& images) {
  std::error_code error;
  const fs::path folder = fs::weakly_canonical(images, error);
  if (error) return checked_layout(images, {}, std::nullopt);
  fs::path above = folder.parent_path();
  for (int level = 0; level < 3 && !above.empty(); ++level, above = above.parent_path()) {
    const fs::path yaml_file = above / "data.yaml";
    std::error_code missing;
    if (!fs::is_regular_file(yaml_file, missing)) continue;
    const YoloDataYaml yaml = read_yolo_data_yaml(yaml_file);
    const fs::path base = yaml.path ? above / *yaml.path : above;
    std::error_code unresolved;
    if (yaml.val && fs::weakly_canonical(base / *yaml.val, unresolved) == folder && !unresolved)
      return checked_layout(images, yaml.names, yaml_file);
    break;
  }
  return checked_layout(images, {}, std::nullopt);
}

}  // namespace

std::optional<YoloLayout> find_yolo_layout(const std::string& data) {
  const fs::path root = data;
  if (!is_folder(root)) return std::nullopt;
  const fs::path yaml_file = root / "data.yaml";
  std::error_code error;
  if (fs::is_regular_file(yaml_file, error)) {
    const YoloDataYaml yaml = read_yolo_data_yaml(yaml_file);
    require(yaml.val.has_value(), yaml_file.string(), ": no 'val' key naming the images to evaluate");
    const fs::path base = yaml.path ? root / *yaml.path : root;
    return checked_layout((base / *yaml.val).lexically_normal(), yaml.names, yaml_file);
  }
  if (is_folder(root / "images")) {
    const fs::path images = is_folder(root / "images" / "val") ? root / "images" / "val" : root / "images";
    return checked_layout(images, {}, std::nullopt);
  }
  const auto labels = labels_folder(root);
  if (labels && is_folder(labels->parent_path())) return layout_of_images(root);
  return std::nullopt;
}

}  // namespace kiln
