// YOLOv10's operators: channel slices (C2f's halves, one part per attention head), concatenation of
// values in different layouts and of decoded levels, nearest upsampling, attention over the pixels and
// the detection decode, each on a graph input and behind a convolution; then the detector's own sizes
// in fp32 and fp16 (add_yolov10_cases); then the NMS-free selection (add_detect_select_cases).
#include <cmath>
#include <limits>
#include <tuple>

#include "op_case_util.h"

namespace kiln::testing {
namespace {

// The case and its fp16 twin.
void add_with_fp16(std::vector<OpCase>& cases, OpCase c) {
  cases.push_back(c);
  cases.push_back(fp16_case(c));
}

// Widths and counts where the CUDA copies cannot use 16-byte words (odd channel counts), more inputs
// than one launch gathers, and joins along the spatial axes.
void add_data_movement_cases(std::vector<OpCase>& cases) {
  add_with_fp16(cases, graph_case("concat_ten_inputs", OpKind::kConcat, 2, [](SmallGraph& g) {
                  const ValueId x = g.conv(g.input("x", {6, 4, 5}), 30, conv_attrs(1, 1, 0));
                  std::vector<ValueId> parts;
                  for (std::int64_t i = 0; i < 10; ++i)
                    parts.push_back(g.node(OpKind::kChannelSlice, {x}, SliceAttrs{1, 3 * i, 3 * i + 3}));
                  g.output(g.node(OpKind::kConcat, parts, ConcatAttrs{1}));
                }));
  for (const std::int64_t axis : {2, 3}) {
    add_with_fp16(cases, graph_case(cat("concat_axis", axis), OpKind::kConcat, 2, [=](SmallGraph& g) {
                    const ValueId a = g.conv(g.input("a", {8, 3, 4}), 8, conv_attrs(1, 1, 0));
                    const ValueId b = g.conv(g.input("b", axis == 2 ? Shape{8, 5, 4} : Shape{8, 3, 6}), 8,
                                             conv_attrs(1, 1, 0));
                    g.output(g.node(OpKind::kConcat, {a, b, a}, ConcatAttrs{axis}));
                  }));
  }
  add_with_fp16(
      cases, graph_case("upsample_x2_c6", OpKind::kUpsample, 2, [](SmallGraph& g) {
        g.output(g.node(OpKind::kUpsample, {g.conv(g.input("x", {6, 3, 4}), 6, conv_attrs(1, 1, 0))},
                        UpsampleAttrs{2}));
      }));
}

// PSA's attention at the detectors' own sizes (20 x 20 pixels at 640 x 640; 2 heads for YOLOv10n, 4 for
// YOLOv10s): at batch 1 the CUDA kernel splits the keys over several blocks, at batch 2 fewer, at batch
// 8 not at all; and 9 x 7 pixels, no multiple of the query or key tiles.
void add_psa_attention_cases(std::vector<OpCase>& cases) {
  struct Psa {
    const char* name;
    std::int64_t batch, heads, height, width;
  };
  for (const Psa& p : {Psa{"yolov10n_20x20", 1, 2, 20, 20}, Psa{"yolov10s_20x20", 2, 4, 20, 20},
                       Psa{"yolov10n_20x20_b8", 8, 2, 20, 20}, Psa{"yolov10n_9x7", 1, 2, 9, 7}}) {
    add_with_fp16(cases,
                  graph_case(cat("attention_psa_", p.name), OpKind::kAttention, p.batch, [=](SmallGraph& g) {
                    const ValueId x = g.input("x", {64 * p.heads, p.height, p.width});
                    const ValueId qkv = g.conv(x, p.heads * (2 * 32 + 64), conv_attrs(1, 1, 0));
                    g.output(g.node(OpKind::kAttention, {qkv}, AttentionAttrs{p.heads, 32, 64}));
                  }));
  }
}

// YOLOv10n's sizes: SPPF's three chained 5x5 max pools joined with their input; PSA's attention (2 heads,
// key_dim 32, head_dim 64) over 10 x 10 pixels, more than one tile of queries and keys; its value slice
// (one part per head); a level's decode with 16 bins and 80 classes, its boxes sliced back out.
void add_yolov10_cases(std::vector<OpCase>& cases) {
  add_with_fp16(cases, graph_case("sppf_max_pools", OpKind::kMaxPool2d, 2, [](SmallGraph& g) {
                  std::vector<ValueId> parts = {g.conv(g.input("x", {16, 10, 10}), 16, conv_attrs(1, 1, 0))};
                  for (int i = 0; i < 3; ++i)
                    parts.push_back(g.node(OpKind::kMaxPool2d, {parts.back()}, pool_attrs(5, 1, 2)));
                  g.output(g.node(OpKind::kConcat, parts, ConcatAttrs{1}));
                }));
  add_with_fp16(
      cases, graph_case("attention_psa_10x10", OpKind::kAttention, 2, [](SmallGraph& g) {
        const ValueId qkv = g.conv(g.input("x", {128, 10, 10}), 2 * (2 * 32 + 64), conv_attrs(1, 1, 0));
        g.output(g.node(OpKind::kAttention, {qkv}, AttentionAttrs{2, 32, 64}));
        g.output(g.node(OpKind::kChannelSlice, {qkv}, SliceAttrs{2, 64, 128}));
      }));
  add_psa_attention_cases(cases);
  add_with_fp16(cases,
                graph_case(
                    "detect_decode_reg16_c80", OpKind::kDetectDecode, 2,
                    [](SmallGraph& g) {
                      const ValueId head = g.conv(g.input("x", {16, 4, 5}), 4 * 16 + 80, conv_attrs(1, 1, 0));
                      const ValueId level = g.node(OpKind::kDetectDecode, {head}, DetectAttrs{16, 16});
                      g.output(level);
                      g.output(g.node(OpKind::kChannelSlice, {level}, SliceAttrs{1, 0, 4}));
                    },
                    3.0f));
}

// detect_select's bound. A backend must select the same (anchor, class) pairs in the same order as the
// reference, and each output value is then a stored score, a label or one correctly rounded add of a
// stored centre and half a stored size, in f32 on both sides (in fp16, that same f32 value rounded once):
// the difference is exactly 0. One detection out of place moves a whole row of boxes, scores and labels,
// at least about 1e-4 relative even for a neighbouring class of the same anchor, so 1e-6 is tight.
constexpr double kSelectionBound = 1e-6;

// Decoded predictions [batch, 4 + classes, anchors] with scores on a grid of eighths, so that best
// scores and (anchor, class) scores tie exactly (in fp16 as well), and NaNs placed where the ranking
// decides: anchor 3's first score is NaN, so its best is NaN and stage 1 drops it although its other
// scores are the highest; anchor 5's NaN is a later score, so its best is 1 and stage 2 must pass the NaN
// over.
Tensor tied_predictions(std::int64_t batch, std::int64_t classes, std::int64_t anchors) {
  Tensor t = random_tensor({batch, 4 + classes, anchors}, 11, 0.0f, 64.0f);
  const auto v = t.mutable_f32();
  const auto at = [&](std::int64_t n, std::int64_t c, std::int64_t a) -> float& {
    return v[static_cast<std::size_t>((n * (4 + classes) + c) * anchors + a)];
  };
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t c = 0; c < classes; ++c) {
      for (std::int64_t a = 0; a < anchors; ++a) at(n, 4 + c, a) = std::floor(at(n, 4 + c, a) / 8) / 8;
      at(n, 4 + c, 3) = 1.0f;
      at(n, 4 + c, 5) = 1.0f;
    }
    at(n, 4, 3) = std::numeric_limits<float>::quiet_NaN();
    at(n, 4 + 2, 5) = std::numeric_limits<float>::quiet_NaN();
  }
  return t;
}

// Every class score of every anchor the same: both stages decided by the index alone.
Tensor equal_predictions(std::int64_t batch, std::int64_t classes, std::int64_t anchors) {
  Tensor t = random_tensor({batch, 4 + classes, anchors}, 13, 0.0f, 64.0f);
  const auto v = t.mutable_f32();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (static_cast<std::int64_t>(i) / anchors % (4 + classes) >= 4) v[i] = 0.5f;
  }
  return t;
}

enum class Scores { kRandom, kTiedAndNan, kEqual };

// Selection cases read decoded predictions as a graph input ([N, C, L], stored [N, L, C] on cuda), so
// that both sides rank exactly the same values; each image of the batch differs.
OpCase selection_case(std::string name, std::int64_t classes, std::int64_t anchors, std::int64_t max_det,
                      Scores scores, std::int64_t batch = 2) {
  OpCase c{std::move(name), OpKind::kDetectSelect, kSelectionBound, {}};
  c.make = [=] {
    SmallGraph g;
    const ValueId decoded = g.input("decoded", {4 + classes, anchors});
    g.output(g.node(OpKind::kDetectSelect, {decoded}, DetectSelectAttrs{max_det}));
    const Shape shape{batch, 4 + classes, anchors};
    Tensor x = scores == Scores::kRandom       ? random_tensor(shape, 3, -1.0f, 1.0f)
               : scores == Scores::kTiedAndNan ? tied_predictions(batch, classes, anchors)
                                               : equal_predictions(batch, classes, anchors);
    return CaseGraph{std::move(g.graph), {std::move(x)}};
  };
  return c;
}

// Small, with ties and NaNs; YOLOv10 at 640 x 640 (8400 anchors, 80 classes, 300 detections), random, with
// eight score values only (ties decided by the index in every stage) and with every score equal; as many
// anchors as detections; the most detections the CUDA kernel takes (2048), with 20 classes (its
// shared-memory path) and 80 (its general path); each with its fp16 twin, where rounding to fp16 makes
// ties among the random scores frequent.
void add_detect_select_cases(std::vector<OpCase>& cases) {
  for (OpCase c :
       {selection_case("detect_select_ties_and_nan", 5, 64, 10, Scores::kTiedAndNan),
        selection_case("detect_select_yolov10_8400", 80, 8400, 300, Scores::kRandom),
        selection_case("detect_select_yolov10_8400_b3", 80, 8400, 300, Scores::kRandom, 3),
        selection_case("detect_select_yolov10_8400_ties_and_nan", 80, 8400, 300, Scores::kTiedAndNan),
        selection_case("detect_select_yolov10_8400_all_equal", 80, 8400, 300, Scores::kEqual),
        selection_case("detect_select_anchors_equal_max_det", 80, 300, 300, Scores::kTiedAndNan),
        selection_case("detect_select_max_det_2048_c20", 20, 4096, 2048, Scores::kTiedAndNan),
        selection_case("detect_select_max_det_2048_c20_all_equal", 20, 4096, 2048, Scores::kEqual),
        selection_case("detect_select_max_det_2048_c80", 80, 8400, 2048, Scores::kTiedAndNan)}) {
    OpCase twin = fp16_case(c);
    twin.bound = kSelectionBound;
    cases.push_back(std::move(c));
    cases.push_back(std::move(twin));
  }
}

}  // namespace

std::vector<OpCase> detection_cases() {
  std::vector<OpCase> cases;
  for (const bool behind_conv : {false, true}) {
    const char* suffix = source_suffix(behind_conv);
    for (const std::int64_t c : {32, 24}) {
      cases.push_back(
          graph_case(cat("channel_slice_halves_c", c, suffix), OpKind::kChannelSlice, 2, [=](SmallGraph& g) {
            const ValueId x = source(g, g.input("x", {c, 6, 5}), behind_conv);
            g.output(g.node(OpKind::kChannelSlice, {x}, SliceAttrs{1, 0, c / 2}));
            g.output(g.node(OpKind::kChannelSlice, {x}, SliceAttrs{1, c / 2, c}));
          }));
      cases.push_back(graph_case(
          cat("channel_slice_per_head_c", c, suffix), OpKind::kChannelSlice, 2, [=](SmallGraph& g) {
            g.output(g.node(OpKind::kChannelSlice, {source(g, g.input("x", {c, 6, 5}), behind_conv)},
                            SliceAttrs{2, 1, 3}));
          }));
      cases.push_back(graph_case(cat("concat_channels_c", c, suffix), OpKind::kConcat, 2, [=](SmallGraph& g) {
        const ValueId x = source(g, g.input("x", {c, 6, 5}), behind_conv);
        const ValueId low = g.node(OpKind::kChannelSlice, {x}, SliceAttrs{1, 0, c / 2});
        const ValueId mixed = g.conv(g.input("y", {c / 2, 6, 5}), c / 2, conv_attrs(3, 1, 1));
        g.output(g.node(OpKind::kConcat, {low, mixed, x}, ConcatAttrs{1}));
      }));
    }
    cases.push_back(graph_case(cat("upsample_x2", suffix), OpKind::kUpsample, 2, [=](SmallGraph& g) {
      g.output(
          g.node(OpKind::kUpsample, {source(g, g.input("x", {8, 5, 6}), behind_conv)}, UpsampleAttrs{2}));
    }));
    cases.push_back(graph_case(cat("attention_2_heads", suffix), OpKind::kAttention, 2, [=](SmallGraph& g) {
      const ValueId qkv = source(g, g.input("qkv", {2 * (2 * 4 + 8), 6, 5}), behind_conv);
      g.output(g.node(OpKind::kAttention, {qkv}, AttentionAttrs{2, 4, 8}));
    }));
    cases.push_back(graph_case(
        cat("detect_decode_reg4_stride8", suffix), OpKind::kDetectDecode, 2,
        [=](SmallGraph& g) {
          const ValueId head = source(g, g.input("x", {4 * 4 + 3, 6, 5}), behind_conv);
          const ValueId level = g.node(OpKind::kDetectDecode, {head}, DetectAttrs{4, 8});
          g.output(
              g.node(OpKind::kConcat, {level, level}, ConcatAttrs{2}));  // levels joined along the pixels
        },
        3.0f));
  }
  cases.push_back(graph_case("attention_1_head", OpKind::kAttention, 1, [](SmallGraph& g) {
    g.output(g.node(OpKind::kAttention, {g.input("qkv", {2 * 8 + 16, 4, 4})}, AttentionAttrs{1, 8, 16}));
  }));
  cases.push_back(graph_case(
      "detect_decode_reg16_stride32", OpKind::kDetectDecode, 1,
      [](SmallGraph& g) {
        g.output(g.node(OpKind::kDetectDecode, {g.input("x", {4 * 16 + 5, 3, 4})}, DetectAttrs{16, 32}));
      },
      3.0f));
  // Levels large enough for the CUDA decode's tiled kernel: 47 x 53 pixels (small tiles, a partial last
  // tile) and 80 x 80 at batch 11 (large tiles), YOLOv10's 16 bins and 80 classes.
  for (const auto& [name, batch, h, w] : {std::tuple{"detect_decode_tiled_47x53", 1, 47, 53},
                                          std::tuple{"detect_decode_tiled_80x80_b11", 11, 80, 80}}) {
    add_with_fp16(cases, graph_case(
                             name, OpKind::kDetectDecode, batch,
                             [=](SmallGraph& g) {
                               g.output(g.node(OpKind::kDetectDecode, {g.input("x", {4 * 16 + 80, h, w})},
                                               DetectAttrs{16, 8}));
                             },
                             3.0f));
  }
  cases.push_back(fp16_case(graph_case("upsample_x2_after_conv", OpKind::kUpsample, 2, [](SmallGraph& g) {
    g.output(g.node(OpKind::kUpsample, {g.conv(g.input("x", {8, 5, 6}), 8, conv_attrs(3, 1, 1))},
                    UpsampleAttrs{2}));
  })));
  const std::size_t first_fp16 = cases.size();
  for (std::size_t i = 0; i < first_fp16; ++i) {
    if (cases[i].name.ends_with("_behind_conv")) cases.push_back(fp16_case(cases[i]));
  }
  add_data_movement_cases(cases);
  add_yolov10_cases(cases);
  add_detect_select_cases(cases);
  return cases;
}

}  // namespace kiln::testing
