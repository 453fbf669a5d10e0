// How activations are laid out in memory. oneDNN picks the layouts of its convolutions (on AVX-512
// machines NHWC for its brgemm kernels, or nChw16c: channels in blocks of 16, each block stored pixel by
// pixel); values keep the layout their producer wrote and are reordered only where a consumer needs
// something else.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "core/tensor.h"

namespace kiln::onednn {

using Desc = dnnl::memory::desc;

dnnl::memory::dims to_dims(const Shape& shape);
// The row-major (NCHW for rank 4) layout of `shape`.
Desc plain_desc(const Shape& shape);
// Lets a primitive choose the layout.
Desc any_desc(const Shape& shape);
// `desc`'s layout with elements of `type` (activations only: no weight compensation carried over).
Desc with_type(const Desc& desc, dnnl::memory::data_type type);
// A short name for step listings (describe()): "nchw", "nhwc", "nChw16c", ... or "blocked", followed by
// the element type where it is not f32 (" bf16", " s8", ...).
std::string layout_name(const Desc& desc);

// A rank-4 layout that stores `block` consecutive channels of one pixel together:
//   offset(n, c, p) = n * image_stride + (c / block) * block_stride + p * pixel_stride + c % block
// NCHW is block 1, nChw8c / nChw16c are blocks 8 / 16 (channels padded to a multiple of the block), NHWC
// is one block of all channels.
struct ChannelLayout {
  enum class Kind : std::uint8_t { kNone, kBlocked, kChannelsLast };
  Kind kind = Kind::kNone;
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t block = 0, image_stride = 0, block_stride = 0, pixel_stride = 0;
  std::int64_t pixels() const { return height * width; }
};

// `desc` as a ChannelLayout (kind kNone when it is not NCHW, NHWC, nChw8c or nChw16c).
ChannelLayout channel_layout(const Desc& desc, const Shape& shape);
// The layout of `kind` and `block` (ignored for channels-last) for `shape`.
Desc channel_layout_desc(const Shape& shape, ChannelLayout::Kind kind, std::int64_t block);

}  // namespace kiln::onednn
