// Convolutions: one oneDNN primitive each, with the bias, the fused activation and, when the graph's
// residual add was folded in (fusion.h), the add and its activation as post-ops.
#include <algorithm>

#include "backends/cpu/onednn/activation.h"
#include "backends/cpu/onednn/plan_builder.h"
#include "backends/cpu/onednn/precision.h"
#include "core/error.h"

namespace kiln::onednn {

void PlanBuilder::add_conv(const Node& conv, const Node* fused_add) {
  const ConvAttrs& a = conv.attr<ConvAttrs>();
  const ValueId x = conv.inputs[0];
  const Value& weight = graph_.value(conv.inputs[1]);
  const bool has_bias = conv.inputs.size() > 2;
  const ValueId y = fused_add != nullptr ? fused_add->output : conv.output;
  const Shape& xs = shape(x);
  const Shape& ws = weight.shape;
  const Shape& ys = shape(y);

  using dnnl::memory;
  const memory::dim groups = a.groups;
  // oneDNN wants grouped weights as [G, O/G, I/G, kh, kw]: the same bytes as the graph's [O, I/G, kh, kw].
  const Shape w_dims = groups == 1 ? ws : Shape{groups, ws[0] / groups, ws[1], ws[2], ws[3]};
  const Desc bias_desc = has_bias ? plain_desc({ws[0]}) : Desc();

  dnnl::post_ops ops;
  append_activation(ops, a.activation);
  if (fused_add != nullptr) {
    ops.append_sum(1.0f);
    append_activation(ops, fused_add->attr<AddAttrs>().activation);
  }
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any_desc(xs), any_desc(w_dims),
      bias_desc, any_desc(ys), {a.stride[0], a.stride[1]}, {a.dilation[0] - 1, a.dilation[1] - 1},
      {a.padding[0], a.padding[1]}, {a.padding[2], a.padding[3]});
  dnnl::convolution_forward::primitive_desc pd(desc, attributes(ops), engine_);

  const Tensor w = prepare_constant(weight.constant, conv.precision);
  Args args{{DNNL_ARG_WEIGHTS, pack_constant(w, plain_desc(w_dims), pd.weights_desc())},
            {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  if (has_bias) {
    const Tensor b = prepare_constant(graph_.value(conv.inputs[2]).constant, conv.precision);
    args[DNNL_ARG_BIAS] = pack_constant(b, bias_desc, pd.bias_desc());
  }
  args[DNNL_ARG_SRC] = input_as(x, pd.src_desc());

  if (fused_add == nullptr) {
    args[DNNL_ARG_DST] = output(y, pd.dst_desc());
  } else {
    const ValueId other = FusionPlan::other_operand(graph_, *fused_add, graph_.value(conv.output).producer);
    const bool read_by_conv = std::find(conv.inputs.begin(), conv.inputs.end(), other) != conv.inputs.end();
    if (!read_by_conv && last_read_here(other, graph_.value(conv.output).producer) &&
        slot(other).desc == pd.dst_desc()) {
      // Accumulate straight into the other operand's buffer: nobody reads it after this step.
      args[DNNL_ARG_DST] = output_in_place(y, other);
    } else {
      const dnnl::memory source = input(other);
      args[DNNL_ARG_DST] = output(y, pd.dst_desc());
      reorder(source, args[DNNL_ARG_DST]);
    }
  }
  call(primitive_call(dnnl::convolution_forward(pd), std::move(args)));
}

}  // namespace kiln::onednn
