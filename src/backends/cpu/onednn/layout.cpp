#include "backends/cpu/onednn/layout.h"

#include "core/error.h"

namespace kiln::onednn {
namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

Tag plain_tag(std::size_t rank) {
  switch (rank) {
    case 1:
      return Tag::a;
    case 2:
      return Tag::ab;
    case 3:
      return Tag::abc;
    case 4:
      return Tag::abcd;
    case 5:
      return Tag::abcde;
    default:
      fail("onednn backend: tensors of rank ", rank, " are not supported");
  }
}

Tag blocked_tag(std::int64_t block) {
  switch (block) {
    case 1:
      return Tag::nchw;
    case 8:
      return Tag::nChw8c;
    case 16:
      return Tag::nChw16c;
    default:
      fail("onednn backend: no layout with channel blocks of ", block);
  }
}

}  // namespace

dnnl::memory::dims to_dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

Desc plain_desc(const Shape& shape) { return Desc(to_dims(shape), DataType::f32, plain_tag(shape.size())); }

Desc any_desc(const Shape& shape) { return Desc(to_dims(shape), DataType::f32, Tag::any); }

Desc with_type(const Desc& desc, dnnl::memory::data_type type) {
  // The same dims and strides (counted in elements), so the same layout of narrower or wider elements.
  dnnl_memory_desc_t data = desc.data;
  data.data_type = static_cast<dnnl_data_type_t>(type);
  return Desc(data);
}

namespace {

const char* type_name(DataType type) {
  switch (type) {
    case DataType::bf16:
      return "bf16";
    case DataType::f16:
      return "f16";
    case DataType::s8:
      return "s8";
    case DataType::u8:
      return "u8";
    case DataType::s32:
      return "s32";
    default:
      return "(other type)";
  }
}

}  // namespace

std::string layout_name(const Desc& desc) {
  if (desc.data_type() != DataType::f32) {
    return layout_name(with_type(desc, DataType::f32)) + " " + type_name(desc.data_type());
  }
  const dnnl::memory::dims dims = desc.dims();
  const std::pair<Tag, const char*> known[] = {{Tag::nchw, "nchw"},
                                               {Tag::nhwc, "nhwc"},
                                               {Tag::nChw8c, "nChw8c"},
                                               {Tag::nChw16c, "nChw16c"},
                                               {Tag::nc, "nc"}};
  for (const auto& [tag, name] : known) {
    if (dims.size() == (tag == Tag::nc ? 2u : 4u) && desc == Desc(dims, DataType::f32, tag)) return name;
  }
  return "blocked";
}

Desc channel_layout_desc(const Shape& shape, ChannelLayout::Kind kind, std::int64_t block) {
  switch (kind) {
    case ChannelLayout::Kind::kBlocked:
      return Desc(to_dims(shape), DataType::f32, blocked_tag(block));
    case ChannelLayout::Kind::kChannelsLast:
      return Desc(to_dims(shape), DataType::f32, Tag::nhwc);
    case ChannelLayout::Kind::kNone:
      break;
  }
  fail("onednn backend: no channel layout of kind none");
}

ChannelLayout channel_layout(const Desc& desc, const Shape& shape) {
  ChannelLayout layout;
  if (shape.size() != 4) return layout;
  layout.batch = shape[0];
  layout.channels = shape[1];
  layout.height = shape[2];
  layout.width = shape[3];
  const std::int64_t pixels = layout.pixels();
  if (desc == channel_layout_desc(shape, ChannelLayout::Kind::kChannelsLast, 0)) {
    layout.kind = ChannelLayout::Kind::kChannelsLast;
    layout.block = layout.channels;
    layout.pixel_stride = layout.channels;
    layout.block_stride = layout.channels * pixels;
    layout.image_stride = layout.channels * pixels;
    return layout;
  }
  for (const std::int64_t block : {1, 16, 8}) {
    if (desc != channel_layout_desc(shape, ChannelLayout::Kind::kBlocked, block)) continue;
    const std::int64_t blocks = (layout.channels + block - 1) / block;
    layout.kind = ChannelLayout::Kind::kBlocked;
    layout.block = block;
    layout.pixel_stride = block;
    layout.block_stride = pixels * block;
    layout.image_stride = blocks * pixels * block;
    return layout;
  }
  return layout;
}

}  // namespace kiln::onednn
