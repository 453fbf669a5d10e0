// Linear layers through oneDNN's inner product (weights packed once, bias fused).
#include "backends/cpu/onednn/program_builder.h"
#include "backends/cpu/onednn/precision.h"
#include "core/error.h"

namespace kiln::onednn {

void ProgramBuilder::add_linear(const Node& node) {
  const ValueId x = node.inputs[0];
  const Value& weight = graph_.value(node.inputs[1]);
  const bool has_bias = node.inputs.size() > 2;
  const Shape& ys = shape(node.output);
  const Desc bias_desc = has_bias ? plain_desc({weight.shape[0]}) : Desc();
  // bf16: bf16 input and weights, f32 accumulation and output (rounded to bf16 by the step, precision.h).
  const dnnl::memory::data_type type = kernel_type(node.precision);
  const auto any = [type](const Shape& s) { return Desc(to_dims(s), type, dnnl::memory::format_tag::any); };
  dnnl::inner_product_forward::desc desc(dnnl::prop_kind::forward_inference, any(shape(x)), any(weight.shape),
                                         bias_desc, plain_desc(ys));
  dnnl::inner_product_forward::primitive_desc pd(desc, attributes(), engine_);

  const Tensor w = prepare_constant(weight.constant, node.precision);
  Args args{{DNNL_ARG_WEIGHTS, pack_constant(w, plain_desc(weight.shape), pd.weights_desc())},
            {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  if (has_bias) {
    const Tensor b = prepare_constant(graph_.value(node.inputs[2]).constant, node.precision);
    args[DNNL_ARG_BIAS] = pack_constant(b, bias_desc, pd.bias_desc());
  }
  note(cat("inner_product ", pd.impl_info_str()));
  args[DNNL_ARG_SRC] = input_as(x, pd.src_desc());
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::inner_product_forward(pd), std::move(args)));
}

}  // namespace kiln::onednn
