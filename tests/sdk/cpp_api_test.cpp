// The C++ interface (kiln.hpp over libkiln.so alone): results equal Engine's (make_fixture's files),
// contexts run on several threads at once, errors are exceptions with the status and kiln's message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "fixture_photos.h"
#include "kiln/kiln.hpp"
#include "read_all.h"

namespace {

namespace fs = std::filesystem;
namespace ks = kiln::sdk;

const fs::path kFixture = KILN_SDK_FIXTURE_DIR;
const fs::path kData = KILN_TEST_DATA_DIR;

ks::EngineOptions reference_batch2() {
  ks::EngineOptions options;
  options.backend = "cpu-reference";
  options.batch = 2;
  return options;
}

TEST(CppApi, PlanFromMemoryRunsAsEngineDoes) {
  const auto bytes = read_all<std::byte>(kFixture / "plan.kplan");
  const ks::Plan plan = ks::Plan::from_memory(bytes, "plan in memory");
  EXPECT_EQ(plan.family(), "timm_resnest");
  const ks::Engine engine(plan, reference_batch2());
  ASSERT_EQ(engine.inputs().size(), 1u);
  EXPECT_EQ(engine.inputs()[0].shape, (std::vector<std::int64_t>{2, 3, 224, 224}));
  EXPECT_EQ(engine.outputs()[0].shape, (std::vector<std::int64_t>{2, 10}));
  const auto input = read_all<float>(kFixture / "input.f32");
  const auto expected = read_all<float>(kFixture / "logits_cpu-reference.f32");
  ks::Context context = engine.context();
  EXPECT_EQ(context.run(input).at(0), expected);
}

TEST(CppApi, ContextsRunOnThreadsAtOnce) {
  const ks::Engine engine(ks::Plan::load(kFixture / "plan.kplan"), reference_batch2());
  const auto input = read_all<float>(kFixture / "input.f32");
  const auto expected = read_all<float>(kFixture / "logits_cpu-reference.f32");
  std::vector<std::vector<float>> results(3);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&engine, &input, &result] { result = engine.context().run(input).at(0); });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, expected);
}

TEST(CppApi, BackendsAreListedWithAStatusLineEach) {
  const std::vector<std::string> names = kiln::sdk::backends();
  ASSERT_FALSE(names.empty());
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu-reference"), names.end());
  for (const std::string& name : names) EXPECT_FALSE(kiln::sdk::backend_status(name).empty()) << name;
  EXPECT_EQ(kiln::sdk::backend_status("cpu-reference"), "built in");
  EXPECT_EQ(kiln::sdk::backend_status("no-such-backend"), "");
  const bool cuda_listed = std::find(names.begin(), names.end(), "cuda") != names.end();
  const std::string cuda = kiln::sdk::backend_status("cuda");
  // Not installed: the line says so and cuda is not listed; installed: it loads or says why not.
  EXPECT_EQ(cuda_listed, cuda.find("is not installed here") == std::string::npos) << cuda;
}

TEST(CppApi, ErrorsAreExceptionsWithStatusAndMessage) {
  try {
    ks::Plan::load("/nonexistent/model.kplan");
    FAIL() << "no exception";
  } catch (const ks::Error& error) {
    EXPECT_EQ(error.status(), KILN_STATUS_NOT_FOUND);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/model.kplan"), std::string::npos);
  }
  const ks::Engine engine(ks::Plan::load(kFixture / "plan.kplan"), reference_batch2());
  ks::Context context = engine.context();
  std::vector<float> short_input(10);
  try {
    context.run(short_input);
    FAIL() << "no exception";
  } catch (const ks::Error& error) {
    EXPECT_EQ(error.status(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("the buffer holds 40 bytes"), std::string::npos) << error.what();
  }
  ks::EngineOptions cuda_on_cpu_device = reference_batch2();
  cuda_on_cpu_device.device = 1;
  EXPECT_THROW(ks::Engine(ks::Plan::load(kFixture / "plan.kplan"), cuda_on_cpu_device), ks::Error);
}

TEST(CppApi, ClassifiesAPhotoAsEngineDoes) {
  const ks::Engine engine(ks::Plan::load(kFixture / "plan.kplan"), {});
  std::ifstream top5(kFixture / "dog_top5.txt");
  std::int64_t index = -1;
  double probability = 0;
  top5 >> index >> probability;
  const auto photo = read_all<std::uint8_t>(kData / "photos" / "dog.jpg");
  const auto scores = engine.context().classify(photo, 5);
  ASSERT_EQ(scores.size(), 5u);
  EXPECT_EQ(scores[0].class_index, index);
  EXPECT_NEAR(scores[0].probability, probability, 1e-7);
}

// Image runs preprocess on the host on the CPU backends, so their outputs equal, bit for bit, a run on the
// batch the host path makes: photos_input.f32 for two photos filling the batch, dog_input.f32 for one
// photo and a zero slot. Encoded files and pixels alike.
TEST(CppApi, ImageRunsEqualARunOnTheHostPreprocessedBatch) {
  ks::EngineOptions default_backend;
  default_backend.batch = 2;
  for (const ks::EngineOptions& options : {reference_batch2(), default_backend}) {
    const ks::Engine engine(ks::Plan::load(kFixture / "plan.kplan"), options);
    SCOPED_TRACE(engine.backend());
    ks::Context context = engine.context();
    expect_image_runs_equal_host_batches(context, kFixture);
  }
}

TEST(CppApi, ImageRunsRefuseMoreImagesThanTheBatch) {
  const ks::Engine engine(ks::Plan::load(kFixture / "plan.kplan"), reference_batch2());
  const FixturePixels dog = fixture_pixels(kFixture, "dog");
  const std::vector<ks::ImageView> three(3, dog.view);
  try {
    engine.context().run_images(three);
    FAIL() << "no exception";
  } catch (const ks::Error& error) {
    EXPECT_EQ(error.status(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("3 images for an engine of batch 2: it takes at most 2"),
              std::string::npos)
        << error.what();
  }
}

TEST(CppApi, DetectsBoxesAsTheDetectorEngineDoes) {
  const fs::path yolo = kData / "golden" / "yolov10n";
  ks::Detector detector({"yolov10", yolo / "model.safetensors", yolo / "config.json"});
  EXPECT_EQ(detector.class_count(), 10u);
  const auto photo = read_all<std::uint8_t>(kData / "photos" / "dog.jpg");
  const auto found = detector.detect(photo, 0.005f);  // no Fashion-MNIST item in the photo: low scores
  std::ifstream expected(kFixture / "dog_boxes.txt");
  std::size_t row = 0;
  std::int64_t label = 0;
  float score = 0, x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  while (expected >> label >> score >> x1 >> y1 >> x2 >> y2) {
    ASSERT_LT(row, found.size());
    EXPECT_EQ(found[row].class_index, label);
    EXPECT_FLOAT_EQ(found[row].score, score);
    EXPECT_FLOAT_EQ(found[row].x1, x1);
    EXPECT_FLOAT_EQ(found[row].y2, y2);
    EXPECT_FALSE(found[row].class_name.empty());
    ++row;
  }
  EXPECT_GT(row, 0u);
  EXPECT_EQ(row, found.size());
  try {
    ks::Detector({"timm_resnest", yolo / "model.safetensors", std::nullopt});
    FAIL() << "no exception";
  } catch (const ks::Error& error) {
    EXPECT_EQ(error.status(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("not a detector family"), std::string::npos);
  }
}

// A detector plan from `kiln build yolov10` gives the boxes `kiln run` gives with it (det_boxes.json).
TEST(CppApi, DetectorPlanGivesTheBoxesOfKilnRun) {
  const ks::Plan plan = ks::Plan::load(kFixture / "det.kplan");
  EXPECT_EQ(plan.family(), "yolov10");
  ks::Detector detector(plan);
  EXPECT_EQ(detector.class_count(), 10u);
  const auto photo = read_all<std::uint8_t>(kData / "photos" / "dog.jpg");
  const auto found = detector.detect(photo, 0.005f);
  std::ifstream in(kFixture / "det_boxes.json");
  const nlohmann::json expected = nlohmann::json::parse(in).at("results").at(0).at("detections");
  ASSERT_GT(expected.size(), 0u);
  ASSERT_EQ(found.size(), expected.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    const nlohmann::json& box = expected[i].at("box");
    EXPECT_EQ(found[i].class_index, expected[i].at("label").get<std::int64_t>());
    EXPECT_EQ(found[i].class_name, expected[i].at("name").get<std::string>());
    EXPECT_NEAR(found[i].score, expected[i].at("score").get<double>(), 1e-4);
    const float corners[4] = {found[i].x1, found[i].y1, found[i].x2, found[i].y2};
    for (std::size_t c = 0; c < 4; ++c)
      EXPECT_NEAR(corners[c], box.at(c).get<double>(), 1e-4) << i << " " << c;
  }
}

TEST(CppApi, PlansOfTheWrongKindAreRefused) {
  try {
    ks::Detector detector(ks::Plan::load(kFixture / "plan.kplan"));
    FAIL() << "no exception";
  } catch (const ks::Error& error) {
    EXPECT_EQ(error.status(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(
        std::string(error.what()).find("a timm_resnest classifier plan; a detector needs a detector plan"),
        std::string::npos)
        << error.what();
  }
  ks::EngineOptions options;
  options.backend = "cpu-reference";
  const ks::Engine engine(ks::Plan::load(kFixture / "det.kplan"), options);
  const auto photo = read_all<std::uint8_t>(kData / "photos" / "dog.jpg");
  try {
    engine.context().classify(photo);
    FAIL() << "no exception";
  } catch (const ks::Error& error) {
    EXPECT_EQ(error.status(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(error.what()).find("this engine runs a yolov10 detector plan"), std::string::npos)
        << error.what();
  }
}

}  // namespace
