#include "pipeline/detector_map.h"

#include "core/error.h"
#include "data/yolo_labels.h"

namespace kiln::pipeline {

DetectorMapAccumulator::DetectorMapAccumulator(std::size_t num_classes, double min_score)
    : num_classes_(num_classes), min_score_(min_score), map_(num_classes) {}

void DetectorMapAccumulator::add(const Sample& sample, const Image& image,
                                 const std::vector<Detection>& detections) {
  const auto label_file = yolo_label_path(sample.file);
  require(label_file.has_value(), sample.file.string(),
          ": not under an 'images' folder, so it has no labels");
  const auto width = static_cast<double>(image.width), height = static_cast<double>(image.height);
  std::vector<MapBox> truth;
  for (const YoloBox& box : read_yolo_labels(*label_file, num_classes_)) {
    truth.push_back({box.label, (box.cx - box.width / 2) * width, (box.cy - box.height / 2) * height,
                     (box.cx + box.width / 2) * width, (box.cy + box.height / 2) * height});
  }
  std::vector<MapBox> found;
  for (const Detection& d : detections) {
    if (!(d.score >= min_score_)) continue;
    found.push_back({d.label, d.x1, d.y1, d.x2, d.y2, d.score});
  }
  map_.add_image(truth, found);
}

}  // namespace kiln::pipeline
