// Batch norm, activations, adds, flatten and FP8 or int8 quantization: steps that keep their input's
// layout (per-channel int8 fake quantization reads and writes the plain layout).
#include "backends/cpu/onednn/activation.h"
#include "backends/cpu/onednn/parallel_for.h"
#include "backends/cpu/onednn/precision.h"
#include "backends/cpu/onednn/program_builder.h"
#include "core/error.h"

namespace kiln::onednn {

void ProgramBuilder::add_batch_norm(const Node& node) {
  const ValueId x = node.inputs[0];
  const dnnl::memory src = input(x);
  const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, read_desc(x),
                                               node.attr<BatchNormAttrs>().epsilon, flags);
  dnnl::batch_normalization_forward::primitive_desc pd(desc, attributes(), engine_);
  note(cat("batch_norm ", pd.impl_info_str()));
  const auto parameter = [&](std::size_t index) {
    const Tensor values = prepare_constant(graph_.value(node.inputs[index]).constant, node.precision);
    const Desc d = plain_desc({values.numel()});
    return pack_constant(values, d, d);
  };
  Args args{{DNNL_ARG_SRC, src},
            {DNNL_ARG_SCALE, parameter(1)},
            {DNNL_ARG_SHIFT, parameter(2)},
            {DNNL_ARG_MEAN, parameter(3)},
            {DNNL_ARG_VARIANCE, parameter(4)},
            {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::batch_normalization_forward(pd), std::move(args)));
}

void ProgramBuilder::add_activation(const Node& node) {
  const ValueId x = node.inputs[0];
  const dnnl::memory src = input(x);
  const Activation activation = node.attr<ActivationAttrs>().activation;
  if (activation == Activation::kNone) {
    note("copy");
    reorder(src, output(node.output, read_desc(x)));
    return;
  }
  const Eltwise e = eltwise_for(activation);
  dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, e.algorithm, read_desc(x), e.alpha,
                                   0.0f);
  dnnl::eltwise_forward::primitive_desc pd(desc, attributes(), engine_);
  note(cat("eltwise ", pd.impl_info_str()));
  Args args{{DNNL_ARG_SRC, src}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::eltwise_forward(pd), std::move(args)));
}

void ProgramBuilder::add_add(const Node& node) {
  const ValueId a = node.inputs[0], b = node.inputs[1];
  // Codes are read only by the int8 convolutions computing a codes sum (fusion.h), never as values here.
  for (const ValueId input : {a, b}) {
    require(slot(input).desc.data_type() != dnnl::memory::data_type::s8, "layer '", node.name,
            "': the cpu backend cannot add int8 codes outside the convolution they were stored for");
  }
  const dnnl::memory src0 = input(a);
  const Desc layout = read_desc(a);
  const dnnl::memory src1 = input_as(b, layout);
  dnnl::post_ops ops;
  append_activation(ops, node.attr<AddAttrs>().activation);
  dnnl::binary::desc desc(dnnl::algorithm::binary_add, layout, layout, layout);
  dnnl::binary::primitive_desc pd(desc, attributes(ops), engine_);
  note(cat("binary ", pd.impl_info_str()));
  Args args{{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}};
  args[DNNL_ARG_DST] = output(node.output, pd.dst_desc());
  call(primitive_call(dnnl::binary(pd), std::move(args)));
}

void ProgramBuilder::add_flatten(const Node& node) {
  const ValueId x = node.inputs[0];
  const dnnl::memory src = input(x);
  note("flatten");
  output(node.output, plain_desc(shape(node.output)));
  // Row-major [N, C, H, W] and row-major [N, C * H * W] are the same bytes.
  reorder(src, view(node.output, plain_desc(shape(x))));
}

void ProgramBuilder::add_quantize(const Node& node) {
  const ValueId x = node.inputs[0];
  const QuantizeAttrs& quantize = node.attr<QuantizeAttrs>();
  const bool int8 = quantize.int8;
  if (int8 && slot(x).desc.data_type() == dnnl::memory::data_type::s8) {
    // The int8 convolution before it wrote these codes (int8_chain_quantize): nothing left to do.
    note("int8 codes written by the convolution before it");
    output_in_place(node.output, x);
    return;
  }
  if (int8 && shape(node.output).size() == 4 && all_readers_take_int8_codes(node.output)) {
    // The codes themselves, in the channels-last layout oneDNN's int8 convolutions read: one pass, and
    // no step of its readers converts again (a codes sum's convolution reads them as its residual).
    const Desc codes(to_dims(shape(node.output)), dnnl::memory::data_type::s8,
                     dnnl::memory::format_tag::acdb);
    const dnnl::memory source = input(x);
    note(cat("int8 quantization ", layout_name(source.get_desc()), "->", layout_name(codes),
             quantize.per_channel() ? " per channel" : ""));
    scaled_reorder(source, output(node.output, codes), inverse_scales(quantize));
    return;
  }
  if (quantize.per_channel()) {
    add_channel_fake_quantize(node);
    return;
  }
  const float scale = quantize.scale;
  const dnnl::memory src = input(x);
  note(int8 ? "int8 fake quantization" : "fp8 fake quantization");
  // Element-wise, so any layout will do; the zero padding of blocked layouts stays zero.
  const dnnl::memory dst = output(node.output, read_desc(x));
  call([src, dst, scale, int8](const dnnl::stream&) {
    const auto* in = static_cast<const float*>(src.get_data_handle());
    auto* out = static_cast<float*>(dst.get_data_handle());
    const auto count = static_cast<std::int64_t>(src.get_desc().get_size() / sizeof(float));
    if (int8) {
      parallel_for(count, true, [&](std::int64_t i) { out[i] = fake_quantize_int8(in[i], scale); });
    } else {
      parallel_for(count, true, [&](std::int64_t i) { out[i] = fake_quantize_e4m3(in[i], scale); });
    }
  });
}

void ProgramBuilder::add_channel_fake_quantize(const Node& node) {
  // In the plain [N, C, ...] layout, where channel c of image n is one run of `plane` values.
  const ValueId x = node.inputs[0];
  const Desc plain = plain_desc(shape(x));
  const dnnl::memory src = input_as(x, plain);
  const dnnl::memory dst = output(node.output, plain);
  const std::vector<float> scales = node.attr<QuantizeAttrs>().channel_scales;
  std::int64_t plane = 1;
  for (std::size_t axis = 2; axis < shape(x).size(); ++axis) plane *= shape(x)[axis];
  note("int8 fake quantization per channel");
  call([src, dst, scales, plane](const dnnl::stream&) {
    const auto* in = static_cast<const float*>(src.get_data_handle());
    auto* out = static_cast<float*>(dst.get_data_handle());
    const auto count = static_cast<std::int64_t>(src.get_desc().get_size() / sizeof(float));
    const auto channels = static_cast<std::int64_t>(scales.size());
    parallel_for(count, true, [&](std::int64_t i) {
      out[i] = fake_quantize_int8(in[i], scales[static_cast<std::size_t>((i / plane) % channels)]);
    });
  });
}

}  // namespace kiln::onednn
