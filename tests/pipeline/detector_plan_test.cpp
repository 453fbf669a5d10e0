// Detector plans from the family manifest and the yolov10n golden checkpoint: the same bytes every
// build, a detector section the postprocessing can run on, the same boxes as the checkpoint itself,
// and one-line errors for what does not fit.
#include "pipeline/detector_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "core/error.h"
#include "io/npy.h"
#include "manifest/manifest.h"
#include "pipeline/build_settings.h"
#include "pipeline/detector_engine.h"
#include "pipeline/detector_inputs.h"
#include "pipeline/detector_parity.h"
#include "pipeline/model_loading.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "tests/backends/cuda_test_util.h"

namespace kiln::pipeline {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(KILN_TEST_DATA_DIR);
const fs::path kYolo = kData / "golden" / "yolov10n";
const fs::path kManifest = kData.parent_path().parent_path() / "families" / "yolov10" / "manifest.toml";

class ScratchDir {
 public:
  ScratchDir() : path_(fs::temp_directory_path() / cat("kiln_detector_plan_", ::getpid())) {
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

Plan build(const Manifest& manifest, Precision precision, const std::string& backend = "cpu",
           const std::string& tactic_cache = "") {
  ModelSource source = load_model_source(manifest, kYolo / "model.safetensors", std::nullopt);
  BuildOverrides overrides;
  overrides.precision = precision;
  overrides.backend = backend;
  overrides.tactic_cache = tactic_cache;
  const BuildOptions options = build_options(manifest, overrides, source);
  return build_model(std::move(source), options).plan;
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(DetectorPlan, BuildsTheSameBytesTwiceWithItsSection) {
  const Manifest manifest = load_manifest(kManifest);
  const ScratchDir dir;
  for (const Precision precision : {Precision::kF32, Precision::kF16}) {
    write_plan(dir / "a.kplan", build(manifest, precision));
    write_plan(dir / "b.kplan", build(manifest, precision));
    std::ifstream a(dir / "a.kplan", std::ios::binary), b(dir / "b.kplan", std::ios::binary);
    const std::string bytes_a((std::istreambuf_iterator<char>(a)), {}),
        bytes_b((std::istreambuf_iterator<char>(b)), {});
    EXPECT_EQ(bytes_a, bytes_b) << precision_name(precision);
    EXPECT_GT(bytes_a.size(), 1000000u);
  }
  const Plan plan = read_plan(dir / "a.kplan");
  ASSERT_TRUE(plan.detector.has_value());
  EXPECT_EQ(plan.info.family, "yolov10");
  EXPECT_EQ(plan.info.precision, Precision::kF16);
  EXPECT_EQ(plan.detector->model, "yolov10n.yaml");
  EXPECT_EQ(plan.detector->image_size, 320);
  EXPECT_EQ(plan.detector->max_det, 300);
  EXPECT_EQ(plan.detector->class_names.size(), 10u);
  EXPECT_EQ(plan.detector->class_names[9], "Ankle boot");
  EXPECT_EQ(plan.detector->strides, (std::vector<std::int64_t>{8, 16, 32}));
  EXPECT_EQ(plan.detector->letterbox_fill, 114);
  EXPECT_EQ(plan.config.preprocess.input_size, 320);
  EXPECT_EQ(plan.config.label_names.size(), 10u);
  EXPECT_EQ(&plan_detector(plan, "a.kplan"), find_detector("yolov10"));
}

// An fp32 plan file gives, box for box, what the checkpoint built in memory gives.
TEST(DetectorPlan, RunsLikeTheCheckpoint) {
  const Manifest manifest = load_manifest(kManifest);
  const ScratchDir dir;
  write_plan(dir / "det.kplan", build(manifest, Precision::kF32));
  CompileOptions compile;
  compile.batch = 1;
  DetectorEngine from_plan(load_plan(dir / "det.kplan"), "det.kplan", "cpu", compile);
  DetectorEngine from_checkpoint(*find_detector("yolov10"), kYolo / "model.safetensors", std::nullopt, 1,
                                 "cpu");
  const DetectorInputs inputs =
      load_detector_inputs({kData / "photos" / "dog.jpg"}, from_plan.detector(), 320);
  const DetectorRun a = from_plan.detect(inputs), b = from_checkpoint.detect(inputs);
  ASSERT_EQ(a.detections.at(0).size(), 300u);
  ASSERT_EQ(a.detections[0].size(), b.detections.at(0).size());
  for (std::size_t k = 0; k < a.detections[0].size(); ++k) {
    EXPECT_EQ(a.detections[0][k].label, b.detections[0][k].label) << k;
    EXPECT_EQ(a.detections[0][k].score, b.detections[0][k].score) << k;
    EXPECT_EQ(a.detections[0][k].x1, b.detections[0][k].x1) << k;
    EXPECT_EQ(a.detections[0][k].y2, b.detections[0][k].y2) << k;
  }
}

// The authors' letterboxed input as a .npy (RGB / 255) gives the same tensor as kiln's letterbox of the
// photos; its boxes stay in input pixels.
TEST(DetectorPlan, LetterboxedNpyIsTheDetectorsInput) {
  const ScratchDir dir;
  const Tensor bytes = read_npy(kYolo / "input_u8.npy");
  Tensor x(DType::kF32, bytes.shape());
  for (std::size_t i = 0; i < x.f32().size(); ++i)
    x.mutable_f32()[i] = bytes.data<std::uint8_t>()[i] / 255.0f;
  write_npy(dir / "x.npy", x);
  const DetectorInfo& yolo = *find_detector("yolov10");
  const DetectorInputs npy = load_detector_inputs({dir / "x.npy"}, yolo, 320);
  const DetectorInputs photos =
      load_detector_inputs({kData / "photos" / "dog.jpg", kData / "photos" / "horses.jpg"}, yolo, 320);
  const Tensor from_npy = letterbox_on_host(npy, yolo, 320),
               from_photos = letterbox_on_host(photos, yolo, 320);
  ASSERT_EQ(from_npy.shape(), from_photos.shape());
  EXPECT_TRUE(std::equal(from_npy.f32().begin(), from_npy.f32().end(), from_photos.f32().begin()));
  EXPECT_FALSE(npy.all_photos());
  EXPECT_TRUE(photos.all_photos());
  EXPECT_TRUE(photos.letterboxes.at(0)->image.rgb.empty())
      << "photos are letterboxed once the backend is known";
  EXPECT_EQ(npy.labels.at(1), (dir / "x.npy").string() + "[1]");
  EXPECT_FALSE(npy.letterboxes.at(0).has_value());
  EXPECT_TRUE(photos.letterboxes.at(0).has_value());
  EXPECT_EQ(npy.pictures.at(0).width, 320);

  Tensor wrong = x.clone();
  wrong.mutable_f32()[5] = 2.5f;  // timm-normalised values are no letterbox
  write_npy(dir / "wrong.npy", wrong);
  EXPECT_NE(error_of([&] {
              load_detector_inputs({dir / "wrong.npy"}, yolo, 320);
            }).find("expected RGB / 255 in [0, 1], found 2.5 at element 5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              load_detector_inputs({dir / "x.npy"}, yolo, 640);
            }).find("expected a letterboxed batch [N, 3, 640, 640], got [2, 3, 320, 320]"),
            std::string::npos);
}

std::string file_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), {}};
}

// On the GPU: cuda plans rebuilt with the same tactic cache are the same bytes, and their boxes pass the
// parity gate against the cpu plan of the same precision on two images of the labelled detection set,
// where the trained golden finds its items (boxes scoring 0.25 or more, as `kiln eval` compares them).
TEST(DetectorPlan, CudaPlansRebuildTheSameAndMatchTheCpuBoxes) {
  KILN_SKIP_WITHOUT_GPU();
  const Manifest manifest = load_manifest(kManifest);
  const ScratchDir dir;
  const std::string cache = (dir / "tactics.json").string();
  const DetectorInfo& yolo = *find_detector("yolov10");
  const fs::path images = kData / "fashion_detect" / "images" / "val";
  const DetectorInputs inputs =
      load_detector_inputs({images / "val_000000.jpg", images / "val_000001.jpg"}, yolo, 320);
  CompileOptions compile;
  compile.batch = 2;
  for (const Precision precision : {Precision::kF32, Precision::kF16}) {
    SCOPED_TRACE(precision_name(precision));
    write_plan(dir / "first.kplan", build(manifest, precision, "cuda", cache));  // fills the cache
    write_plan(dir / "a.kplan", build(manifest, precision, "cuda", cache));
    write_plan(dir / "b.kplan", build(manifest, precision, "cuda", cache));
    EXPECT_EQ(file_bytes(dir / "a.kplan"), file_bytes(dir / "b.kplan"));
    write_plan(dir / "cpu.kplan", build(manifest, precision));
    DetectorEngine gpu(load_plan(dir / "a.kplan"), "a.kplan", "cuda", compile);
    DetectorEngine cpu(load_plan(dir / "cpu.kplan"), "cpu.kplan", "cpu", compile);
    const DetectorRun ours = gpu.detect(inputs), theirs = cpu.detect(inputs);
    for (std::size_t i = 0; i < 2; ++i) {
      const BoxParity parity =
          compare_detections(ours.detections[i], theirs.detections[i], 0.25, inputs.labels[i]);
      EXPECT_GT(parity.reference_boxes, 0u) << inputs.labels[i];
      EXPECT_TRUE(parity.passes()) << inputs.labels[i] << ": " << parity.matched << " matched, "
                                   << parity.missing << " missing, " << parity.extra << " extra, worst IoU "
                                   << parity.worst_iou << ", worst score diff " << parity.worst_score_diff;
    }
  }
}

TEST(DetectorPlan, BuildsAtItsConfigsSizeAndRefusesWhatDoesNotFit) {
  Manifest manifest = load_manifest(kManifest);
  manifest.input_size = 640;  // the Hub checkpoint's; the golden's config.json says 320
  EXPECT_EQ(load_model_source(manifest, kYolo / "model.safetensors", std::nullopt).detector->image_size, 320);

  manifest.input_size = 320;
  BuildOverrides fp8;
  fp8.precision = Precision::kF8;
  fp8.fp8.recipe = "auto";
  fp8.fp8.auto_target = "agreement=0.99";
  const ModelSource source = load_model_source(manifest, kYolo / "model.safetensors", std::nullopt);
  EXPECT_NE(error_of([&] {
              build_options(manifest, fp8, source);
            }).find("--auto-target agreement=0.99: top-1 agreement is for classifiers"),
            std::string::npos);

  Plan classifier;
  classifier.info.family = "timm_resnest";
  EXPECT_EQ(error_of([&] { plan_detector(classifier, "cls.kplan"); }),
            "cls.kplan: a timm_resnest classifier plan, not a detector plan");
  EXPECT_EQ(error_of([&] { require_classifier_plan(classifier, "cls.kplan", "x"); }), "");
  Plan detector;
  detector.info.family = "yolov10";
  detector.detector = DetectorSection{};
  EXPECT_EQ(error_of([&] { require_classifier_plan(detector, "det.kplan", "--topk"); }),
            "det.kplan: a yolov10 detector plan; --topk needs a classifier plan");
}

}  // namespace
}  // namespace kiln::pipeline
