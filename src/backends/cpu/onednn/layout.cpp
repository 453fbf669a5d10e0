#include "backends/cpu/onednn/layout.h"

#include "core/error.h"

namespace kiln::onednn {
namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

Tag plain_tag(std::size_t rank) {
  switch (rank) {
    case 1: return Tag::a;
    case 2: return Tag::ab;
    case 3: return Tag::abc;
    case 4: return Tag::abcd;
    case 5: return Tag::abcde;
    default: fail("onednn backend: tensors of rank ", rank, " are not supported");
  }
}

}  // namespace

dnnl::memory::dims to_dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

Desc plain_desc(const Shape& shape) { return Desc(to_dims(shape), DataType::f32, plain_tag(shape.size())); }

Desc any_desc(const Shape& shape) { return Desc(to_dims(shape), DataType::f32, Tag::any); }

Desc channel_blocked_desc(const Shape& shape, std::int64_t block) {
  switch (block) {
    case 1: return Desc(to_dims(shape), DataType::f32, Tag::nchw);
    case 8: return Desc(to_dims(shape), DataType::f32, Tag::nChw8c);
    case 16: return Desc(to_dims(shape), DataType::f32, Tag::nChw16c);
    default: fail("onednn backend: no layout with channel blocks of ", block);
  }
}

ChannelBlocked channel_blocked(const Desc& desc, const Shape& shape) {
  ChannelBlocked layout;
  if (shape.size() != 4) return layout;
  layout = {shape[0], shape[1], shape[2], shape[3], 0};
  for (const std::int64_t block : {1, 16, 8}) {
    if (desc == channel_blocked_desc(shape, block)) {
      layout.block = block;
      return layout;
    }
  }
  layout.block = 0;
  return layout;
}

}  // namespace kiln::onednn
