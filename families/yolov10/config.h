// The config.json of a YOLOv10 checkpoint in the Hub layout (e.g. jameslahm/yolov10n): the model's yaml
// name, its task, the square input size, the number of detections kept and the class names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln {

struct YoloConfig {
  std::string model = "yolov10n.yaml";  // which of yolov10{n,s,m,b,l,x}.yaml built the checkpoint
  std::string task = "detect";
  std::int64_t imgsz = 640;        // letterboxed square input; a multiple of the largest stride, 32
  std::int64_t max_det = 300;      // detections kept by the two-stage top-k
  std::vector<std::string> names;  // class names by id
};

// Parses the JSON text of a config.json; `origin` names it in errors ("<origin>: key 'K': expected ...").
YoloConfig parse_yolo_config(const std::string& text, const std::string& origin);
YoloConfig read_yolo_config(const std::filesystem::path& path);

}  // namespace kiln
