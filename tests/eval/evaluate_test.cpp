// evaluate(): batching, labels, the reference, bad images, stress inputs and per-layer errors on a
// small hand-built model and folders of the shipped photos.
#include "eval/evaluate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "data/open_dataset.h"
#include "eval_test_models.h"
#include "backends/backend.h"

namespace kiln {
namespace {

using testing::cpu_backend_names;

namespace fs = std::filesystem;
using testing::perturbed;
using testing::small_plan;

const fs::path kPhotos = fs::path(KILN_TEST_DATA_DIR) / "photos";
const std::vector<std::string> kSomePhotos = {"apple.jpg", "baboon.jpg", "dog.jpg", "eagle.jpg", "kite.jpg"};

class EvaluateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_eval_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A folder of class folders "a", "b", ... holding the photos in turn.
  fs::path class_folders(std::size_t classes) const {
    const fs::path root = dir_ / ("classes" + std::to_string(classes));
    for (std::size_t i = 0; i < kSomePhotos.size(); ++i) {
      const fs::path folder = root / std::string(1, static_cast<char>('a' + i % classes));
      fs::create_directories(folder);
      fs::copy_file(kPhotos / kSomePhotos[i], folder / kSomePhotos[i]);
    }
    return root;
  }
  fs::path flat_folder(bool with_bad_image) const {
    const fs::path root = dir_ / (with_bad_image ? "flat_bad" : "flat");
    fs::create_directories(root);
    for (const auto& photo : kSomePhotos) fs::copy_file(kPhotos / photo, root / photo);
    if (with_bad_image) std::ofstream(root / "broken.jpg") << "not a JPEG at all";
    return root;
  }

  static std::vector<std::size_t> all(const Dataset& dataset) {
    std::vector<std::size_t> indices(dataset.size());
    std::iota(indices.begin(), indices.end(), std::size_t{0});
    return indices;
  }

  static std::shared_ptr<const Plan> shared(Plan plan) {
    return std::make_shared<const Plan>(std::move(plan));
  }

  fs::path dir_;
};

CompileOptions batch_of(std::int64_t batch) {
  CompileOptions options;
  options.batch = batch;
  return options;
}

TEST_F(EvaluateTest, AgainstItselfEverythingAgreesExactly) {
  const Dataset dataset = open_dataset(class_folders(2).string());
  const auto plan = shared(small_plan());
  Engine engine(plan, "cpu-reference", batch_of(1));
  Engine reference(plan, "cpu-reference", batch_of(1));
  std::ostringstream log;
  EvalOptions options;
  options.log = &log;
  const EvalResult result = evaluate(engine, &reference, dataset, all(dataset), options);
  EXPECT_EQ(result.images_requested, 5u);
  EXPECT_EQ(result.images_evaluated, 5u);
  EXPECT_TRUE(result.skipped.empty());
  EXPECT_EQ(result.num_classes, 10);
  ASSERT_TRUE(result.labels);
  EXPECT_EQ(result.labels->images(), 5);
  ASSERT_TRUE(result.reference_labels);
  EXPECT_EQ(result.reference_labels->top1_correct(), result.labels->top1_correct());
  ASSERT_TRUE(result.reference);
  EXPECT_EQ(result.reference->agreement(), 1.0);
  EXPECT_EQ(result.reference->relative_error(), 0.0);
  EXPECT_EQ(result.non_finite.total(), 0);
  EXPECT_EQ(result.stress.size(), 13u);
  for (const auto& s : result.stress) {
    EXPECT_EQ(s.non_finite.total(), 0) << s.name;
    EXPECT_EQ(s.relative_error.value_or(-1.0), 0.0) << s.name;
    EXPECT_TRUE(s.top1_agrees.value_or(false)) << s.name;
    EXPECT_FALSE(s.layers) << s.name;
  }
  EXPECT_FALSE(result.per_layer);
  EXPECT_NE(log.str().find("0 of 5 images skipped"), std::string::npos) << log.str();
}

TEST_F(EvaluateTest, BatchingDoesNotChangeTheResult) {
  const Dataset dataset = open_dataset(class_folders(3).string());
  const auto plan = shared(small_plan());
  const auto changed = shared(perturbed(small_plan(), "fc.weight", 0.2f));
  EvalOptions options;
  std::ostringstream log;
  options.log = &log;
  options.stress = false;
  std::vector<EvalResult> results;
  for (const std::int64_t batch : {1, 2, 3, 8}) {
    Engine engine(changed, "cpu", batch_of(batch));
    Engine reference(plan, "cpu", batch_of(batch == 1 ? 2 : 1));  // its own batch size
    results.push_back(evaluate(engine, &reference, dataset, all(dataset), options));
  }
  for (const auto& result : results) {
    EXPECT_EQ(result.images_evaluated, 5u);
    EXPECT_EQ(result.labels->top1_correct(), results.front().labels->top1_correct());
    EXPECT_EQ(result.labels->top5_correct(), results.front().labels->top5_correct());
    EXPECT_EQ(result.reference->top1_agreements(), results.front().reference->top1_agreements());
    EXPECT_NEAR(result.reference->relative_error(), results.front().reference->relative_error(), 1e-6);
  }
  EXPECT_GT(results.front().reference->relative_error(), 1e-3);
  EXPECT_TRUE(results.front().stress.empty());
}

TEST_F(EvaluateTest, PerImageResultsAddUpToTheSummaryAndFollowTheIndicesGiven) {
  const Dataset dataset = open_dataset(class_folders(3).string());
  const auto plan = shared(small_plan());
  const auto changed = shared(perturbed(small_plan(), "fc.weight", 0.5f));
  Engine engine(changed, "cpu-reference", batch_of(2));
  Engine reference(plan, "cpu-reference", batch_of(1));
  EvalOptions options;
  std::ostringstream log;
  options.log = &log;
  options.stress = false;
  const std::vector<std::size_t> order = {4, 1, 3, 0, 2};  // not dataset order; a partial last batch
  const EvalResult result = evaluate(engine, &reference, dataset, order, options);
  ASSERT_EQ(result.per_image.size(), order.size());
  std::int64_t correct = 0, agreements = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const ImageOutcome& image = result.per_image[i];
    EXPECT_EQ(image.index, order[i]);
    EXPECT_EQ(image.name, dataset.sample(order[i]).name);
    EXPECT_EQ(image.label, dataset.sample(order[i]).label);
    EXPECT_GE(image.top1, 0);
    EXPECT_GE(image.reference_top1, 0);
    correct += image.top1 == image.label ? 1 : 0;
    agreements += image.top1 == image.reference_top1 ? 1 : 0;
  }
  EXPECT_EQ(correct, result.labels->top1_correct());
  EXPECT_EQ(agreements, result.reference->top1_agreements());
  // The JSON lists them only when asked.
  EXPECT_FALSE(to_json(result).contains("per_image"));
  const nlohmann::json listed = to_json(result, {.per_image = true}).at("per_image");
  ASSERT_EQ(listed.size(), order.size());
  EXPECT_EQ(listed[0].at("index"), 4);
  EXPECT_EQ(listed[0].at("top1"), result.per_image[0].top1);
  EXPECT_EQ(listed[0].at("reference_top1"), result.per_image[0].reference_top1);
  // Without labels or a reference those fields are -1 here and null in the JSON.
  const EvalResult alone =
      evaluate(engine, nullptr, open_dataset(flat_folder(false).string()), order, options);
  EXPECT_EQ(alone.per_image[0].label, -1);
  EXPECT_EQ(alone.per_image[0].reference_top1, -1);
  EXPECT_TRUE(to_json(alone, {.per_image = true})["per_image"][0]["label"].is_null());
}

TEST_F(EvaluateTest, ACacheStandsInForTheReference) {
  const Dataset dataset = open_dataset(flat_folder(false).string());
  const auto plan = shared(small_plan());
  const auto changed = shared(perturbed(small_plan(), "fc.weight", 0.3f));
  Engine engine(changed, "cpu-reference", batch_of(2));
  Engine reference(plan, "cpu-reference", batch_of(2));
  Engine other(changed, "cpu-reference", batch_of(2));  // a different "reference": agrees exactly
  std::ostringstream log;
  EvalOptions options;
  options.log = &log;
  options.stress = false;
  ReferenceLogitsCache cache;
  options.reference_cache = &cache;
  // The first call fills the cache from images 0, 2, 4; the second takes those from it and runs
  // `other` for 1 and 3 only.
  const std::vector<std::size_t> some = {0, 2, 4};
  const EvalResult first = evaluate(engine, &reference, dataset, some, options);
  EXPECT_EQ(cache.logits.size(), 3u);
  EXPECT_GT(first.reference->relative_error(), 1e-3);
  const EvalResult second = evaluate(engine, &other, dataset, all(dataset), options);
  EXPECT_EQ(cache.logits.size(), 5u);
  EXPECT_DOUBLE_EQ(second.reference->sum_squared_difference(), first.reference->sum_squared_difference());
  const double expected = std::sqrt(first.reference->sum_squared_difference()) /
                          std::sqrt(second.reference->sum_squared_reference());
  EXPECT_DOUBLE_EQ(second.reference->relative_error(), expected);
  // Without the cache the same call compares with `other` alone: no difference at all.
  options.reference_cache = nullptr;
  EXPECT_EQ(evaluate(engine, &other, dataset, all(dataset), options).reference->relative_error(), 0.0);
}

TEST_F(EvaluateTest, LabelsGiveTopOneAndTopFive) {
  // Ten classes and a model with ten outputs: top-5 of random logits is not always right, top-10 is.
  const Dataset dataset = open_dataset(class_folders(5).string());
  Engine engine(shared(small_plan(16, 5)), "cpu-reference", batch_of(2));
  EvalOptions options;
  std::ostringstream log;
  options.log = &log;
  options.stress = false;
  const EvalResult result = evaluate(engine, nullptr, dataset, all(dataset), options);
  ASSERT_TRUE(result.labels);
  EXPECT_EQ(result.labels->images(), 5);
  EXPECT_EQ(result.labels->top5_correct(), 5);  // five classes: always in the top 5
  EXPECT_LE(result.labels->top1_correct(), 5);
  EXPECT_FALSE(result.reference);
  EXPECT_FALSE(result.reference_labels);
  const nlohmann::json json = to_json(result);
  EXPECT_EQ(json["labels"]["images"], 5);
  EXPECT_TRUE(json["reference"].is_null());
  EXPECT_TRUE(json["per_layer"].is_null());
}

TEST_F(EvaluateTest, LabelsOutOfRangeAreAClearError) {
  const Dataset dataset = open_dataset(class_folders(5).string());
  Engine engine(shared(small_plan(16, 3)), "cpu-reference", batch_of(1));
  try {
    evaluate(engine, nullptr, dataset, all(dataset), {});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("out of range"), std::string::npos) << error.what();
  }
}

TEST_F(EvaluateTest, ABadImageIsSkippedUnlessStrict) {
  const Dataset dataset = open_dataset(flat_folder(true).string());
  ASSERT_EQ(dataset.size(), 6u);
  const auto plan = shared(small_plan());
  Engine engine(plan, "cpu-reference", batch_of(4));
  std::ostringstream log;
  EvalOptions options;
  options.log = &log;
  options.stress = false;
  const EvalResult result = evaluate(engine, nullptr, dataset, all(dataset), options);
  EXPECT_EQ(result.images_evaluated, 5u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_NE(result.skipped.front().name.find("broken.jpg"), std::string::npos);
  EXPECT_NE(log.str().find("skipped"), std::string::npos);
  EXPECT_NE(log.str().find("broken.jpg"), std::string::npos);
  EXPECT_FALSE(result.labels);
  EXPECT_EQ(to_json(result)["skipped"].size(), 1u);

  options.strict = true;
  EXPECT_THROW(evaluate(engine, nullptr, dataset, all(dataset), options), Error);
}

TEST_F(EvaluateTest, NoReadableImageIsAnError) {
  const fs::path root = dir_ / "all_bad";
  fs::create_directories(root);
  std::ofstream(root / "a.jpg") << "junk";
  std::ofstream(root / "b.png") << "junk";
  const Dataset dataset = open_dataset(root.string());
  Engine engine(shared(small_plan()), "cpu-reference", batch_of(1));
  std::ostringstream log;
  EvalOptions options;
  options.log = &log;
  EXPECT_THROW(evaluate(engine, nullptr, dataset, all(dataset), options), Error);
}

TEST_F(EvaluateTest, PerLayerFindsThePerturbedLayerAndNeedsAReference) {
  const Dataset dataset = open_dataset(flat_folder(false).string());
  const auto plan = shared(small_plan());
  Engine engine(shared(perturbed(small_plan(), "block.conv.weight", 0.5f)), "cpu", batch_of(2));
  Engine reference(plan, "cpu", batch_of(2));
  std::ostringstream log;
  EvalOptions options;
  options.log = &log;
  options.per_layer_images = 3;
  EXPECT_THROW(evaluate(engine, nullptr, dataset, all(dataset), options), Error);
  const EvalResult result = evaluate(engine, &reference, dataset, all(dataset), options);
  ASSERT_TRUE(result.per_layer);
  EXPECT_EQ(result.per_layer->images, 3u);
  ASSERT_EQ(result.per_layer->layers.size(), 8u);
  EXPECT_EQ(result.per_layer->layers.front().name, "block.conv");
  for (const auto& s : result.stress) {
    ASSERT_TRUE(s.layers) << s.name;
    EXPECT_EQ(s.layers->count, 0u) << s.name;
  }
  const nlohmann::json json = to_json(result);
  EXPECT_EQ(json["per_layer"]["compared"], 8);
  EXPECT_EQ(json["per_layer"]["layers"][0]["name"], "block.conv");
  EXPECT_EQ(json["stress"].size(), 13u);
  EXPECT_TRUE(json["stress"][0]["first_non_finite_layer"].is_null());
}

TEST_F(EvaluateTest, Fp8PlanAgainstItsFp32Original) {
  const Dataset dataset = open_dataset(flat_folder(false).string());
  for (const auto backend : cpu_backend_names()) {
    SCOPED_TRACE(std::string(backend));
    Engine engine(shared(testing::small_fp8_plan()), std::string(backend), batch_of(2));
    Engine reference(shared(small_plan()), std::string(backend), batch_of(2));
    std::ostringstream log;
    EvalOptions options;
    options.log = &log;
    options.per_layer_images = 2;
    const EvalResult result = evaluate(engine, &reference, dataset, all(dataset), options);
    EXPECT_EQ(result.images_evaluated, 5u);
    EXPECT_GT(result.reference->relative_error(), 0.0);
    EXPECT_LT(result.reference->relative_error(), 0.2);
    EXPECT_EQ(result.non_finite.total(), 0);
    ASSERT_TRUE(result.per_layer);
    EXPECT_EQ(result.per_layer->layers.size(), 8u);
    EXPECT_EQ(result.per_layer->layers.front().name, "block.conv");
    EXPECT_EQ(result.stress.size(), 13u);
  }
}

TEST_F(EvaluateTest, StressFindsWhereNonFiniteValuesStart) {
  // A huge stem weight overflows f32 on the noise_1000 input, not on the small in-range images.
  Plan plan = small_plan();
  for (ValueId id = 0; id < static_cast<ValueId>(plan.graph.values().size()); ++id) {
    Value& value = plan.graph.value(id);
    if (value.name != "stem.weight") continue;
    Tensor weight = value.constant.clone();
    for (float& w : weight.mutable_f32()) w *= 1e37f;
    value.constant = weight;
  }
  const auto broken = shared(std::move(plan));
  Engine engine(broken, "cpu-reference", batch_of(1));
  Engine reference(shared(small_plan()), "cpu-reference", batch_of(1));
  const Dataset dataset = open_dataset(flat_folder(false).string());
  std::ostringstream log;
  EvalOptions options;
  options.log = &log;
  options.per_layer_images = 1;
  const EvalResult result = evaluate(engine, &reference, dataset, all(dataset), options);
  EXPECT_EQ(result.images_with_non_finite, 0u);
  const auto noise = std::find_if(result.stress.begin(), result.stress.end(),
                                  [](const StressResult& s) { return s.name == "noise_1000"; });
  ASSERT_NE(noise, result.stress.end());
  EXPECT_GT(noise->non_finite.total(), 0);
  EXPECT_EQ(noise->reference_non_finite->total(), 0);
  ASSERT_TRUE(noise->layers);
  EXPECT_EQ(noise->layers->first, "stem");
  EXPECT_GT(noise->layers->count, 0u);
}

// top1_pairs() pairs each image's reference result with the plan's against the label.
TEST(Top1Pairs, CountsEachImageByWhoGotItRight) {
  EvalResult result;
  EXPECT_FALSE(top1_pairs(result));  // neither labels nor a reference
  result.labels.emplace();
  result.reference.emplace();
  // (plan top-1, label, reference top-1): both right, plan only, reference only (twice), neither.
  for (const auto& [top1, label, reference_top1] :
       std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {2, 2, 0}, {0, 3, 3}, {4, 5, 5}, {6, 7, 8}}) {
    result.per_image.push_back({0, "image", top1, label, reference_top1});
  }
  const std::optional<PairedCounts> pairs = top1_pairs(result);
  ASSERT_TRUE(pairs);
  EXPECT_EQ(pairs->both, 1);
  EXPECT_EQ(pairs->variant_only, 1);
  EXPECT_EQ(pairs->baseline_only, 2);
  EXPECT_EQ(pairs->neither, 1);
}

}  // namespace
}  // namespace kiln
