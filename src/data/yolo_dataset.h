// A labelled detection set in the Ultralytics/YOLO layout (see yolo_labels.h for the label files):
//
// - ROOT/data.yaml (yolo_data_yaml.h): its `val` folder of images, under `path` when given, relative
//   to the file; its names are the classes;
// - ROOT/images/ beside ROOT/labels/: the images in ROOT/images/val when that folder exists, else in
//   ROOT/images;
// - a folder of images whose path holds an "images" folder (ROOT/images/val), with its labels folder
//   where the convention puts it (ROOT/labels/val), and the names of the data.yaml up to two folders
//   above it whose `val` is that folder.
//
// Without data.yaml there are no names; the labels' classes are then checked against the model's.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct YoloLayout {
  std::filesystem::path images;    // the folder of images
  std::filesystem::path labels;    // its labels folder
  std::vector<std::string> names;  // from data.yaml; empty without one
  std::optional<std::filesystem::path> data_yaml;
};

// The layout DATA names, or nullopt when DATA is a folder in none of these layouts (or no folder). Fails
// with one line when DATA is one of them but a part is missing (the images or the labels folder).
std::optional<YoloLayout> find_yolo_layout(const std::string& data);

}  // namespace kiln
