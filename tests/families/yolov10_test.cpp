// YOLOv10n against the output of the YOLOv10 authors' own code (tests/data/golden/yolov10n, see its
// README.md): the decoded one-to-one head and the 300 detections of two letterboxed photos.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "families/yolov10/builder.h"
#include "families/yolov10/config.h"
#include "families/yolov10/letterbox.h"
#include "families/yolov10/postprocess.h"
#include "graph/precision_assignment.h"
#include "graph/verifier.h"
#include "io/image.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "passes/pass_manager.h"
#include "backends/backend.h"
#include "tests/families/family_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::count_ops;
using testing::error_of;

const fs::path kGolden = fs::path(KILN_TEST_DATA_DIR) / "golden" / "yolov10n";

std::map<std::string, Tensor> golden_weights() {
  const SafetensorsFile file = SafetensorsFile::open(kGolden / "model.safetensors");
  std::map<std::string, Tensor> weights;
  for (const auto& name : file.names()) weights[name] = file.tensor(name);
  return weights;
}

// input_u8.npy is the letterboxed image as bytes; the network reads it divided by 255.
Tensor golden_input() {
  const Tensor bytes = read_npy(kGolden / "input_u8.npy");
  Tensor x(DType::kF32, bytes.shape());
  const auto* in = bytes.data<std::uint8_t>();
  for (std::int64_t i = 0; i < bytes.numel(); ++i)
    x.mutable_f32()[static_cast<std::size_t>(i)] = in[i] / 255.0f;
  return x;
}

TEST(Yolov10Config, ReadsTheHubConfig) {
  const YoloConfig config = read_yolo_config(kGolden / "config.json");
  EXPECT_EQ(config.model, "yolov10n.yaml");
  EXPECT_EQ(config.imgsz, 320);
  EXPECT_EQ(config.max_det, 300);
  ASSERT_EQ(config.names.size(), 10u);
  EXPECT_EQ(config.names[0], "T-shirt/top");
  EXPECT_EQ(config.names[9], "Ankle boot");
}

TEST(Yolov10Config, ClearErrors) {
  const auto error = [](const std::string& text) {
    return error_of([&] { parse_yolo_config(text, "c.json"); });
  };
  EXPECT_EQ(error(R"({"model": "yolov10n.yaml", "imgsz": 640})"),
            "c.json: key 'names': missing (the class names, {\"0\": \"person\", ...})");
  EXPECT_EQ(
      error(R"({"model": "yolov10n.yaml", "imgsz": 650, "names": ["a"]})"),
      "c.json: key 'imgsz': expected a multiple of 32 (the stride of the coarsest detection level), got 650");
  EXPECT_EQ(error(R"({"model": "yolov10n.yaml", "imgsz": 100000, "names": ["a"]})"),
            "c.json: key 'imgsz': expected at most 4096 pixels, got 100000");
  EXPECT_EQ(error(R"({"model": "yolov8n.yaml", "names": ["a"]})"),
            "c.json: key 'model': unknown model 'yolov8n.yaml' (known: yolov10n.yaml, yolov10s.yaml, "
            "yolov10m.yaml, yolov10b.yaml, yolov10l.yaml, yolov10x.yaml)");
  EXPECT_EQ(error(R"({"names": ["a"]})"),
            "c.json: key 'model': expected the model's yaml name, such as \"yolov10n.yaml\"");
  EXPECT_EQ(error(R"({"model": "yolov10n.yaml", "task": "segment", "names": ["a"]})"),
            "c.json: key 'task': expected \"detect\", got \"segment\"");
  EXPECT_EQ(error(R"({"model": "yolov10n.yaml", "names": {"0": "a", "2": "b"}})"),
            "c.json: key 'names': ids must be 0 .. 1, got '2'");
  EXPECT_EQ(error(R"({"model": "yolov10n.yaml", "max_det": 0, "names": ["a"]})"),
            "c.json: key 'max_det': expected a positive integer, got 0");
}

// nlohmann refuses a number beyond double's range while parsing, with an exception that is not a
// parse_error; it must still end as the config's own error.
TEST(Yolov10Config, NumberBeyondDoubleRangeIsAConfigError) {
  const auto error = [](const std::string& text) {
    return error_of([&] { parse_yolo_config(text, "c.json"); });
  };
  const std::string message = error(R"({"model": "yolov10n.yaml", "imgsz": 1e328, "names": ["a"]})");
  EXPECT_TRUE(message.starts_with("c.json: invalid JSON")) << message;
  EXPECT_NE(message.find("1e328"), std::string::npos) << message;
}

TEST(Yolov10, GraphOfYolov10n) {
  const Yolov10Build build = build_yolov10(golden_weights(), read_yolo_config(kGolden / "config.json"), 1);
  verify(build.graph);
  EXPECT_EQ(build.num_classes, 10);
  // 4 box rows + 10 class rows; anchors at 320: 40 x 40 + 20 x 20 + 10 x 10.
  EXPECT_EQ(build.graph.value(build.graph.outputs()[0]).shape, (Shape{1, 14, 2100}));
  EXPECT_EQ(count_ops(build.graph, OpKind::kAttention), 1u);  // PSA
  EXPECT_EQ(count_ops(build.graph, OpKind::kUpsample), 2u);
  EXPECT_EQ(count_ops(build.graph, OpKind::kDetectDecode), 3u);  // P3, P4, P5
  EXPECT_EQ(count_ops(build.graph, OpKind::kMaxPool2d), 3u);     // SPPF
  const Node& repvgg = testing::node_named(build.graph, "model.model.22.m.0.cv1.2.fused");
  EXPECT_EQ(repvgg.attr<ConvAttrs>().kernel, (std::array<std::int64_t, 2>{7, 7}));
  // The one-to-many head is not run: cv2.* and cv3.* of layer 23, per level 2 Convs (5 tensors each)
  // + conv and bias for boxes, 4 Convs + conv and bias for classes: 3 x (12 + 22) tensors.
  EXPECT_EQ(build.unused_keys.size(), 102u);
  for (const auto& key : build.unused_keys) {
    EXPECT_TRUE(key.starts_with("model.model.23.cv2.") || key.starts_with("model.model.23.cv3.")) << key;
  }
}

// yolov10m and larger use C2fCIB without the large-kernel pair (lk=False): cv1.2 is a plain 3x3
// depthwise Conv. The yolov10n checkpoint with its RepVGG pair replaced by one builds that way.
TEST(Yolov10, CibWithoutTheLargeKernelPair) {
  auto weights = golden_weights();
  const std::string cib = "model.model.22.m.0.cv1.2.";
  for (auto it = weights.begin(); it != weights.end();) {
    it = it->first.starts_with(cib) ? weights.erase(it) : std::next(it);
  }
  const auto fill = [&](const std::string& key, Shape shape, float value) {
    Tensor t(DType::kF32, std::move(shape));
    for (float& v : t.mutable_f32()) v = value;
    weights[key] = std::move(t);
  };
  fill(cib + "conv.weight", {256, 1, 3, 3}, 0.1f);
  for (const char* p : {"bn.weight", "bn.running_var"}) fill(cib + p, {256}, 1.0f);
  for (const char* p : {"bn.bias", "bn.running_mean"}) fill(cib + p, {256}, 0.0f);
  const Yolov10Build build = build_yolov10(weights, read_yolo_config(kGolden / "config.json"), 1);
  verify(build.graph);
  const auto& conv = testing::node_named(build.graph, cib + "conv").attr<ConvAttrs>();
  EXPECT_EQ(conv.kernel, (std::array<std::int64_t, 2>{3, 3}));
  EXPECT_EQ(conv.groups, 256);
  EXPECT_FALSE(build.graph.find_node(cib + "fused").has_value());
}

TEST(Yolov10, ConfigMustAgreeWithTheCheckpoint) {
  YoloConfig config = read_yolo_config(kGolden / "config.json");
  config.names.resize(20);
  EXPECT_EQ(error_of([&] { build_yolov10(golden_weights(), config, 1); }),
            "checkpoint key 'model.model.23.one2one_cv3.0.2.weight': 10 classes, but config.json names 20");
}

// The decoded one-to-one head of both photos on the default CPU backend, after the graph passes, against
// the authors' code in float64 (stored as float32): boxes and scores each within 1e-4 relative
// (||y - ref|| / ||ref||, on every 4th anchor as stored); the same fp32 bound as the classifier goldens.
// Then the two-stage top-k: every detection whose reference score stands clearly apart from its
// neighbours' must be the same box and class. "Clearly": a gap above 1e-5 to the scores ranked just
// above and below, five times the 2e-6 bound on any score's error asserted here (measured 5.1e-9), so
// no error within the bound can swap the row with a neighbour. Rows inside a near-tie may legitimately swap
// order between float32 and float64, so they are only checked as a set through the decoded head above.
TEST(Yolov10, MatchesTheAuthorsOutput) {
  const YoloConfig config = read_yolo_config(kGolden / "config.json");
  const Tensor input = golden_input();
  Yolov10Build build = build_yolov10(golden_weights(), config, input.dim(0));
  run_passes(build.graph);
  CompileOptions options;
  options.batch = input.dim(0);
  const Tensor y = make_backend("cpu")->compile(build.graph, options)->run({input}).at(0);

  const Tensor ref = read_npy(kGolden / "one2one_subset.npy");
  const std::int64_t batch = y.dim(0), rows = y.dim(1), anchors = y.dim(2), step = anchors / ref.dim(2);
  ASSERT_EQ(ref.shape(), (Shape{batch, rows, anchors / step}));
  double box_diff = 0, box_norm = 0, score_diff = 0, score_norm = 0, score_max = 0;
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < ref.dim(2); ++k) {
        const double a = y.f32()[static_cast<std::size_t>((n * rows + r) * anchors + k * step)];
        const double b = ref.f32()[static_cast<std::size_t>((n * rows + r) * ref.dim(2) + k)];
        (r < 4 ? box_diff : score_diff) += (a - b) * (a - b);
        (r < 4 ? box_norm : score_norm) += b * b;
        if (r >= 4) score_max = std::max(score_max, std::abs(a - b));
      }
    }
  }
  const double box_error = std::sqrt(box_diff / box_norm), score_error = std::sqrt(score_diff / score_norm);
  std::cout << "yolov10n one2one: boxes " << box_error << ", scores " << score_error
            << " relative; max score diff " << score_max << "\n";
  EXPECT_LE(box_error, 1e-4);
  EXPECT_LE(score_error, 1e-4);
  EXPECT_LE(score_max, 2e-6);

  const auto detections = select_detections(y, config.max_det);
  const Tensor expected = read_npy(kGolden / "detections.npy");  // [N, 300, 6] float64
  ASSERT_EQ(expected.shape(), (Shape{batch, config.max_det, 6}));
  const double* e = expected.data<double>();
  constexpr double kClearGap = 1e-5;
  for (std::int64_t n = 0; n < batch; ++n) {
    ASSERT_EQ(static_cast<std::int64_t>(detections[static_cast<std::size_t>(n)].size()), config.max_det);
    std::int64_t checked = 0;
    for (std::int64_t r = 0; r < config.max_det; ++r) {
      const auto ref_row = [&](std::int64_t row) { return e + (n * config.max_det + row) * 6; };
      const double score = ref_row(r)[4];
      const bool above = r == 0 || ref_row(r - 1)[4] - score > kClearGap;
      const bool below = r + 1 == config.max_det || score - ref_row(r + 1)[4] > kClearGap;
      if (!above || !below) continue;
      ++checked;
      const Detection& d = detections[static_cast<std::size_t>(n)][static_cast<std::size_t>(r)];
      SCOPED_TRACE(::testing::Message() << "image " << n << " row " << r);
      EXPECT_EQ(d.label, static_cast<std::int64_t>(ref_row(r)[5]));
      EXPECT_NEAR(d.score, score, 1e-5);
      const float box[4] = {d.x1, d.y1, d.x2, d.y2};
      for (int i = 0; i < 4; ++i) EXPECT_NEAR(box[i], ref_row(r)[i], 0.05);  // pixels, of a 320 input
    }
    std::cout << "image " << n << ": " << checked << " of " << config.max_det
              << " detections clearly ranked\n";
    EXPECT_GE(checked, 10);  // guards against a vacuous pass
  }
}

// The same network in bf16 on the cpu backend (where the CPU runs bf16; else skipped, saying why): the
// decoded head against the authors' float64 output. bf16's unit roundoff is 2^-8 (8x fp16's); measured:
// boxes 3.3e-3, scores 0.12 relative. The photos hold no Fashion-MNIST item, so the scores are tiny
// sigmoids (below 0.02) of logits far below zero, where a logit's absolute error becomes the score's
// relative error. Bounds: boxes 5e-2, scores 0.8; a wrong layer or layout moves the boxes by order 1.
TEST(Yolov10, Bf16RunsAndStaysNearTheAuthorsOutput) {
  const std::unique_ptr<Backend> cpu = make_backend("cpu");
  if (const std::string refusal = cpu->precision_refusal(Precision::kBf16); !refusal.empty())
    GTEST_SKIP() << "no bf16 on this CPU: " << refusal;
  const YoloConfig config = read_yolo_config(kGolden / "config.json");
  const Tensor input = golden_input();
  Yolov10Build build = build_yolov10(golden_weights(), config, input.dim(0));
  run_passes(build.graph);
  assign_precision(build.graph, Precision::kBf16);
  widen_constants_to_f32(build.graph);
  CompileOptions options;
  options.batch = input.dim(0);
  const Tensor y = cpu->compile(build.graph, options)->run({input}).at(0);
  const Tensor ref = read_npy(kGolden / "one2one_subset.npy");
  const std::int64_t batch = y.dim(0), rows = y.dim(1), anchors = y.dim(2), step = anchors / ref.dim(2);
  double diff[2] = {0, 0}, norm[2] = {0, 0};
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < ref.dim(2); ++k) {
        const double a = y.f32()[static_cast<std::size_t>((n * rows + r) * anchors + k * step)];
        const double b = ref.f32()[static_cast<std::size_t>((n * rows + r) * ref.dim(2) + k)];
        diff[r < 4 ? 0 : 1] += (a - b) * (a - b);
        norm[r < 4 ? 0 : 1] += b * b;
      }
    }
  }
  const double box_error = std::sqrt(diff[0] / norm[0]), score_error = std::sqrt(diff[1] / norm[1]);
  std::cout << "yolov10n bf16 one2one: boxes " << box_error << ", scores " << score_error << " relative\n";
  EXPECT_LE(box_error, 5e-2);
  EXPECT_LE(score_error, 0.8);
  EXPECT_GT(box_error + score_error, 1e-5) << "the bf16 rounding was lost";
}

// kiln's letterbox of the two photos against the authors' (OpenCV) input_u8.npy: byte for byte.
TEST(Yolov10Letterbox, MatchesTheAuthorsInput) {
  const std::int64_t size = read_yolo_config(kGolden / "config.json").imgsz;  // 320
  const Tensor expected = read_npy(kGolden / "input_u8.npy");  // [2, 3, 320, 320] uint8
  ASSERT_EQ(expected.shape(), (Shape{2, 3, size, size}));
  const auto* ref = expected.data<std::uint8_t>();
  const fs::path photos = fs::path(KILN_TEST_DATA_DIR) / "photos";
  const char* names[] = {"dog.jpg", "horses.jpg"};
  for (std::int64_t n = 0; n < 2; ++n) {
    SCOPED_TRACE(names[n]);
    const Letterbox box = letterbox(decode_image(photos / names[n]), size);
    std::int64_t differing = 0;
    const std::int64_t area = size * size;
    for (std::int64_t i = 0; i < area; ++i) {
      for (std::int64_t c = 0; c < 3; ++c) {
        differing += box.image.rgb[static_cast<std::size_t>(i * 3 + c)] != ref[(n * 3 + c) * area + i];
      }
    }
    EXPECT_EQ(differing, 0);

    // A box on the letterboxed image maps back into the photo's own pixels.
    Detection d;
    d.x1 = static_cast<float>(box.left);
    d.y1 = static_cast<float>(box.top);
    d.x2 = static_cast<float>(size - box.left);
    d.y2 = static_cast<float>(size - box.top);
    const Detection o = to_original(d, box);
    EXPECT_NEAR(o.x1, 0.0, 1.0);
    EXPECT_NEAR(o.y1, 0.0, 1.0);
    EXPECT_NEAR(o.x2, static_cast<double>(box.original_width), 1.0);
    EXPECT_NEAR(o.y2, static_cast<double>(box.original_height), 1.0);
  }
}

}  // namespace
}  // namespace kiln
