// Narrow inputs padded: an fp16 program stores a graph input of fewer than 8 channels (an RGB image) as 8
// channels, the extra ones zero, and the dense convolutions reading it get zero weights for them. cuDNN's
// fp16 tensor-core kernels want channel counts in multiples of 8; on 3 channels they fall back to
// unaligned kernels (YOLOv10n's stem at batch 32 on the H200: 151 us at 1.08 TB/s, plus a separate
// bias + SiLU kernel). The input conversion writes the padding (layout_kernels.h), so it costs one wider
// store per pixel. Off unless KILN_CUDA_PAD_INPUTS=1: kiln's stem kernel (narrow_conv_kernels.h) reads
// 3 channels as they come. Host code only.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/kernel_types.h"
#include "graph/graph.h"

namespace kiln::cuda {

// The channel count inputs are padded to.
inline constexpr std::int64_t kPaddedInputChannels = 8;

struct InputPadding {
  std::vector<std::int64_t> channels;  // per value: the channels it is stored with; 0 where not padded
  std::int64_t of(ValueId v) const {
    return static_cast<std::size_t>(v) < channels.size() ? channels[static_cast<std::size_t>(v)] : 0;
  }
};

// Whether KILN_CUDA_PAD_INPUTS asks for padding ("1" yes, unset or "0" no; anything else is an error).
bool input_padding_enabled();

// The graph inputs to pad: NCHW inputs of fewer than kPaddedInputChannels channels in an fp16 program,
// read only by dense (one-group) fp16 convolutions and not themselves graph outputs. `shapes`: per value.
InputPadding find_input_padding(const Graph& graph, const std::vector<Shape>& shapes, Elem elem);

// `shapes` with each padded value's channel count replaced by its stored one (what the arena holds).
std::vector<Shape> stored_shapes(std::vector<Shape> shapes, const InputPadding& padding);

}  // namespace kiln::cuda
