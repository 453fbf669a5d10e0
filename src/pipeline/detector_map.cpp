#include "pipeline/detector_map.h"

#include "core/error.h"

namespace kiln::pipeline {

DetectorMapAccumulator::DetectorMapAccumulator(const Dataset& dataset, std::span<const std::size_t> indices,
                                               std::size_t num_classes, double min_score)
    : min_score_(min_score), map_(num_classes) {
  for (const std::size_t index : indices) {
    const std::filesystem::path& image = dataset.sample(index).file;
    const auto label_file = yolo_label_path(image);
    require(label_file.has_value(), image.string(), ": not under an 'images' folder, so it has no labels");
    labels_.emplace(index, read_yolo_labels(*label_file, num_classes));
  }
}

void DetectorMapAccumulator::add(std::size_t index, const Image& image,
                                 const std::vector<Detection>& detections) {
  const auto width = static_cast<double>(image.width), height = static_cast<double>(image.height);
  std::vector<MapBox> truth;
  for (const YoloBox& box : labels_.at(index)) {
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
