// Convolutions: kernel sizes, strides, padding (symmetric and not), dilation, groups up to depthwise
// (EfficientNet's 3x3 and 5x5, stride 1 and 2, with SiLU), fused activations, channel counts off the
// backends' blocks, fp16, and the FP8 path (quantize point, dequantized E4M3 weights, fp16 output), which
// is where kDequantize is checked.
#include "../fp8_graph_util.h"
#include "op_case_util.h"

namespace kiln::testing {
namespace {

struct ConvCase {
  const char* name;
  std::int64_t in, out, size, batch;
  ConvAttrs attrs;
  bool bias = true;
};

OpCase conv_case(const ConvCase& c) {
  return graph_case(c.name, OpKind::kConv2d, c.batch, [c](SmallGraph& g) {
    g.output(g.conv(g.input("x", {c.in, c.size, c.size}), c.out, c.attrs, c.bias));
  });
}

ConvAttrs asymmetric_padding() {
  ConvAttrs a = conv_attrs(3, 2, 0);
  a.padding = {0, 0, 1, 1};  // TensorFlow's "same" for stride 2: padding at the end only
  return a;
}

// An FP8 layer as quant/fp8_rewrite.h makes it (fp8_graph_util.h), reading graph input x.
OpCase fp8_conv_case(const char* name, std::int64_t channels, const ConvAttrs& attrs, bool bias) {
  OpCase c = graph_case(name, OpKind::kDequantize, 2, [=](SmallGraph& g) {
    const ValueId x = g.input("x", {channels, 8, 8});
    g.output(fp8_conv(g, quantize(g, x, 0.01f), channels, attrs, bias));
  });
  c.bound = kFp8Bound;
  return c;
}

}  // namespace

std::vector<OpCase> convolution_cases() {
  const ConvCase convs[] = {
      {"conv2d_3x3", 16, 32, 9, 2, conv_attrs(3, 1, 1)},
      {"conv2d_1x1_no_bias", 24, 40, 7, 1, conv_attrs(1, 1, 0), false},
      {"conv2d_7x7_stride2_stem", 3, 16, 32, 1, conv_attrs(7, 2, 3)},
      {"conv2d_3x3_stride2", 16, 16, 12, 2, conv_attrs(3, 2, 1)},
      {"conv2d_3x3_unpadded", 8, 8, 9, 1, conv_attrs(3, 1, 0)},
      {"conv2d_asymmetric_padding", 8, 16, 10, 1, asymmetric_padding()},
      {"conv2d_dilated", 8, 8, 11, 1, conv_attrs(3, 1, 2, 1, Activation::kNone, 2)},
      {"conv2d_grouped", 32, 64, 8, 2, conv_attrs(3, 1, 1, 4)},
      {"conv2d_grouped_1x1", 32, 32, 1, 3, conv_attrs(1, 1, 0, 2)},
      {"conv2d_depthwise", 24, 24, 10, 1, conv_attrs(3, 1, 1, 24)},
      {"conv2d_depthwise_5x5_stride2", 16, 16, 11, 2, conv_attrs(5, 2, 2, 16)},
      {"conv2d_13_channels", 13, 13, 6, 2, conv_attrs(3, 1, 1)},
      {"conv2d_relu", 16, 16, 8, 1, conv_attrs(3, 1, 1, 1, Activation::kRelu)},
      {"conv2d_silu", 16, 24, 8, 2, conv_attrs(1, 1, 0, 1, Activation::kSilu)},
      {"conv2d_sigmoid", 8, 16, 1, 2, conv_attrs(1, 1, 0, 1, Activation::kSigmoid)},
      {"conv2d_silu_3x3", 16, 16, 9, 2, conv_attrs(3, 1, 1, 1, Activation::kSilu)},
      // EfficientNet's depthwise convolutions, each with its SiLU.
      {"conv2d_depthwise_3x3_silu", 32, 32, 10, 2, conv_attrs(3, 1, 1, 32, Activation::kSilu)},
      {"conv2d_depthwise_3x3_stride2_silu", 24, 24, 11, 2, conv_attrs(3, 2, 1, 24, Activation::kSilu)},
      {"conv2d_depthwise_5x5_silu", 40, 40, 9, 2, conv_attrs(5, 1, 2, 40, Activation::kSilu)},
      {"conv2d_depthwise_5x5_stride2_silu", 48, 48, 12, 1, conv_attrs(5, 2, 2, 48, Activation::kSilu)},
  };
  std::vector<OpCase> cases;
  for (const ConvCase& c : convs) cases.push_back(conv_case(c));
  for (const char* name :
       {"conv2d_3x3", "conv2d_grouped", "conv2d_depthwise", "conv2d_relu", "conv2d_silu", "conv2d_sigmoid",
        "conv2d_silu_3x3", "conv2d_depthwise_3x3_silu", "conv2d_depthwise_3x3_stride2_silu",
        "conv2d_depthwise_5x5_silu", "conv2d_depthwise_5x5_stride2_silu"}) {
    for (const ConvCase& c : convs) {
      if (std::string(c.name) == name) cases.push_back(fp16_case(conv_case(c)));
    }
  }
  cases.push_back(fp8_conv_case("dequantize_fp8_conv_1x1", 32, conv_attrs(1, 1, 0), false));
  cases.push_back(
      fp8_conv_case("dequantize_fp8_conv_3x3_relu", 16, conv_attrs(3, 1, 1, 1, Activation::kRelu), true));
  cases.push_back(fp8_conv_case("dequantize_fp8_conv_grouped", 32, conv_attrs(3, 1, 1, 2), true));
  return cases;
}

}  // namespace kiln::testing
