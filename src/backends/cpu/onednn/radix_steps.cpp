// Split attention steps on the backend's own kernels (radix_kernels.h), in the layout the producer chose
// when the radix splits are whole channel blocks, else in NCHW. A channel scale (squeeze-excite's gate)
// is the weighted sum over a single split. A feature map stored in bf16 is read as it is, and a result
// that only bf16 layers read is written in bf16 (precision.h).
#include "backends/cpu/onednn/program_builder.h"
#include "backends/cpu/onednn/radix_kernels.h"
#include "core/error.h"

namespace kiln::onednn {
namespace {

const float* data(const dnnl::memory& memory) { return static_cast<const float*>(memory.get_data_handle()); }
float* mutable_data(const dnnl::memory& memory) { return static_cast<float*>(memory.get_data_handle()); }

}  // namespace

dnnl::memory ProgramBuilder::radix_input(ValueId value, std::int64_t radix, ChannelLayout& layout) {
  const Shape& s = shape(value);
  if (s.size() != 4) throw NotNative{};
  layout = channel_layout(read_desc(value), s);
  if (radix_layout_supported(layout, radix)) return stored_input(value);
  layout = channel_layout(plain_desc(s), s);
  if (!radix_layout_supported(layout, radix)) throw NotNative{};
  return input_as(value, plain_desc(s));
}

dnnl::memory ProgramBuilder::channel_vector(ValueId value, std::int64_t& stride) {
  const Shape& s = shape(value);
  if (s.size() == 4 && s[2] == 1 && s[3] == 1) {
    // Channel k of image n sits at n * image_stride + k in every channel layout of 1x1 images.
    const ChannelLayout layout = channel_layout(read_desc(value), s);
    if (layout.kind != ChannelLayout::Kind::kNone) {
      stride = layout.image_stride;
      return input(value);
    }
  } else if (s.size() != 2) {
    throw NotNative{};
  }
  stride = s[1];
  return input_as(value, plain_desc(s));
}

void ProgramBuilder::add_radix_sum(const Node& node) {
  const std::int64_t radix = node.attr<RadixAttrs>().radix;
  ChannelLayout layout;
  const dnnl::memory src = radix_input(node.inputs[0], radix, layout);
  const ChannelLayout out = radix_output_layout(layout, shape(node.output));
  const dnnl::memory dst = output(node.output, stored_desc(node, channel_layout_desc(shape(node.output), out.kind, out.block)));
  note(cat("radix_sum ", layout_name(src.get_desc()), "->", layout_name(dst.get_desc())));
  call([src, dst, layout, radix, out](const dnnl::stream&) {
    radix_sum(radix_in(src), layout, radix, radix_out(dst), out);
  });
}

void ProgramBuilder::add_radix_softmax(const Node& node) {
  const RadixAttrs& a = node.attr<RadixAttrs>();
  const Shape& s = shape(node.inputs[0]);
  const std::int64_t batch = s[0], total = s[1];
  if (a.radix > 1 && total % (a.radix * a.cardinality) != 0) throw NotNative{};  // the fallback reports it
  std::int64_t stride = 0;
  const dnnl::memory src = channel_vector(node.inputs[0], stride);
  note("radix_softmax");
  const dnnl::memory dst = output(node.output, src.get_desc());
  call([src, dst, stride, batch, total, a](const dnnl::stream&) {
    radix_softmax(data(src), stride, batch, total, a.radix, a.cardinality, mutable_data(dst), stride);
  });
}

void ProgramBuilder::add_radix_weighted_sum(const Node& node) {
  const std::int64_t radix = node.attr<RadixAttrs>().radix;
  ChannelLayout layout;
  const dnnl::memory src = radix_input(node.inputs[0], radix, layout);
  const Shape& ws = shape(node.inputs[1]);
  if (ws[0] != layout.batch || ws[1] != layout.channels) throw NotNative{};
  std::int64_t w_stride = 0;
  const dnnl::memory weights = channel_vector(node.inputs[1], w_stride);
  const ChannelLayout out = radix_output_layout(layout, shape(node.output));
  const dnnl::memory dst = output(node.output, stored_desc(node, channel_layout_desc(shape(node.output), out.kind, out.block)));
  note(cat("radix_weighted_sum ", layout_name(src.get_desc()), "->", layout_name(dst.get_desc())));
  call([src, weights, dst, layout, radix, w_stride, out](const dnnl::stream&) {
    radix_weighted_sum(radix_in(src), layout, radix, data(weights), w_stride, radix_out(dst), out);
  });
}

void ProgramBuilder::add_channel_scale(const Node& node) {
  ChannelLayout layout;
  const dnnl::memory src = radix_input(node.inputs[0], 1, layout);
  std::int64_t g_stride = 0;
  const dnnl::memory gate = channel_vector(node.inputs[1], g_stride);
  const ChannelLayout out = radix_output_layout(layout, shape(node.output));
  const dnnl::memory dst = output(node.output, stored_desc(node, channel_layout_desc(shape(node.output), out.kind, out.block)));
  note(cat("channel_scale ", layout_name(src.get_desc()), "->", layout_name(dst.get_desc())));
  call([src, gate, dst, layout, g_stride, out](const dnnl::stream&) {
    radix_weighted_sum(radix_in(src), layout, 1, data(gate), g_stride, radix_out(dst), out);
  });
}

}  // namespace kiln::onednn
