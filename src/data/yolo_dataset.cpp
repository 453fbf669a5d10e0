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
  if (labels && is_folder(labels->parent_path())) return checked_layout(root, {}, std::nullopt);
  return std::nullopt;
}

}  // namespace kiln
