#include "pipeline/detection_pass.h"

#include "core/error.h"
#include "core/progress.h"
#include "data/image_loop.h"

namespace kiln::pipeline {

std::size_t for_each_detection(DetectorEngine& engine, DetectorEngine* reference, const Dataset& dataset,
                               std::span<const std::size_t> indices, bool strict, const std::string& label,
                               const std::function<void(const DetectedImage&)>& visit) {
  const auto batch = static_cast<std::size_t>(engine.engine().batch());
  require(!reference || reference->engine().batch() == engine.engine().batch(),
          "the reference runs batches of ", reference ? reference->engine().batch() : 0, ", the plan ",
          batch);
  std::vector<Image> images;
  std::vector<std::size_t> batch_indices;
  const auto flush = [&] {
    if (images.empty()) return;
    const std::size_t real = images.size();
    while (images.size() < batch) images.push_back(images.back());  // padding, not visited
    const DetectorRun ours = engine.detect(images);
    const DetectorRun theirs = reference ? reference->detect(images) : DetectorRun{};
    for (std::size_t i = 0; i < real; ++i) {
      visit({batch_indices[i], &images[i], &ours.detections[i], reference ? &theirs.detections[i] : nullptr,
             &ours.decoded, i});
    }
    images.clear();
    batch_indices.clear();
  };
  Progress progress(label, indices.size());
  const std::size_t skipped = for_each_decoded_image(
      dataset, indices,
      [&](std::size_t index, const Image& image) {
        images.push_back(image);
        batch_indices.push_back(index);
        if (images.size() == batch) flush();
      },
      strict, &progress);
  flush();
  return skipped;
}

}  // namespace kiln::pipeline
