// The detector engine runs a plan through an Engine; its boxes are those of the detector's graph
// compiled and run directly on the same backend, detection for detection.
#include "pipeline/detector_engine.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "../backends/cuda_test_util.h"
#include "core/error.h"
#include "passes/pass_manager.h"
#include "pipeline/detector_inputs.h"
#include "pipeline/input_batch.h"
#include "pipeline/model_loading.h"

namespace kiln::pipeline {
namespace {

namespace fs = std::filesystem;

const fs::path kYolo = fs::path(KILN_TEST_DATA_DIR) / "golden" / "yolov10n";
const fs::path kPhotos = fs::path(KILN_TEST_DATA_DIR) / "photos";

// The graph as the family builds it, every pass run, compiled on `backend`: no plan, no engine.
std::vector<std::vector<Detection>> detect_directly(const DetectorInfo& detector,
                                                    const std::vector<Image>& images,
                                                    const std::string& backend) {
  const auto batch = static_cast<std::int64_t>(images.size());
  DetectorModel model = load_detector(detector, kYolo / "model.safetensors", std::nullopt, batch);
  run_passes(model.graph);
  const std::int64_t size = model.config.imgsz;
  std::vector<Letterbox> boxes;
  Tensor input(DType::kF32, {batch, 3, size, size});
  for (std::size_t i = 0; i < images.size(); ++i) {
    boxes.push_back(detector.prepare(images[i], size));
    const Tensor x = letterbox_tensor(boxes.back());
    std::copy(x.f32().begin(), x.f32().end(),
              input.mutable_f32().begin() + static_cast<std::ptrdiff_t>(i * x.f32().size()));
  }
  CompileOptions compile;
  compile.batch = batch;
  const Tensor decoded = make_backend(backend)->compile(model.graph, compile)->run({input}).at(0);
  auto selected = detector.select(decoded, model.config.max_det);
  for (std::size_t i = 0; i < selected.size(); ++i) {
    for (Detection& d : selected[i]) d = detector.to_original(d, boxes[i]);
  }
  return selected;
}

TEST(DetectorEngine, BoxesAreThoseOfTheGraphRunDirectly) {
  const DetectorInfo* detector = find_detector("yolov10");
  ASSERT_NE(detector, nullptr);
  const std::vector<Image> images = {decode_image(kPhotos / "dog.jpg"), decode_image(kPhotos / "kite.jpg")};
  for (const std::string backend : {"cpu", "cpu-reference"}) {
    DetectorEngine engine(*detector, kYolo / "model.safetensors", std::nullopt, 2, backend);
    EXPECT_EQ(engine.backend(), backend);
    EXPECT_EQ(engine.unused_keys().size(), 102u);
    const DetectorRun run = engine.detect(images);
    EXPECT_EQ(run.decoded.dim(0), 2);
    const auto expected = detect_directly(*detector, images, backend);
    ASSERT_EQ(run.detections.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(run.detections[i].size(), expected[i].size()) << backend;
      ASSERT_EQ(run.detections[i].size(), static_cast<std::size_t>(engine.config().max_det));
      for (std::size_t k = 0; k < expected[i].size(); ++k) {
        const Detection& a = run.detections[i][k];
        const Detection& b = expected[i][k];
        EXPECT_EQ(a.label, b.label) << backend << " image " << i << " detection " << k;
        EXPECT_EQ(a.score, b.score);
        EXPECT_EQ(a.x1, b.x1);
        EXPECT_EQ(a.y1, b.y1);
        EXPECT_EQ(a.x2, b.x2);
        EXPECT_EQ(a.y2, b.y2);
      }
    }
  }
}

TEST(DetectorEngine, RefusesAnotherBatchSize) {
  const DetectorInfo* detector = find_detector("yolov10");
  ASSERT_NE(detector, nullptr);
  DetectorEngine engine(*detector, kYolo / "model.safetensors", std::nullopt, 1, "cpu");
  const std::vector<Image> two = {decode_image(kPhotos / "dog.jpg"), decode_image(kPhotos / "kite.jpg")};
  EXPECT_THROW(engine.detect(two), Error);
  EXPECT_THROW(engine.detect_letterboxed(Tensor(DType::kF32, {2, 3, 320, 320})), Error);
}

TEST(DetectorEngine, NeedsTheConfigBesideTheCheckpoint) {
  const DetectorInfo* detector = find_detector("yolov10");
  ASSERT_NE(detector, nullptr);
  try {
    DetectorEngine(*detector, kYolo / "model.safetensors", kYolo / "missing.json", 1, "cpu");
    FAIL() << "a missing config.json loaded";
  } catch (const Error& error) {
    EXPECT_NE(
        std::string(error.what()).find("missing.json: missing; a detector checkpoint needs its config.json"),
        std::string::npos)
        << error.what();
  }
}

// On cuda, photos are letterboxed on the device (pipeline/device_letterbox_run.h): the graph must see the
// input the host letterbox makes, so its outputs equal, bit for bit, those of the same engine run on the
// host-letterboxed batch, and the boxes in photo pixels are the same.
TEST(DetectorEngine, OnCudaTheDeviceLetterboxGivesTheHostLetterboxsOutputs) {
  if (!testing::cuda_built() || !testing::gpu_present()) GTEST_SKIP() << "no CUDA backend or device";
  const DetectorInfo* detector = find_detector("yolov10");
  ASSERT_NE(detector, nullptr);
  // The demo config (imgsz 256) beside the manifest: the test data folder is tests/data.
  const fs::path demo_config =
      fs::path(KILN_TEST_DATA_DIR).parent_path().parent_path() / "families" / "yolov10" / "demo_config.json";
  DetectorEngine engine(*detector, kYolo / "model.safetensors", demo_config, 2, "cuda");
  const std::vector<Image> images = {decode_image(kPhotos / "dog.jpg"), decode_image(kPhotos / "kite.jpg")};
  const DetectorRun on_device = engine.detect(images);

  const std::int64_t size = engine.config().imgsz;
  const DetectorInputs files =
      load_detector_inputs({kPhotos / "dog.jpg", kPhotos / "kite.jpg"}, *detector, size);
  DetectorRun on_host = engine.detect_letterboxed(letterbox_on_host(files, *detector, size));
  std::vector<Letterbox> boxes;
  for (const Image& image : images) boxes.push_back(detector->place(image.width, image.height, size));
  // kiln run's path (photos given as files) letterboxes on the device too.
  const DetectorRun from_files = engine.detect(files);
  EXPECT_TRUE(std::equal(from_files.decoded.f32().begin(), from_files.decoded.f32().end(),
                         on_device.decoded.f32().begin()));
  ASSERT_EQ(on_device.decoded.shape(), on_host.decoded.shape());
  EXPECT_TRUE(std::equal(on_device.decoded.f32().begin(), on_device.decoded.f32().end(),
                         on_host.decoded.f32().begin()));
  ASSERT_EQ(on_device.detections.size(), on_host.detections.size());
  for (std::size_t i = 0; i < on_host.detections.size(); ++i) {
    ASSERT_EQ(on_device.detections[i].size(), on_host.detections[i].size());
    for (std::size_t k = 0; k < on_host.detections[i].size(); ++k) {
      const Detection expected = detector->to_original(on_host.detections[i][k], boxes[i]);
      const Detection& got = on_device.detections[i][k];
      EXPECT_EQ(got.x1, expected.x1);
      EXPECT_EQ(got.y2, expected.y2);
      EXPECT_EQ(got.score, expected.score);
      EXPECT_EQ(got.label, expected.label);
    }
  }
}

}  // namespace
}  // namespace kiln::pipeline
