// How much a detector variant's mAP drops against the baseline, with a 95% interval from a paired
// bootstrap over the held-out images: each resample draws as many images as there are, with
// replacement, from a fixed-seed generator, and both engines' mAP are computed on that same multiset,
// so the interval counts the pairing (an image hard for one is hard for the other). Why a bootstrap:
// mAP is a ranking statistic over all images together, with no closed-form variance, and the images,
// not the boxes, are the independent units.
//
// Matching is per image (eval/detection_map.h: a detection matches the best unmatched ground-truth box
// of its class in its own image), so each image is matched once and a resample only reweights the
// ranked list. Ties: detections of equal score rank by image, then by their order; the copies of one
// image drawn k times rank next to each other (identical scores). With every image drawn once, the
// result is DetectionMap's exactly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "eval/detection_map.h"
#include "eval/accuracy_statistics.h"

namespace kiln {

// One image's ground truth and its detections (already at or above the mAP's minimum score).
struct MapImage {
  std::vector<MapBox> truth;
  std::vector<MapBox> detections;
};

struct MapPair {
  double map50 = 0.0;
  double map50_95 = 0.0;
};

// The images matched once; mAP for any number of copies of each.
class WeightedMap {
 public:
  // Fails when a label is not below num_classes.
  WeightedMap(const std::vector<MapImage>& images, std::size_t num_classes);
  std::size_t images() const { return images_; }
  // mAP over classes with ground truth, image i counted weights[i] times (one weight per image).
  MapPair map(const std::vector<std::uint32_t>& weights) const;

 private:
  struct Ranked {
    double score = 0.0;
    std::uint32_t image = 0;
    std::array<bool, kMapIouThresholds> matched{};
  };
  std::size_t images_ = 0;
  std::vector<std::vector<Ranked>> ranked_;           // per class, best first
  std::vector<std::vector<std::uint32_t>> truth_in_;  // per class, per image: ground-truth boxes
};

// Per image, per detection (in the order given), whether it matches at each IoU threshold.
std::vector<std::array<bool, kMapIouThresholds>> match_image(const MapImage& image);

// How many times each of `images` images a resample draws: resample `index` of the stream `seed`
// (mt19937_64, an explicit mapping to indices, so every platform draws the same).
std::vector<std::uint32_t> bootstrap_weights(std::size_t images, std::uint64_t seed, std::size_t index);

// Baseline mAP minus variant mAP on the same images: the estimate on all of them, the interval the
// 2.5th and 97.5th percentiles of the resamples' drops.
struct MapDrop {
  Interval map50;
  Interval map50_95;
  std::size_t resamples = 0;
  std::uint64_t seed = 0;
};

// Fails unless both have the same number of images.
MapDrop paired_map_bootstrap(const WeightedMap& baseline, const WeightedMap& variant, std::size_t resamples,
                             std::uint64_t seed);

nlohmann::json to_json(const MapDrop& drop);

}  // namespace kiln
