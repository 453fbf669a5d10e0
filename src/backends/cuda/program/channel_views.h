// Channel views: values an fp16 CUDA program keeps inside a wider NHWC tensor instead of a buffer of
// their own, so that concatenating and slicing along the channels copies nothing.
//  - A concat's input is written in place (its producer writes its channels of the concat's output,
//    pixels `pitch` elements apart) where that producer can write a view: a dense SiLU or sigmoid
//    convolution, whose fused epilogue runs on cuDNN's runtime-compiled engines (cudnn_graph_conv.h), a plain
//    residual add, a nearest upsample or a max pool of a cascade (fusion.h).
//  - A channel slice of one group is a view of its input.
// Either only where every other reader of the value reads views: such convolutions (as their input), plain
// adds, upsamples, cascades' max pools, concats (whose gather reads a pitched source), and slices that are
// views themselves.
// On the H200 (cuDNN 9.19) no precompiled engine took views (a convolution without activation found none);
// runtime-compiled ones do, but ran YOLOv10n's head convolutions (no activation) 2-5x slower than the
// precompiled engines on packed tensors, costing more than the concats they saved: those keep copying.
// The channel-views option (cuda_options.h) turns views off. Host code only.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/program/fusion.h"
#include "graph/graph.h"

namespace kiln::cuda {

inline constexpr ValueId kNoValue = -1;

// Where a value lives: `offset` elements into the buffer of `root` (a value with a buffer of its own),
// pixels `pitch` elements apart. root is kNoValue for a value with its own buffer.
struct ChannelView {
  ValueId root = kNoValue;
  std::int64_t offset = 0;
  std::int64_t pitch = 0;
};

struct ChannelViews {
  std::vector<ChannelView> of;  // per value
  bool is_view(ValueId v) const {
    return static_cast<std::size_t>(v) < of.size() && of[static_cast<std::size_t>(v)].root != kNoValue;
  }
  // Elements between neighbouring pixels; 0 for a packed value.
  std::int64_t pitch(ValueId v) const { return is_view(v) ? of[static_cast<std::size_t>(v)].pitch : 0; }
  std::size_t count() const;  // values that are views
};

// `runtime_fused_convs`: the program's fp16 SiLU and sigmoid convolutions are offered cuDNN's
// runtime-compiled fused engines (the only cuDNN engines found to take views; kiln's mma kernel takes them
// too) and the channel-views option is on. Nothing is a view otherwise.
ChannelViews find_channel_views(const Graph& graph, const std::vector<NodeId>& order, const Fusions& fusions,
                                const std::vector<Shape>& shapes, bool runtime_fused_convs);

// Whether a convolution may read and write views (the rule above); `runtime_fused_convs` as there.
bool conv_takes_views(const Graph& graph, const Fusions& fusions, NodeId conv, bool runtime_fused_convs);

}  // namespace kiln::cuda
