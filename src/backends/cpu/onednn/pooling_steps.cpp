// Max and average pooling through oneDNN; global average pooling (optionally with the radix_sum before
// it) on the backend's own kernel, which reads any channel-blocked layout in one pass.
#include "backends/cpu/onednn/program_builder.h"
#include "backends/cpu/onednn/radix_kernels.h"
#include "backends/cpu/onednn/support.h"
#include "core/error.h"

namespace kiln::onednn {

void ProgramBuilder::add_pool(const Node& node) {
  const PoolAttrs& p = node.attr<PoolAttrs>();
  const ValueId x = node.inputs[0];
  const Shape& xs = shape(x);
  const Shape& ys = shape(node.output);
  // ceil_mode becomes extra end padding: oneDNN sizes its output with floor division.
  const std::int64_t pad_bottom =
      pooling_end_padding(xs[2], p.kernel[0], p.stride[0], p.padding[0], p.padding[2], ys[2]);
  const std::int64_t pad_right =
      pooling_end_padding(xs[3], p.kernel[1], p.stride[1], p.padding[1], p.padding[3], ys[3]);
  dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
  if (node.op == OpKind::kAvgPool2d) {
    algorithm = p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                    : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  // A bf16 value is pooled in bf16 (f32 arithmetic inside, one rounding of the result).
  const dnnl::memory src = stored_input(x);
  const Desc dst_desc(to_dims(ys), src.get_desc().data_type(), dnnl::memory::format_tag::any);
  dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, src.get_desc(), dst_desc,
                                   {p.stride[0], p.stride[1]}, {p.kernel[0], p.kernel[1]},
                                   {p.padding[0], p.padding[1]}, {pad_bottom, pad_right});
  dnnl::pooling_forward::primitive_desc pd(desc, attributes(), engine_);
  note(cat("pool ", layout_name(pd.src_desc()), " ", pd.impl_info_str()));
  Args args{{DNNL_ARG_SRC, src}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::pooling_forward(pd), std::move(args)));
}

void ProgramBuilder::add_global_pool(const Node& node, const Node* radix_sum) {
  const ValueId x = radix_sum != nullptr ? radix_sum->inputs[0] : node.inputs[0];
  const std::int64_t radix = radix_sum != nullptr ? radix_sum->attr<RadixAttrs>().radix : 1;
  ChannelLayout layout;
  const dnnl::memory src = radix_input(x, radix, layout);
  note(cat(radix_sum != nullptr ? "radix_sum+mean " : "mean ", layout_name(src.get_desc())));
  const Shape& ys = shape(node.output);
  // [N, C, 1, 1] in NCHW: the same bytes as NHWC and as any blocked layout without padding; bf16 where
  // only bf16 layers read it (the split-attention gate's first convolution).
  const dnnl::memory dst = output(node.output, stored_desc(node, plain_desc(ys)));
  const std::int64_t y_stride = ys[1];
  call([src, dst, layout, radix, y_stride](const dnnl::stream&) {
    radix_sum_mean(radix_in(src), layout, radix, radix_out(dst), y_stride);
  });
}

}  // namespace kiln::onednn
