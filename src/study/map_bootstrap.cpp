#include "study/map_bootstrap.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "study/study_decision.h"

namespace kiln {

std::vector<std::array<bool, kMapIouThresholds>> match_image(const MapImage& image) {
  const auto thresholds = map_iou_thresholds();
  const std::vector<MapBox>& found = image.detections;
  std::vector<std::size_t> order(found.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return found[a].score > found[b].score; });
  std::vector<std::array<bool, kMapIouThresholds>> matched(found.size());
  std::vector<std::array<bool, kMapIouThresholds>> taken(image.truth.size());
  for (const std::size_t d : order) {
    for (std::size_t t = 0; t < kMapIouThresholds; ++t) {
      std::size_t best = image.truth.size();
      double best_iou = thresholds[t];
      for (std::size_t g = 0; g < image.truth.size(); ++g) {
        if (image.truth[g].label != found[d].label || taken[g][t]) continue;
        const double iou = map_box_iou(found[d], image.truth[g]);
        if (iou < best_iou) continue;
        best_iou = iou;  // an equal IoU moves to the later box, as DetectionMap does
        best = g;
      }
      if (best == image.truth.size()) continue;
      taken[best][t] = true;
      matched[d][t] = true;
    }
  }
  return matched;
}

WeightedMap::WeightedMap(const std::vector<MapImage>& images, std::size_t num_classes)
    : images_(images.size()),
      ranked_(num_classes),
      truth_in_(num_classes, std::vector<std::uint32_t>(images.size(), 0)) {
  for (std::size_t i = 0; i < images.size(); ++i) {
    for (const MapBox& box : images[i].truth) {
      require(box.label >= 0 && static_cast<std::size_t>(box.label) < num_classes, "mAP: ground-truth label ",
              box.label, " is not below ", num_classes);
      ++truth_in_[static_cast<std::size_t>(box.label)][i];
    }
    const auto matched = match_image(images[i]);
    for (std::size_t d = 0; d < images[i].detections.size(); ++d) {
      const MapBox& box = images[i].detections[d];
      require(box.label >= 0 && static_cast<std::size_t>(box.label) < num_classes, "mAP: detection label ",
              box.label, " is not below ", num_classes);
      ranked_[static_cast<std::size_t>(box.label)].push_back(
          {box.score, static_cast<std::uint32_t>(i), matched[d]});
    }
  }
  // Best first; equal scores keep image order, then the order given (stable), as DetectionMap ranks.
  for (auto& ranked : ranked_) {
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return a.score > b.score; });
  }
}

MapPair WeightedMap::map(const std::vector<std::uint32_t>& weights) const {
  require(weights.size() == images_, "mAP: ", weights.size(), " weights for ", images_, " images");
  MapPair sum;
  std::size_t classes = 0;
  std::vector<bool> column;
  for (std::size_t label = 0; label < ranked_.size(); ++label) {
    std::size_t truth = 0;
    for (std::size_t i = 0; i < images_; ++i) truth += std::size_t{truth_in_[label][i]} * weights[i];
    if (truth == 0) continue;
    ++classes;
    double ap_sum = 0.0;
    for (std::size_t t = 0; t < kMapIouThresholds; ++t) {
      column.clear();
      for (const Ranked& r : ranked_[label]) column.insert(column.end(), weights[r.image], r.matched[t]);
      const double ap = interpolated_ap(column, truth);
      if (t == 0) sum.map50 += ap;
      ap_sum += ap;
    }
    sum.map50_95 += ap_sum / static_cast<double>(kMapIouThresholds);
  }
  if (classes == 0) return {};
  return {sum.map50 / static_cast<double>(classes), sum.map50_95 / static_cast<double>(classes)};
}

std::vector<std::uint32_t> bootstrap_weights(std::size_t images, std::uint64_t seed, std::size_t index) {
  // One generator per resample, seeded from (seed, index), so any resample is drawn on its own.
  std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                         static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32)};
  std::mt19937_64 generator(sequence);
  std::vector<std::uint32_t> weights(images, 0);
  for (std::size_t k = 0; k < images; ++k) {
    // The top 32 bits scaled to [0, images): exact integer arithmetic, the same everywhere.
    const std::uint64_t draw = ((generator() >> 32) * static_cast<std::uint64_t>(images)) >> 32;
    ++weights[static_cast<std::size_t>(draw)];
  }
  return weights;
}

namespace {

// numpy.percentile's default (linear between the two nearest order statistics) of sorted values.
double percentile(const std::vector<double>& sorted, double fraction) {
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Interval interval_of(double estimate, std::vector<double> drops) {
  std::sort(drops.begin(), drops.end());
  return {estimate, std::min(estimate, percentile(drops, 0.025)),
          std::max(estimate, percentile(drops, 0.975))};
}

}  // namespace

MapDrop paired_map_bootstrap(const WeightedMap& baseline, const WeightedMap& variant, std::size_t resamples,
                             std::uint64_t seed) {
  require(baseline.images() == variant.images(), "paired mAP bootstrap: the baseline has ", baseline.images(),
          " images, the variant ", variant.images());
  require(resamples >= 1 && baseline.images() >= 1, "paired mAP bootstrap: no image or no resample");
  const std::vector<std::uint32_t> all(baseline.images(), 1);
  const MapPair base = baseline.map(all), ours = variant.map(all);
  std::vector<double> drops50, drops50_95;
  for (std::size_t r = 0; r < resamples; ++r) {
    const std::vector<std::uint32_t> weights = bootstrap_weights(baseline.images(), seed, r);
    const MapPair b = baseline.map(weights), v = variant.map(weights);
    drops50.push_back(b.map50 - v.map50);
    drops50_95.push_back(b.map50_95 - v.map50_95);
  }
  return {interval_of(base.map50 - ours.map50, std::move(drops50)),
          interval_of(base.map50_95 - ours.map50_95, std::move(drops50_95)), resamples, seed};
}

nlohmann::json to_json(const MapDrop& drop) {
  return {{"map50_drop", to_json(drop.map50)},
          {"map50_95_drop", to_json(drop.map50_95)},
          {"drop_definition", "baseline mAP - variant mAP on the same held-out images"},
          {"interval_method", "paired bootstrap over images, percentile 2.5 .. 97.5"},
          {"resamples", drop.resamples},
          {"seed", drop.seed}};
}

}  // namespace kiln
