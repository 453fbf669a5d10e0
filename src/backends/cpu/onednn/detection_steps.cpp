// Detection operators through oneDNN: concatenation (any layouts in, oneDNN's choice out), nearest
// upsampling (resampling) and a contiguous channel range (a sub-memory view reordered out). Cases oneDNN
// refuses, such as a channel range inside a padded channel block, fall back to the reference kernels.
#include "backends/cpu/onednn/program_builder.h"
#include "core/error.h"

namespace kiln::onednn {

void ProgramBuilder::add_concat(const Node& node) {
  const int axis = static_cast<int>(node.attr<ConcatAttrs>().axis);
  std::vector<dnnl::memory> sources;
  std::vector<Desc> descs;
  for (const ValueId input_value : node.inputs) {
    sources.push_back(input(input_value));
    descs.push_back(read_desc(input_value));
  }
  dnnl::concat::primitive_desc pd(axis, descs, engine_, attributes());
  note(cat("concat ", pd.impl_info_str()));
  Args args{{DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  for (std::size_t i = 0; i < sources.size(); ++i)
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = sources[i];
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::concat(pd), std::move(args)));
}

void ProgramBuilder::add_upsample(const Node& node) {
  const ValueId x = node.inputs[0];
  const dnnl::memory src = input(x);
  dnnl::resampling_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::resampling_nearest,
                                      read_desc(x), any_desc(shape(node.output)));
  dnnl::resampling_forward::primitive_desc pd(desc, attributes(), engine_);
  note(cat("resampling ", pd.impl_info_str()));
  Args args{{DNNL_ARG_SRC, src}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::resampling_forward(pd), std::move(args)));
}

void ProgramBuilder::add_channel_slice(const Node& node) {
  const SliceAttrs& a = node.attr<SliceAttrs>();
  if (a.groups != 1) throw NotNative{};
  const ValueId x = node.inputs[0];
  // As stored: a bf16 value's view is reordered straight into f32.
  const dnnl::memory src = stored_input(x);
  const Shape& ys = shape(node.output);
  dnnl::memory::dims dims(ys.begin(), ys.end());
  dnnl::memory::dims offsets(ys.size(), 0);
  offsets[1] = a.begin;
  // A view into the value's own buffer; an fp16 node reads a rounded copy, which this does not handle.
  if (src != slot(x).memory) throw NotNative{};
  const Desc part = slot(x).desc.submemory_desc(dims, offsets);  // throws where blocks would be split
  note(cat("channel range ", layout_name(part)));
  reorder(view(x, part), output(node.output, preferred_desc(ys)));
}

}  // namespace kiln::onednn
