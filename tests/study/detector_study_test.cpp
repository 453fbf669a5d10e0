// The detector study's own logic: the paired mAP bootstrap (against DetectionMap, and its resampling),
// the box parity summary, the [study] keys a detector reads, and the three-outcome decision.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "manifest/manifest.h"
#include "study/detector_decision.h"
#include "study/detector_study_spec.h"
#include "study/map_bootstrap.h"
#include "study/study_runner.h"

namespace kiln {
namespace {

// Random images: a few ground-truth boxes of 3 classes, and detections near them (some off, some of
// another class) with random scores.
std::vector<MapImage> random_images(std::uint32_t seed, std::size_t count) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<MapImage> images(count);
  for (MapImage& image : images) {
    const int truths = static_cast<int>(rng() % 4);
    for (int t = 0; t < truths; ++t) {
      const double x = 100 * unit(rng), y = 100 * unit(rng), w = 10 + 40 * unit(rng), h = 10 + 40 * unit(rng);
      image.truth.push_back({static_cast<std::int64_t>(rng() % 3), x, y, x + w, y + h, 1.0});
    }
    const int found = static_cast<int>(rng() % 6);
    for (int d = 0; d < found; ++d) {
      MapBox box =
          image.truth.empty() || rng() % 4 == 0
              ? MapBox{0, 50 * unit(rng), 50 * unit(rng), 60 + 20 * unit(rng), 60 + 20 * unit(rng), 1.0}
              : image.truth[rng() % image.truth.size()];
      const double jitter = 8 * unit(rng);
      box.x1 += jitter;
      box.x2 += jitter;
      if (rng() % 5 == 0) box.label = static_cast<std::int64_t>(rng() % 3);
      box.score = unit(rng);
      image.detections.push_back(box);
    }
  }
  return images;
}

MapResult reference_map(const std::vector<MapImage>& images, std::size_t classes) {
  DetectionMap map(classes);
  for (const MapImage& image : images) map.add_image(image.truth, image.detections);
  return map.result();
}

TEST(WeightedMap, EveryImageOnceIsDetectionMapsResult) {
  for (std::uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<MapImage> images = random_images(seed, 30);
    const MapResult expected = reference_map(images, 3);
    const MapPair got = WeightedMap(images, 3).map(std::vector<std::uint32_t>(images.size(), 1));
    EXPECT_DOUBLE_EQ(got.map50, expected.map50) << "seed " << seed;
    EXPECT_DOUBLE_EQ(got.map50_95, expected.map50_95) << "seed " << seed;
  }
}

TEST(WeightedMap, WeightsCountImagesAsCopies) {
  const std::vector<MapImage> images = random_images(7, 25);
  std::vector<std::uint32_t> weights(images.size(), 0);
  std::vector<MapImage> copies;
  for (std::size_t i = 0; i < images.size(); ++i) {
    weights[i] = static_cast<std::uint32_t>(i % 3);  // 0, 1 or 2 copies
    for (std::uint32_t k = 0; k < weights[i]; ++k) copies.push_back(images[i]);
  }
  const MapResult expected = reference_map(copies, 3);
  const MapPair got = WeightedMap(images, 3).map(weights);
  EXPECT_DOUBLE_EQ(got.map50, expected.map50);
  EXPECT_DOUBLE_EQ(got.map50_95, expected.map50_95);
}

TEST(WeightedMap, RefusesALabelOutsideTheClasses) {
  std::vector<MapImage> images(1);
  images[0].truth.push_back({5, 0, 0, 10, 10, 1.0});
  EXPECT_THROW(WeightedMap(images, 3), Error);
}

TEST(MatchImage, TheBestScoringDetectionTakesTheBox) {
  MapImage image;
  image.truth = {{0, 0, 0, 10, 10, 1.0}};
  image.detections = {{0, 0, 0, 10, 9, 0.4}, {0, 0, 0, 10, 10, 0.9}, {1, 0, 0, 10, 10, 0.95}};
  const auto matched = match_image(image);
  EXPECT_FALSE(matched[0][0]) << "the box was taken by the better-scoring detection";
  EXPECT_TRUE(matched[1][0]);
  EXPECT_TRUE(matched[1][kMapIouThresholds - 1]) << "IoU 1 matches at 0.95";
  EXPECT_FALSE(matched[2][0]) << "another class";
}

TEST(BootstrapWeights, DrawEveryImageSlotOnceAndRepeatForTheSameSeed) {
  const auto a = bootstrap_weights(50, 1, 0);
  std::uint32_t total = 0;
  for (const std::uint32_t w : a) total += w;
  EXPECT_EQ(total, 50u);
  EXPECT_EQ(a, bootstrap_weights(50, 1, 0));
  EXPECT_NE(a, bootstrap_weights(50, 1, 1));
  EXPECT_NE(a, bootstrap_weights(50, 2, 0));
}

TEST(PairedMapBootstrap, TheSameDetectionsDropNothing) {
  const std::vector<MapImage> images = random_images(3, 40);
  const WeightedMap map(images, 3);
  const MapDrop drop = paired_map_bootstrap(map, map, 200, 1);
  EXPECT_EQ(drop.map50_95.estimate, 0.0);
  EXPECT_EQ(drop.map50_95.low, 0.0);
  EXPECT_EQ(drop.map50_95.high, 0.0);
  EXPECT_EQ(drop.resamples, 200u);
}

TEST(PairedMapBootstrap, LosingHalfTheImagesDetectionsIsAClearDrop) {
  const std::vector<MapImage> images = random_images(4, 80);
  std::vector<MapImage> worse = images;
  for (std::size_t i = 0; i < worse.size(); i += 2) worse[i].detections.clear();  // half the recall gone
  const MapDrop drop = paired_map_bootstrap(WeightedMap(images, 3), WeightedMap(worse, 3), 300, 5);
  const MapResult full = reference_map(images, 3), less = reference_map(worse, 3);
  EXPECT_DOUBLE_EQ(drop.map50.estimate, full.map50 - less.map50);
  EXPECT_GT(drop.map50.estimate, 0.0);
  EXPECT_LE(drop.map50.low, drop.map50.estimate);
  EXPECT_GE(drop.map50.high, drop.map50.estimate);
  EXPECT_GT(drop.map50.low, 0.0) << "a large drop on 80 images is clear of zero";
  // Deterministic: the same seed gives the same interval.
  const MapDrop again = paired_map_bootstrap(WeightedMap(images, 3), WeightedMap(worse, 3), 300, 5);
  EXPECT_EQ(again.map50.low, drop.map50.low);
  EXPECT_EQ(again.map50.high, drop.map50.high);
}

TEST(PairedMapBootstrap, RefusesUnpairedImages) {
  EXPECT_THROW(
      paired_map_bootstrap(WeightedMap(random_images(1, 5), 3), WeightedMap(random_images(1, 6), 3), 100, 1),
      Error);
}

BoxParitySummary parity(std::size_t missing, std::size_t extra, double iou, double score_diff) {
  BoxParitySummary p;
  p.images = 10;
  p.reference_boxes = 20;
  p.matched = 20 - missing;
  p.missing = missing;
  p.extra = extra;
  p.worst_iou = iou;
  p.worst_score_diff = score_diff;
  p.worst_iou_image = "a.jpg";
  p.worst_score_image = "b.jpg";
  return p;
}

TEST(BoxParitySummary, TheGateWantsEveryFigure) {
  EXPECT_TRUE(parity(0, 0, 0.95, 0.001).passes());
  EXPECT_FALSE(parity(1, 0, 0.95, 0.001).passes());
  EXPECT_FALSE(parity(0, 1, 0.95, 0.001).passes());
  EXPECT_FALSE(parity(0, 0, 0.85, 0.001).passes());
  EXPECT_FALSE(parity(0, 0, 0.95, 0.01).passes());
  EXPECT_EQ(parity_failures(parity(0, 0, 0.95, 0.001)), "");
  EXPECT_EQ(parity_failures(parity(2, 0, 0.85, 0.001)), "2 missing, worst IoU 0.850 < 0.90 (a.jpg)");
  EXPECT_NE(parity_text(parity(1, 0, 0.95, 0.001)).find("19 of 20 boxes"), std::string::npos);
  EXPECT_NE(parity_text(parity(0, 1, 0.95, 0.001)).find("fails the gate"), std::string::npos);
  BoxParitySummary none;
  EXPECT_TRUE(none.compared_nothing());
  EXPECT_NE(parity_text(none).find("nothing was compared"), std::string::npos);
}

Manifest detector_manifest(const std::string& study) {
  return parse_manifest(R"([model]
family = "yolov10"
hub_id = "jameslahm/yolov10n"
revision = "main"
task = "detection"
[input]
size = 640
batch = [1]
[build]
precision = "fp16"
opt_level = 3
[study]
variants = ["fp32", "fp16", "fp8 all max"]
)" + study,
                        "families/yolov10/manifest.toml");
}

TEST(DetectorStudySpec, ReadsTheDetectorsKeysAndTheSharedOnes) {
  const DetectorStudySpec spec = detector_study_spec_from_manifest(
      detector_manifest("max_map_drop = 0.02\nparity_min_score = 0.3\nbootstrap_resamples = 200\nrounds = 2\n"
                        "demo_config = \"demo_config.json\"\n"));
  EXPECT_DOUBLE_EQ(spec.max_map_drop, 0.02);
  EXPECT_DOUBLE_EQ(spec.max_map50_drop, 0.01);
  EXPECT_DOUBLE_EQ(spec.parity_min_score, 0.3);
  EXPECT_EQ(spec.bootstrap_resamples, 200u);
  EXPECT_EQ(spec.study.rounds, 2);
  EXPECT_EQ(spec.study.variants.size(), 3u);
  ASSERT_TRUE(spec.demo_config.has_value());
  EXPECT_EQ(*spec.demo_config, std::filesystem::path("families/yolov10/demo_config.json"));
  EXPECT_FALSE(spec.to_json().contains("max_top1_drop"));
}

void expect_refused(const std::string& study, const std::string& mention) {
  try {
    detector_study_spec_from_manifest(detector_manifest(study));
    ADD_FAILURE() << "accepted: " << study;
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(mention), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(DetectorStudySpec, RefusesClassifierKeysAutoAndBadValues) {
  expect_refused("max_top1_drop = 0.01\n", "study.max_top1_drop");
  expect_refused("auto_target = \"logit-error=0.05\"\n", "study.auto_target");
  expect_refused("max_map_drop = 2.0\n", "study.max_map_drop");
  expect_refused("bootstrap_resamples = 5\n", "study.bootstrap_resamples");
  expect_refused("parity_min_score = \"high\"\n", "study.parity_min_score");
  expect_refused("typo_key = 1\n", "study.typo_key");
  EXPECT_THROW(require_detector_variant(parse_study_variant("fp8 auto max")), Error);
}

TEST(DetectorStudySpec, AClassifierStudyRefusesTheDetectorsKeys) {
  Manifest classifier = detector_manifest("");
  classifier.task = Task::kClassification;
  classifier.study["max_map_drop"] = 0.01;
  EXPECT_THROW(study_spec_from_manifest(classifier), Error);
}

VariantResult timed(const std::string& name, Precision precision, Spread speedup) {
  VariantResult r;
  r.variant = parse_study_variant(name);
  r.variant.precision = precision;
  r.speedup = speedup;
  r.eval.images_evaluated = 10;
  return r;
}

DetectorQuality quality(BoxParitySummary p, double drop_low, double drop_high) {
  DetectorQuality q;
  q.parity = p;
  q.drop = MapDrop{{(drop_low + drop_high) / 2, drop_low, drop_high},
                   {(drop_low + drop_high) / 2, drop_low, drop_high},
                   500,
                   1};
  return q;
}

DetectorStudySpec decision_spec() {
  DetectorStudySpec spec;
  spec.study.baseline = "fp16";
  spec.study.min_speedup = 1.05;
  spec.max_map_drop = 0.01;
  spec.max_map50_drop = 0.01;
  return spec;
}

TEST(DetectorDecision, ShipsOnlyWhenEveryCriterionHolds) {
  const DetectorStudySpec spec = decision_spec();
  const BoxParitySummary good = parity(0, 0, 0.95, 0.001);
  const VariantResult fast = timed("fp8 all max", Precision::kF8, {1.3, 1.2, 1.4});
  EXPECT_EQ(judge_detector_variant(spec, fast, quality(good, -0.002, 0.004)).outcome, ShipOutcome::kShip);
  EXPECT_EQ(judge_detector_variant(spec, fast, quality(good, -0.002, 0.02)).outcome,
            ShipOutcome::kCannotTell);
  EXPECT_EQ(judge_detector_variant(spec, fast, quality(good, 0.02, 0.04)).outcome, ShipOutcome::kDoNotShip);
  EXPECT_EQ(judge_detector_variant(spec, fast, quality(parity(1, 0, 0.95, 0.001), -0.002, 0.004)).outcome,
            ShipOutcome::kDoNotShip);
  const VariantResult slow = timed("fp8 all max", Precision::kF8, {1.0, 0.9, 1.1});
  EXPECT_EQ(judge_detector_variant(spec, slow, quality(good, -0.002, 0.004)).outcome,
            ShipOutcome::kDoNotShip);
  VariantResult nan = fast;
  nan.eval.images_with_non_finite = 1;
  const DetectorVerdict verdict = judge_detector_variant(spec, nan, quality(good, -0.002, 0.004));
  EXPECT_EQ(verdict.outcome, ShipOutcome::kDoNotShip);
  EXPECT_TRUE(verdict.non_finite);
  DetectorQuality unpaired;
  unpaired.parity = good;
  EXPECT_EQ(judge_detector_variant(spec, fast, unpaired).outcome, ShipOutcome::kCannotTell);
}

TEST(DetectorDecision, ShipsTheFastestThatShipsAndCannotTellOtherwise) {
  const DetectorStudySpec spec = decision_spec();
  const BoxParitySummary good = parity(0, 0, 0.95, 0.001);
  const std::vector<VariantResult> variants = {timed("fp16", Precision::kF16, {1, 1, 1}),
                                               timed("fp8 all max", Precision::kF8, {1.2, 1.1, 1.3}),
                                               timed("fp8 nose max", Precision::kF8, {1.4, 1.3, 1.5})};
  DetectorQuality baseline;
  baseline.parity = good;
  const DetectorDecision ship =
      decide_detector(spec, variants, {baseline, quality(good, -0.002, 0.004), quality(good, -0.001, 0.003)});
  EXPECT_EQ(ship.outcome, ShipOutcome::kShip);
  EXPECT_EQ(ship.variant, "fp8 nose max");
  EXPECT_EQ(ship.held_out_images, 10);
  EXPECT_EQ(ship.verdicts.size(), 2u);
  const DetectorDecision open =
      decide_detector(spec, variants, {baseline, quality(good, -0.002, 0.02), quality(good, 0.02, 0.03)});
  EXPECT_EQ(open.outcome, ShipOutcome::kCannotTell);
  EXPECT_TRUE(open.variant.empty());
  const nlohmann::json json = to_json(open);
  EXPECT_EQ(json.at("outcome"), "cannot tell");
  EXPECT_EQ(json.at("variants").at(1).at("outcome"), "do not ship");
  EXPECT_THROW(decide_detector(spec, variants, {baseline}), Error);
}

}  // namespace
}  // namespace kiln
