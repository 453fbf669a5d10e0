// Convolutions: one oneDNN primitive each, with the bias, the fused activation and, when the graph's
// residual add was folded in (fusion.h), the add and its activation as post-ops; bf16 convolutions on
// oneDNN's bf16 kernels (precision.h).
#include <algorithm>
#include <array>
#include <string>

#include "backends/cpu/onednn/activation.h"
#include "backends/cpu/onednn/precision.h"
#include "backends/cpu/onednn/program_builder.h"
#include "core/error.h"

namespace kiln::onednn {
namespace {

using Tag = dnnl::memory::format_tag;
using DataType = dnnl::memory::data_type;

// Rows [first, first + count) of a row-major tensor, as a view.
Tensor rows(const Tensor& t, std::int64_t first, std::int64_t count) {
  Shape s = t.shape();
  const std::int64_t row = t.numel() / s[0];
  s[0] = count;
  return Tensor::view(DType::kF32, s, t.data<float>() + first * row, nullptr);
}

// Grouped 3x3 convolutions (ResNeSt's split attention) run faster as one Winograd convolution per group
// than as one direct grouped convolution: measured on an AVX-512 CPU, most on the 28x28 and 56x56 images
// of the first stages, less at 14x14, nothing at 7x7. oneDNN's Winograd kernels
// take no groups and want nChw16c, where with batch 1 a group's channels are one contiguous run of
// blocks. Its transforms add rounding of a few 1e-7 relative to the output (F(2x2, 3x3) and F(4x4, 3x3),
// measured against double accumulation), well inside what the tests allow.
bool winograd_candidate(const ConvAttrs& a, const Shape& x, const Shape& y) {
  constexpr std::int64_t kBlock = 16;
  constexpr std::int64_t kMinPixels = 14 * 14;
  return a.groups > 1 && a.kernel == std::array<std::int64_t, 2>{3, 3} &&
         a.stride == std::array<std::int64_t, 2>{1, 1} && a.dilation == std::array<std::int64_t, 2>{1, 1} &&
         x[0] == 1 && x[1] / a.groups % kBlock == 0 && y[1] / a.groups % kBlock == 0 &&
         y[2] * y[3] >= kMinPixels;
}

}  // namespace

void ProgramBuilder::add_grouped_winograd(const Node& conv, const Tensor& w, const Tensor* b) {
  const ConvAttrs& a = conv.attr<ConvAttrs>();
  const ValueId x = conv.inputs[0];
  const Shape& xs = shape(x);
  const Shape& ys = shape(conv.output);
  const std::int64_t groups = a.groups, in = xs[1] / groups, out = ys[1] / groups;
  const Desc src_group(to_dims({1, in, xs[2], xs[3]}), DataType::f32, Tag::nChw16c);
  const Desc dst_group(to_dims({1, out, ys[2], ys[3]}), DataType::f32, Tag::nChw16c);
  const Desc bias_desc = b != nullptr ? plain_desc({out}) : Desc();
  dnnl::post_ops ops;
  append_activation(ops, a.activation);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_winograd, src_group,
                                       any_desc({out, in, 3, 3}), bias_desc, dst_group, {1, 1}, {0, 0},
                                       {a.padding[0], a.padding[1]}, {a.padding[2], a.padding[3]});
  const dnnl::convolution_forward::primitive_desc pd(desc, attributes(ops), engine_);
  const dnnl::convolution_forward primitive(pd);

  note(cat("conv ", groups, " groups as Winograd convolutions nChw16c ", pd.impl_info_str()));
  const dnnl::memory src = input_as(x, channel_layout_desc(xs, ChannelLayout::Kind::kBlocked, 16));
  const dnnl::memory dst = output(conv.output, channel_layout_desc(ys, ChannelLayout::Kind::kBlocked, 16));
  const int src_buffer = program_.workspace->buffer_of(src);
  const int dst_buffer = program_.workspace->buffer_of(dst);
  const dnnl::memory scratch = scratchpad(pd);
  for (std::int64_t g = 0; g < groups; ++g) {
    Args args{{DNNL_ARG_SCRATCHPAD, scratch}};
    args[DNNL_ARG_WEIGHTS] =
        pack_constant(rows(w, g * out, out), plain_desc({out, in, 3, 3}), pd.weights_desc());
    if (b != nullptr) args[DNNL_ARG_BIAS] = pack_constant(rows(*b, g * out, out), bias_desc, pd.bias_desc());
    const auto offset = [&](const Shape& s, std::int64_t channels) {
      return static_cast<std::size_t>(g * channels * s[2] * s[3]) * sizeof(float);
    };
    args[DNNL_ARG_SRC] = program_.workspace->memory(src_buffer, src_group, offset(xs, in));
    args[DNNL_ARG_DST] = program_.workspace->memory(dst_buffer, dst_group, offset(ys, out));
    call(primitive_call(primitive, std::move(args)));
  }
}

void ProgramBuilder::add_conv(const Node& conv, const Node* fused_add) {
  if (conv.precision == Precision::kI8) return add_int8_conv(conv, fused_add);
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

  const Tensor w = prepare_constant(weight.constant, conv.precision);
  Tensor b;
  if (has_bias) b = prepare_constant(graph_.value(conv.inputs[2]).constant, conv.precision);
  // oneDNN's Winograd kernels are f32 only.
  if (fused_add == nullptr && conv.precision != Precision::kBf16 && winograd_candidate(a, xs, ys)) {
    const std::size_t calls = current_.calls.size();
    const std::string label = current_.label;
    try {
      return add_grouped_winograd(conv, w, has_bias ? &b : nullptr);
    } catch (const dnnl::error&) {
      // No Winograd kernel for this case here: the direct convolution below.
      current_.calls.resize(calls);
      current_.label = label;
    }
  }

  const dnnl::post_ops ops = conv_post_ops(conv, fused_add);
  // bf16: bf16 activations and weights, f32 bias; the output in bf16 where every reader takes it so,
  // else in f32 (rounded to bf16 by the step).
  const DataType type = kernel_type(conv.precision);
  const DataType out_type = type == DataType::bf16 && !all_readers_take_bf16(y) ? DataType::f32 : type;
  const auto any = [](const Shape& s, DataType t) { return Desc(to_dims(s), t, Tag::any); };
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(xs, type),
      any(w_dims, type), bias_desc, any(ys, out_type), {a.stride[0], a.stride[1]},
      {a.dilation[0] - 1, a.dilation[1] - 1}, {a.padding[0], a.padding[1]}, {a.padding[2], a.padding[3]});
  dnnl::convolution_forward::primitive_desc pd(desc, attributes(ops), engine_);

  Args args{{DNNL_ARG_WEIGHTS, pack_constant(w, plain_desc(w_dims), pd.weights_desc())},
            {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  if (has_bias) args[DNNL_ARG_BIAS] = pack_constant(b, bias_desc, pd.bias_desc());
  note(cat("conv ", layout_name(pd.src_desc()), "->", layout_name(pd.dst_desc()), " ", pd.impl_info_str()));
  args[DNNL_ARG_SRC] = input_as(x, pd.src_desc());
  bind_conv_output(conv, fused_add, pd.dst_desc(), args);
  call(primitive_call(dnnl::convolution_forward(pd), std::move(args)));
}

dnnl::post_ops ProgramBuilder::conv_post_ops(const Node& conv, const Node* fused_add, float sum_scale) const {
  dnnl::post_ops ops;
  append_activation(ops, conv.attr<ConvAttrs>().activation);
  if (fused_add != nullptr) {
    ops.append_sum(sum_scale);
    append_activation(ops, fused_add->attr<AddAttrs>().activation);
  }
  return ops;
}

ValueId ProgramBuilder::fused_residual(const Node& conv, const Node& add) const {
  return Fusions::other_operand(graph_, add, graph_.value(conv.output).producer);
}

void ProgramBuilder::bind_conv_output(const Node& conv, const Node* fused_add, const Desc& dst, Args& args) {
  if (fused_add == nullptr) {
    args[DNNL_ARG_DST] = output(conv.output, dst);
    return;
  }
  const ValueId y = fused_add->output;
  const ValueId other = fused_residual(conv, *fused_add);
  const bool read_by_conv = std::find(conv.inputs.begin(), conv.inputs.end(), other) != conv.inputs.end();
  if (!read_by_conv && last_read_here(other, graph_.value(conv.output).producer) && slot(other).desc == dst) {
    // Accumulate straight into the other operand's buffer: nobody reads it after this step.
    note("+ sum in place");
    args[DNNL_ARG_DST] = output_in_place(y, other);
  } else {
    note("+ sum on a copy");
    const dnnl::memory source = stored_input(other);
    args[DNNL_ARG_DST] = output(y, dst);
    reorder(source, args[DNNL_ARG_DST]);
  }
}

}  // namespace kiln::onednn
