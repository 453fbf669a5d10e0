// The header's "detector" section: what a detector plan needs to turn the graph's decoded predictions
// into boxes without its checkpoint or config.json (see plan_format.h). A plan that has the section
// sets the kDetectorFlag bit, so a kiln that does not know detector plans refuses it instead of running
// it as a classifier.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/json_field.h"

namespace kiln {

struct DetectorSection {
  std::string model;  // the network's name in its own code, e.g. "yolov10n.yaml"
  std::string task = "detect";
  std::int64_t image_size = 0;           // letterboxed square input side
  std::int64_t max_det = 0;              // detections the selection keeps per image
  std::vector<std::string> class_names;  // by class id; as many as the graph's class scores
  std::vector<std::int64_t> strides;     // input pixels per cell of each detection level, finest first
  std::int64_t letterbox_fill = 0;       // the grey level padding the letterboxed image
};

// Fails on a section no plan can hold (no classes, a non-positive size).
nlohmann::json detector_section_to_json(const DetectorSection& section);
DetectorSection detector_section_from_json(const JsonField& field);

}  // namespace kiln
