// How activations are laid out in memory. oneDNN picks blocked layouts for its convolutions (nChw16c
// on AVX-512: channels in blocks of 16, each block stored pixel by pixel); values keep the layout their
// producer wrote and are reordered only where a consumer needs something else.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/tensor.h"

namespace kiln::onednn {

using Desc = dnnl::memory::desc;

dnnl::memory::dims to_dims(const Shape& shape);
// The row-major (NCHW for rank 4) layout of `shape`.
Desc plain_desc(const Shape& shape);
// Lets a primitive choose the layout.
Desc any_desc(const Shape& shape);

// A rank-4 layout whose channels come in blocks of `block` (1: NCHW), each block stored pixel by pixel,
// with the channel count padded up to a multiple of the block:
//   offset(n, c, p) = ((n * blocks + c / block) * pixels + p) * block + c % block.
struct ChannelBlocked {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0, block = 1;
  std::int64_t blocks() const { return (channels + block - 1) / block; }
  std::int64_t pixels() const { return height * width; }
  std::int64_t image_stride() const { return blocks() * pixels() * block; }
  std::int64_t padded_channels() const { return blocks() * block; }
};

// `desc` as a channel-blocked layout (NCHW, nChw8c or nChw16c), or block 0 when it is none of those.
ChannelBlocked channel_blocked(const Desc& desc, const Shape& shape);
// The channel-blocked layout with `block` for `shape`.
Desc channel_blocked_desc(const Shape& shape, std::int64_t block);

}  // namespace kiln::onednn
