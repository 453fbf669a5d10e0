// The dispatch from a node to its reference kernel, shared by the reference executor and by faster
// backends that fall back to the reference kernels for a node.
#include "reference/kernels.h"
#include "core/error.h"

namespace kiln::reference {

Tensor run_op(const Node& node, const std::vector<const Tensor*>& in) {
  const auto optional_input = [&](std::size_t index) { return in.size() > index ? in[index] : nullptr; };
  switch (node.op) {
    case OpKind::kConv2d:
      // The codes and scales an int8 layer computes with sit in its quantize points: the reference
      // executor reads them there (run_int8_conv), a single kernel call cannot.
      require(node.precision != Precision::kI8, "layer '", node.name,
              "': an int8 convolution runs with its quantize points (run_reference), not alone");
      return conv2d(*in[0], *in[1], optional_input(2), node.attr<ConvAttrs>());
    case OpKind::kBatchNorm:
      return batch_norm(*in[0], *in[1], *in[2], *in[3], *in[4], node.attr<BatchNormAttrs>().epsilon);
    case OpKind::kActivation:
      return activation(*in[0], node.attr<ActivationAttrs>().activation);
    case OpKind::kAdd:
      return add(*in[0], *in[1], node.attr<AddAttrs>().activation);
    case OpKind::kMaxPool2d:
      return max_pool2d(*in[0], node.attr<PoolAttrs>());
    case OpKind::kAvgPool2d:
      return avg_pool2d(*in[0], node.attr<PoolAttrs>());
    case OpKind::kGlobalAvgPool:
      return global_avg_pool(*in[0]);
    case OpKind::kFlatten:
      return flatten(*in[0]);
    case OpKind::kLinear:
      return linear(*in[0], *in[1], optional_input(2));
    case OpKind::kRadixSum:
      return radix_sum(*in[0], node.attr<RadixAttrs>());
    case OpKind::kRadixSoftmax:
      return radix_softmax(*in[0], node.attr<RadixAttrs>());
    case OpKind::kRadixWeightedSum:
      return radix_weighted_sum(*in[0], *in[1], node.attr<RadixAttrs>());
    case OpKind::kQuantize:
      return quantize(*in[0], node.attr<QuantizeAttrs>());
    case OpKind::kDequantize:
      return dequantize(*in[0], *in[1]);
    case OpKind::kChannelScale:
      return channel_scale(*in[0], *in[1]);
    case OpKind::kConcat:
      return concat(in, node.attr<ConcatAttrs>().axis);
    case OpKind::kChannelSlice:
      return channel_slice(*in[0], node.attr<SliceAttrs>());
    case OpKind::kUpsample:
      return upsample_nearest(*in[0], node.attr<UpsampleAttrs>().scale);
    case OpKind::kAttention:
      return attention(*in[0], node.attr<AttentionAttrs>());
    case OpKind::kDetectDecode:
      return detect_decode(*in[0], node.attr<DetectAttrs>());
    case OpKind::kDetectSelect:
      return detect_select(*in[0], node.attr<DetectSelectAttrs>());
  }
  fail("layer '", node.name, "': unknown operator");
}

}  // namespace kiln::reference
