// YOLOv10's operators: channel slices (C2f's halves, one part per attention head), concatenation of
// values in different layouts and of decoded levels, nearest upsampling, attention over the pixels and
// the detection decode, each on a graph input and behind a convolution.
#include "op_case_util.h"

namespace kiln::testing {

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
  cases.push_back(fp16_case(graph_case("upsample_x2_after_conv", OpKind::kUpsample, 2, [](SmallGraph& g) {
    g.output(g.node(OpKind::kUpsample, {g.conv(g.input("x", {8, 5, 6}), 8, conv_attrs(3, 1, 1))},
                    UpsampleAttrs{2}));
  })));
  return cases;
}

}  // namespace kiln::testing
