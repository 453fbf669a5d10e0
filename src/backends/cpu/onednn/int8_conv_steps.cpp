// int8 convolutions on oneDNN's int8 kernels: the input's codes made by a scaled reorder (x * (1 / scale),
// rounded to nearest even and saturated, as core/dtype.h's quantize_to_int8 does; per channel for the
// inputs of depthwise convolutions that have channel scales), s8 weight codes, s32 accumulation, and the
// dequantization (input scale x weight scale per output channel, the input channel's scale for a
// depthwise convolution) as the primitive's output scales, then the activation and fused residual add as
// for f32 (conv_steps.cpp).
//
// oneDNN 2.x adds the bias to the s32 accumulator before the output scale, so the bias goes in divided
// by each channel's scale; the result differs from cpu-reference's (accumulator x scale) + bias only in
// f32 rounding.
#include "backends/cpu/onednn/activation.h"
#include "backends/cpu/onednn/program_builder.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln::onednn {
namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

}  // namespace

float ProgramBuilder::residual_codes_scale(const Node& conv, const Node& add) const {
  return int8_quantize_producing(graph_, fused_residual(conv, add))->attr<QuantizeAttrs>().scale;
}

// conv_post_ops(), and for codes a clip to the int8 grid: oneDNN saturates s8 at -128, kiln at -127.
dnnl::post_ops ProgramBuilder::int8_post_ops(const Node& conv, const Node* fused_add, float sum_scale,
                                             bool codes) const {
  dnnl::post_ops ops = conv_post_ops(conv, fused_add, sum_scale);
  if (codes) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, -kInt8Max, kInt8Max);
  return ops;
}

const QuantizeAttrs& ProgramBuilder::int8_input_quantization(const Node& conv) const {
  const NodeId producer = graph_.value(conv.inputs[0]).producer;
  require(producer != kNoNode && graph_.node(producer).op == OpKind::kQuantize &&
              graph_.node(producer).attr<QuantizeAttrs>().int8,
          "int8 layer '", conv.name, "': expected its input from an int8 quantize point");
  const QuantizeAttrs& quantize = graph_.node(producer).attr<QuantizeAttrs>();
  // Per-channel input scales factor out of an output channel's sum only where that channel reads one
  // input channel, its own.
  const ConvAttrs& a = conv.attr<ConvAttrs>();
  require(
      !quantize.per_channel() || (a.groups == shape(conv.inputs[0])[1] && a.groups == shape(conv.output)[1]),
      "int8 layer '", conv.name, "': per-channel input scales need a depthwise convolution, got groups ",
      a.groups, " over ", shape(conv.inputs[0])[1], " channels");
  return quantize;
}

bool ProgramBuilder::all_readers_take_int8_codes(ValueId value) const {
  return only_read_by(value, [&](NodeId id) { return takes_int8_codes(graph_, fusions_, id, value); });
}

bool ProgramBuilder::residual_stored_as_codes(const Node& conv, const Node& add) const {
  if (!fusions_.codes_sum[static_cast<std::size_t>(graph_.value(add.output).producer)]) return false;
  return slot(fused_residual(conv, add)).desc.data_type() == DataType::s8;
}

const Node* ProgramBuilder::int8_chain_quantize(const Node& conv, const Node* fused_add) const {
  // A fused add writes codes only from a residual of codes: oneDNN sums into dst's own type.
  if (fused_add != nullptr && !residual_stored_as_codes(conv, *fused_add)) return nullptr;
  // Only activations that commute with a positive scale may follow the rescaled accumulator.
  for (const Activation activation :
       {conv.attr<ConvAttrs>().activation,
        fused_add != nullptr ? fused_add->attr<AddAttrs>().activation : Activation::kNone}) {
    if (activation != Activation::kNone && activation != Activation::kRelu) return nullptr;
  }
  const ValueId y = fused_add != nullptr ? fused_add->output : conv.output;
  const auto& readers = consumers_[static_cast<std::size_t>(y)];
  if (readers.size() != 1) return nullptr;
  const Node& reader = graph_.node(readers.front());
  // The residual's codes are scaled to the next point's grid by one factor: per tensor.
  const bool chained = reader.op == OpKind::kQuantize && reader.attr<QuantizeAttrs>().int8 &&
                       (fused_add == nullptr || !reader.attr<QuantizeAttrs>().per_channel()) &&
                       shape(reader.output).size() == 4 && all_readers_take_int8_codes(reader.output);
  const auto& outputs = graph_.outputs();
  return chained && std::find(outputs.begin(), outputs.end(), y) == outputs.end() ? &reader : nullptr;
}

void ProgramBuilder::bind_dequantized_residual(const Node& conv, const Node& add, const Desc& dst,
                                               Args& args) {
  const ValueId residual = fused_residual(conv, add);
  note("+ sum on a dequantized copy");
  args[DNNL_ARG_DST] = output(add.output, dst);
  scaled_reorder(stored_input(residual), args[DNNL_ARG_DST], {residual_codes_scale(conv, add)});
}

std::vector<float> ProgramBuilder::inverse_scales(const QuantizeAttrs& quantize) {
  std::vector<float> inverses;
  if (!quantize.per_channel()) return {1.0f / quantize.scale};
  for (const float scale : quantize.channel_scales) inverses.push_back(1.0f / scale);
  return inverses;
}

void ProgramBuilder::scaled_reorder(const dnnl::memory& src, const dnnl::memory& dst,
                                    const std::vector<float>& scales) {
  dnnl::primitive_attr attr = attributes();
  attr.set_output_scales(scales.size() == 1 ? 0 : 1 << 1, scales);  // one, or per channel of [N, C, H, W]
  dnnl::reorder::primitive_desc pd(engine_, src.get_desc(), engine_, dst.get_desc(), attr);
  call(primitive_call(dnnl::reorder(pd),
                      {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}}));
}

dnnl::memory ProgramBuilder::int8_codes(ValueId x, const QuantizeAttrs& quantize, const Desc& desc) {
  // Codes the quantize step wrote (s8) need at most a change of layout.
  if (slot(x).desc.data_type() == DataType::s8) return input_as(x, desc);
  const dnnl::memory source = input(x);
  const dnnl::memory codes = temporary(desc);
  note(cat("(quantize ", layout_name(source.get_desc()), "->", layout_name(desc),
           quantize.per_channel() ? " per channel)" : ")"));
  scaled_reorder(source, codes, inverse_scales(quantize));
  return codes;
}

void ProgramBuilder::add_int8_conv(const Node& conv, const Node* fused_add) {
  const auto weights = int8_weights_.find(conv.name);
  require(weights != int8_weights_.end(), "int8 layer '", conv.name, "': no int8 weight codes");
  const ConvAttrs& a = conv.attr<ConvAttrs>();
  const ValueId x = conv.inputs[0];
  const ValueId y = fused_add != nullptr ? fused_add->output : conv.output;
  const Shape& xs = shape(x);
  const Shape& ws = weights->second.codes.shape();
  const Shape& ys = shape(y);
  const std::int64_t groups = a.groups;
  const Shape w_dims = groups == 1 ? ws : Shape{groups, ws[0] / groups, ws[1], ws[2], ws[3]};

  // Output channel o of a depthwise convolution reads input channel o: its input scale is that channel's.
  const QuantizeAttrs& x_quantize = int8_input_quantization(conv);
  std::vector<float> scales;
  for (std::size_t o = 0; o < weights->second.scales.size(); ++o)
    scales.push_back(x_quantize.scale_of(o) * weights->second.scales[o]);
  // Writing the next quantize point's codes: the output scale also divides by that point's scale (output
  // channel o's, where it has one per channel), and the activation (ReLU commutes with a positive scale)
  // and oneDNN's rounding to s8 follow as for f32. A codes sum (fusion.h) scales the accumulator to the
  // next point's grid and adds the residual's codes times their scale over the next point's; its
  // activation comes after the sum, as in the reference.
  const Node* requantize = int8_chain_quantize(conv, fused_add);
  std::vector<float> output_scales = scales;
  float sum_scale = 1.0f;
  if (requantize != nullptr) {
    const QuantizeAttrs& next = requantize->attr<QuantizeAttrs>();
    for (std::size_t o = 0; o < output_scales.size(); ++o) output_scales[o] /= next.scale_of(o);
    if (fused_add != nullptr) sum_scale = residual_codes_scale(conv, *fused_add) / next.scale;
  }
  dnnl::primitive_attr attr = attributes(int8_post_ops(conv, fused_add, sum_scale, requantize != nullptr));
  attr.set_output_scales(1 << 1, output_scales);  // per output channel of dst [N, C, H, W]

  const bool has_bias = conv.inputs.size() > 2;
  const Desc bias_desc = has_bias ? plain_desc({ws[0]}) : Desc();
  const auto any = [](const Shape& s, DataType t) { return Desc(to_dims(s), t, Tag::any); };
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(xs, DataType::s8),
      any(w_dims, DataType::s8), bias_desc, any(ys, requantize != nullptr ? DataType::s8 : DataType::f32),
      {a.stride[0], a.stride[1]}, {a.dilation[0] - 1, a.dilation[1] - 1}, {a.padding[0], a.padding[1]},
      {a.padding[2], a.padding[3]});
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);

  Args args{{DNNL_ARG_WEIGHTS,
             pack_constant(weights->second.codes,
                           Desc(to_dims(w_dims), DataType::s8, groups == 1 ? Tag::oihw : Tag::goihw),
                           pd.weights_desc())},
            {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  if (has_bias) {
    Tensor bias = graph_.value(conv.inputs[2]).constant.clone();
    auto values = bias.mutable_f32();
    for (std::size_t o = 0; o < values.size(); ++o) values[o] /= scales[o];
    args[DNNL_ARG_BIAS] = pack_constant(bias, bias_desc, pd.bias_desc());
  }
  note(cat("int8 conv ", layout_name(pd.src_desc()), "->", layout_name(pd.dst_desc()),
           requantize != nullptr ? " (writes the next layer's codes) " : " ", pd.impl_info_str()));
  // The quantize point's values are codes x scale rounded once in f32: the reorder recovers the codes.
  args[DNNL_ARG_SRC] = int8_codes(x, x_quantize, pd.src_desc());
  if (fused_add != nullptr && requantize == nullptr && residual_stored_as_codes(conv, *fused_add)) {
    bind_dequantized_residual(conv, *fused_add, pd.dst_desc(), args);
  } else {
    bind_conv_output(conv, fused_add, pd.dst_desc(), args);
  }
  call(primitive_call(dnnl::convolution_forward(pd), std::move(args)));
}

}  // namespace kiln::onednn
