// YOLOv10n on the CUDA backend: every layer of the detector's graph has a CUDA kernel (checked without a
// device, as `--strict-backend` requires), and on a device the decoded head matches the reference backend
// in fp32 and fp16; the selection kernel called directly selects what the reference selects, also for
// shapes the graph's shape rules exclude. The single operators are in the cross-backend operator test
// (op_test/).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "cuda_test_util.h"
#include "families/yolov10/builder.h"
#include "families/yolov10/config.h"
#include "graph/precision_assignment.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "onednn_graph_util.h"
#include "onednn_test_util.h"
#include "passes/pass_manager.h"
#include "testing/random_tensor.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/kernels/detect_select_kernels.h"
#include "backends/cuda/program/fusion.h"
#include "cuda_kernel_test_util.h"
#include "reference/detect_select.h"
#endif

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::cuda_built;

const fs::path kGolden = fs::path(KILN_TEST_DATA_DIR) / "golden" / "yolov10n";

Graph yolov10n_graph(std::int64_t imgsz, std::int64_t batch) {
  const SafetensorsFile file = SafetensorsFile::open(kGolden / "model.safetensors");
  std::map<std::string, Tensor> weights;
  for (const auto& name : file.names()) weights[name] = file.tensor(name);
  YoloConfig config = read_yolo_config(kGolden / "config.json");
  config.imgsz = imgsz;
  return build_yolov10(weights, config, batch).graph;
}

Graph as_fp16(Graph graph) {
  assign_precision(graph, Precision::kF16);
  widen_constants_to_f32(graph);  // as the Engine hands graphs to backends
  return graph;
}

// The operators of `graph` whose nodes the cuda backend refuses, each with its first refusal.
std::vector<std::string> refused_layers(const Graph& graph) {
  const auto cuda = make_backend("cuda");
  std::vector<std::string> refused;
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    const std::string reason = cuda->unsupported_reason(graph, node);
    if (!reason.empty()) refused.push_back(cat(node.name, " (", op_kind_name(node.op), "): ", reason));
  }
  return refused;
}

std::set<OpKind> operators_of(const Graph& graph) {
  std::set<OpKind> ops;
  for (const NodeId id : graph.topological_order()) ops.insert(graph.node(id).op);
  return ops;
}

TEST(CudaDetectorTest, EveryLayerOfYolov10nHasACudaKernel) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  Graph raw = yolov10n_graph(640, 1);
  // The detector's own operators are there to be checked.
  const std::set<OpKind> ops = operators_of(raw);
  for (const OpKind op : {OpKind::kChannelSlice, OpKind::kConcat, OpKind::kUpsample, OpKind::kMaxPool2d,
                          OpKind::kAttention, OpKind::kDetectDecode}) {
    EXPECT_TRUE(ops.contains(op)) << op_kind_name(op);
  }
  Graph optimized = raw;
  run_passes(optimized);
  for (const Graph* graph : {&raw, &optimized}) {
    EXPECT_EQ(refused_layers(*graph), std::vector<std::string>{});
    EXPECT_EQ(refused_layers(as_fp16(*graph)), std::vector<std::string>{});
  }
}

TEST(CudaDetectorTest, AttentionWiderThanTheKernelIsRefused) {
  if (!cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  testing::SmallGraph g;
  const ValueId qkv = g.input("qkv", {2 * 64 + 128, 4, 4});
  g.output(g.node(OpKind::kAttention, {qkv}, AttentionAttrs{1, 64, 128}));
  EXPECT_EQ(refused_layers(g.graph),
            std::vector<std::string>{
                "attention0 (attention): key_dim + head_dim is 192; the CUDA kernel holds at most 160"});
}

#if KILN_HAVE_CUDA
// Each level's decode reads the box bins and class logits where their convolutions wrote them: the concat
// joining them is no step of its own (fusion.h). The head matching the reference below checks the reads.
TEST(CudaDetectorTest, TheDecodeReadsTheHeadsHalvesApart) {
  Graph graph = yolov10n_graph(640, 1);
  run_passes(graph);
  const std::vector<NodeId> order = graph.topological_order();
  const cuda::Fusions fusions = cuda::find_fusions(graph, order);
  int decodes = 0;
  for (const NodeId id : order) {
    if (graph.node(id).op != OpKind::kDetectDecode) continue;
    ++decodes;
    const NodeId concat = fusions.concat_into_decode[static_cast<std::size_t>(id)];
    ASSERT_NE(concat, kNoNode) << graph.node(id).name;
    EXPECT_EQ(graph.node(concat).op, OpKind::kConcat);
    EXPECT_TRUE(fusions.absorbed[static_cast<std::size_t>(concat)]);
  }
  EXPECT_EQ(decodes, 3);
}
#endif

// A 256 x 256 window of the golden photos (real content, so the scores are not all near zero), / 255.
Tensor photo_window(std::int64_t size) {
  const Tensor bytes = read_npy(kGolden / "input_u8.npy");  // [2, 3, 320, 320]
  const std::int64_t n = bytes.dim(0), c = bytes.dim(1), h = bytes.dim(2), w = bytes.dim(3);
  const std::int64_t top = (h - size) / 2, left = (w - size) / 2;
  Tensor x(DType::kF32, {n, c, size, size});
  const auto* in = bytes.data<std::uint8_t>();
  auto out = x.mutable_f32();
  std::size_t at = 0;
  for (std::int64_t plane = 0; plane < n * c; ++plane) {
    for (std::int64_t y = 0; y < size; ++y) {
      for (std::int64_t xx = 0; xx < size; ++xx)
        out[at++] = in[(plane * h + top + y) * w + left + xx] / 255.0f;
    }
  }
  return x;
}

// ||y - ref|| / ||ref|| over rows [first, last) of the decoded head [N, 4 + classes, anchors].
double rows_difference(const Tensor& y, const Tensor& ref, std::int64_t first, std::int64_t last) {
  const std::int64_t rows = ref.dim(1), anchors = ref.dim(2);
  double diff = 0.0, norm = 0.0;
  for (std::int64_t n = 0; n < ref.dim(0); ++n) {
    for (std::int64_t r = first; r < last; ++r) {
      for (std::int64_t a = 0; a < anchors; ++a) {
        const auto i = static_cast<std::size_t>((n * rows + r) * anchors + a);
        diff += (y.f32()[i] - ref.f32()[i]) * static_cast<double>(y.f32()[i] - ref.f32()[i]);
        norm += ref.f32()[i] * static_cast<double>(ref.f32()[i]);
      }
    }
  }
  return std::sqrt(diff / norm);
}

// Bounds on ||y - ref|| / ||ref|| over the boxes and, separately, the scores: the boxes (input pixels)
// would otherwise hide the scores (at most 1). fp32: 1e-4, the project's f32 bar for networks. fp16: both
// sides store every activation in fp16 and differ where a value straddles a rounding boundary, compounding
// over the detector's ~90 layers; a score's relative error is about its logit's absolute error, which
// grows to ~1e-2 (the oneDNN backend in fp16 measured 5e-4 on the boxes, 1.0e-2 on the scores). Any
// indexing or layout mistake is O(1).
struct Bounds {
  double boxes, scores;
};

void expect_cuda_matches_reference(const Graph& graph, Bounds bounds) {
  const Tensor x = photo_window(256);
  const auto ours = testing::run_on("cuda", graph, {x});
  const auto ref = testing::run_on("cpu-reference", graph, {x});
  // The decoded head, then the graph's own selection of it (detect_select): its rows are compared by the
  // op test, where both sides select from the same values; here near-tied scores may rank differently.
  ASSERT_EQ(ours.size(), 2u);
  ASSERT_EQ(ref.size(), 2u);
  ASSERT_EQ(ours[0].shape(), (Shape{2, 4 + 10, 32 * 32 + 16 * 16 + 8 * 8}));  // the golden's 10 classes
  ASSERT_EQ(ours[1].shape(), (Shape{2, 300, 6}));
  EXPECT_LE(rows_difference(ours[0], ref[0], 0, 4), bounds.boxes) << "boxes";
  EXPECT_LE(rows_difference(ours[0], ref[0], 4, 4 + 10), bounds.scores) << "scores";
}

TEST(CudaDetectorTest, Yolov10nMatchesTheReferenceInFp32) {
  KILN_SKIP_WITHOUT_GPU();
  Graph graph = yolov10n_graph(256, 2);
  run_passes(graph);
  expect_cuda_matches_reference(graph, {1e-4, 1e-4});
}

TEST(CudaDetectorTest, Yolov10nMatchesTheReferenceInFp16) {
  KILN_SKIP_WITHOUT_GPU();
  Graph graph = yolov10n_graph(256, 2);
  run_passes(graph);
  expect_cuda_matches_reference(as_fp16(std::move(graph)), {5e-3, 5e-2});
}

#if KILN_HAVE_CUDA

// Scores of a selection case: uniform, on a grid of eighths (ties everywhere), or all equal.
enum class Scores { kUniform, kEighths, kEqual };

struct SelectCase {
  int n, anchors, classes, max_det;
  Scores scores;
  bool fp16;
};

std::string case_name(const SelectCase& c) {
  const char* scores[] = {"uniform", "eighths", "equal"};
  return cat("n", c.n, "_anchors", c.anchors, "_classes", c.classes, "_top", c.max_det, "_",
             scores[static_cast<int>(c.scores)], c.fp16 ? "_fp16" : "_fp32");
}

void PrintTo(const SelectCase& c, std::ostream* out) { *out << case_name(c); }

// Decoded predictions [n, 4 + classes, anchors] as the reference takes them, each image different.
Tensor select_input(const SelectCase& c) {
  Tensor t = testing::random_tensor({c.n, 4 + c.classes, c.anchors}, 17, 0.0f, 1.0f);
  auto v = t.mutable_f32();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const std::int64_t row = i / c.anchors % (4 + c.classes);
    float& x = v[static_cast<std::size_t>(i)];
    if (row < 4)
      x *= 640.0f;
    else if (c.scores == Scores::kEighths)
      x = std::floor(x * 8) / 8;
    else if (c.scores == Scores::kEqual)
      x = 0.25f;
  }
  return t;
}

// [n, rows, cols] -> [n, cols, rows].
Tensor swap_last_axes(const Tensor& t) {
  const std::int64_t n = t.dim(0), rows = t.dim(1), cols = t.dim(2);
  Tensor y(DType::kF32, {n, cols, rows});
  for (std::int64_t i = 0; i < n * rows * cols; ++i) {
    const std::int64_t col = i % cols, row = i / cols % rows, image = i / (rows * cols);
    y.mutable_f32()[static_cast<std::size_t>((image * cols + col) * rows + row)] =
        t.f32()[static_cast<std::size_t>(i)];
  }
  return y;
}

class CudaDetectSelectKernelTest : public ::testing::TestWithParam<SelectCase> {};

// Every output value equal to the reference's (in fp16, the reference's f32 value rounded once), rows past
// the last detection zero: the same detections in the same order.
TEST_P(CudaDetectSelectKernelTest, SelectsWhatTheReferenceSelects) {
  KILN_SKIP_WITHOUT_GPU();
  const SelectCase& c = GetParam();
  const Tensor decoded = testing::held(select_input(c), c.fp16);
  const auto images = reference::select_detections(decoded, c.max_det);
  Tensor expected(DType::kF32, {c.n, 6, c.max_det});  // the kernel's [n, max_det, 6] channels last
  for (std::size_t n = 0; n < images.size(); ++n) {
    for (std::size_t r = 0; r < images[n].size(); ++r) {
      const reference::SelectedDetection& d = images[n][r];
      const float row[6] = {d.x1, d.y1, d.x2, d.y2, d.score, static_cast<float>(d.label)};
      for (std::size_t field = 0; field < 6; ++field)
        expected.mutable_f32()[(n * 6 + field) * static_cast<std::size_t>(c.max_det) + r] = row[field];
    }
  }
  expected = testing::held(expected, c.fp16);
  const cuda::DeviceBuffer x = testing::on_device(swap_last_axes(decoded), c.fp16);
  cuda::DeviceBuffer y((c.fp16 ? expected.to(DType::kF16) : expected).nbytes());
  const cuda::DetectSelectShape shape{c.n, c.anchors, c.classes, c.max_det};
  const cuda::DeviceBuffer workspace(cuda::detect_select_workspace_bytes(shape));
  cuda::check(cuda::detect_select(x.data(), y.data(), workspace.data(),
                                  c.fp16 ? cuda::Elem::kF16 : cuda::Elem::kF32, shape, nullptr),
              "launching detect_select");
  cuda::check(cudaDeviceSynchronize(), "running detect_select");
  const Tensor got = testing::from_device(y, c.fp16 ? DType::kF16 : DType::kF32, expected.shape());
  std::int64_t differing = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i)
    differing += got.f32()[static_cast<std::size_t>(i)] != expected.f32()[static_cast<std::size_t>(i)];
  EXPECT_EQ(differing, 0) << "of " << got.numel() << " values";
}

constexpr int kTop = cuda::kDetectSelectMaxDet;

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaDetectSelectKernelTest,
    ::testing::Values(
        // YOLOv10 at 640 x 640, one image and a batch.
        SelectCase{1, 8400, 80, 300, Scores::kUniform, false},
        SelectCase{1, 8400, 80, 300, Scores::kUniform, true},
        SelectCase{4, 8400, 80, 300, Scores::kUniform, true},
        SelectCase{3, 8400, 80, 300, Scores::kEighths, false},
        // Every score equal: both stages decided by the index alone.
        SelectCase{3, 8400, 80, 300, Scores::kEqual, false},
        SelectCase{2, 8400, 80, 300, Scores::kEqual, true},
        // As many anchors as max_det; fewer (stage 1 keeps them all); fewer pairs (zero rows after them).
        SelectCase{2, 300, 80, 300, Scores::kEighths, true},
        SelectCase{2, 100, 80, 300, Scores::kUniform, false},
        SelectCase{2, 10, 3, 50, Scores::kEighths, false},
        // The most detections, in shared memory (20 classes) and in the general kernel (80 classes).
        SelectCase{2, 4096, 20, kTop, Scores::kEighths, true},
        SelectCase{2, 4096, 20, kTop, Scores::kEqual, false},
        SelectCase{2, 8400, 80, kTop, Scores::kEighths, false},
        SelectCase{2, 8400, 80, kTop - 1, Scores::kUniform, true},
        SelectCase{3, 64, 5, 10, Scores::kEighths, true}),
    [](const auto& param_info) { return case_name(param_info.param); });

#endif  // KILN_HAVE_CUDA

}  // namespace
}  // namespace kiln
