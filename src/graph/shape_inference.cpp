#include "graph/shape_inference.h"

#include <cmath>

#include "core/error.h"

namespace kiln {

namespace {

// Pooled/convolved extent along one axis (PyTorch's rule, ceil_mode included).
std::int64_t window_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                           std::int64_t pad_end, std::int64_t dilation, bool ceil_mode) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t room = in + pad_begin + pad_end - span;
  if (room < 0) return 0;
  std::int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  // A last window that would start in the end padding is dropped.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

class ShapeChecker {
 public:
  ShapeChecker(const Node& node, const std::vector<Shape>& inputs) : node_(node), inputs_(inputs) {}

  void inputs(std::size_t min_count, std::size_t max_count) const {
    require(inputs_.size() >= min_count && inputs_.size() <= max_count, where(), "expected ",
            min_count == max_count ? cat(min_count) : cat(min_count, "-", max_count), " inputs, got ",
            inputs_.size());
  }
  void rank(std::size_t index, std::size_t expected) const {
    require(inputs_[index].size() == expected, where(), "input ", index, " has shape ",
            shape_str(inputs_[index]), ", expected rank ", expected);
  }
  void shape(std::size_t index, const Shape& expected) const {
    require(inputs_[index] == expected, where(), "input ", index, " has shape ", shape_str(inputs_[index]),
            ", expected ", shape_str(expected));
  }
  void check(bool condition, const std::string& message) const { require(condition, where(), message); }
  template <typename A>
  const A& attrs() const {
    const A* found = std::get_if<A>(&node_.attrs);
    require(found != nullptr, where(), "attributes do not belong to a ", op_kind_name(node_.op), " node");
    return *found;
  }
  std::string where() const { return cat("layer '", node_.name, "' (", op_kind_name(node_.op), "): "); }

 private:
  const Node& node_;
  const std::vector<Shape>& inputs_;
};

Shape conv_shape(const ShapeChecker& check, const std::vector<Shape>& in, const ConvAttrs& attrs) {
  check.inputs(2, 3);
  check.rank(0, 4);
  check.rank(1, 4);
  const Shape& x = in[0];
  const Shape& w = in[1];
  check.check(
      attrs.groups >= 1 && x[1] % attrs.groups == 0 && w[0] % attrs.groups == 0,
      cat("groups ", attrs.groups, " must divide input channels ", x[1], " and output channels ", w[0]));
  check.shape(1, {w[0], x[1] / attrs.groups, attrs.kernel[0], attrs.kernel[1]});
  if (in.size() == 3) check.shape(2, {w[0]});
  for (std::size_t axis = 0; axis < 2; ++axis) {
    check.check(attrs.stride[axis] >= 1 && attrs.dilation[axis] >= 1 && attrs.kernel[axis] >= 1,
                "kernel, stride and dilation must be positive");
  }
  const auto oh = window_extent(x[2], attrs.kernel[0], attrs.stride[0], attrs.padding[0], attrs.padding[2],
                                attrs.dilation[0], false);
  const auto ow = window_extent(x[3], attrs.kernel[1], attrs.stride[1], attrs.padding[1], attrs.padding[3],
                                attrs.dilation[1], false);
  check.check(oh > 0 && ow > 0, cat("input ", shape_str(x), " is smaller than the kernel"));
  return {x[0], w[0], oh, ow};
}

Shape pool_shape(const ShapeChecker& check, const std::vector<Shape>& in, const PoolAttrs& attrs) {
  check.inputs(1, 1);
  check.rank(0, 4);
  const Shape& x = in[0];
  for (std::size_t axis = 0; axis < 2; ++axis) {
    check.check(attrs.kernel[axis] >= 1 && attrs.stride[axis] >= 1, "kernel and stride must be positive");
    check.check(
        attrs.padding[axis] * 2 <= attrs.kernel[axis] && attrs.padding[axis + 2] * 2 <= attrs.kernel[axis],
        "padding must be at most half the kernel");
  }
  const auto oh = window_extent(x[2], attrs.kernel[0], attrs.stride[0], attrs.padding[0], attrs.padding[2], 1,
                                attrs.ceil_mode);
  const auto ow = window_extent(x[3], attrs.kernel[1], attrs.stride[1], attrs.padding[1], attrs.padding[3], 1,
                                attrs.ceil_mode);
  check.check(oh > 0 && ow > 0, cat("input ", shape_str(x), " is smaller than the pooling window"));
  return {x[0], x[1], oh, ow};
}

Shape radix_split_shape(const ShapeChecker& check, const Shape& x, const RadixAttrs& attrs) {
  check.check(attrs.radix >= 1 && attrs.cardinality >= 1, "radix and cardinality must be positive");
  check.check(x[1] % attrs.radix == 0, cat("channels ", x[1], " are not a multiple of radix ", attrs.radix));
  return {x[0], x[1] / attrs.radix, x[2], x[3]};
}

Shape concat_shape(const ShapeChecker& check, const std::vector<Shape>& in, const ConcatAttrs& attrs) {
  check.check(!in.empty(), "expected at least one input");
  const auto axis = static_cast<std::size_t>(attrs.axis);
  check.check(attrs.axis >= 1 && axis < in[0].size(),
              cat("axis ", attrs.axis, " is not a non-batch axis of input 0"));
  Shape out = in[0];
  for (std::size_t i = 1; i < in.size(); ++i) {
    Shape expected = in[0];
    expected[axis] = in[i].size() == in[0].size() ? in[i][axis] : -1;
    check.shape(i, expected);
    out[axis] += in[i][axis];
  }
  return out;
}

// Per operator family below: each checks the attributes and inputs in the order the errors are reported.

// Normalization and elementwise operators keep their input's shape.
Shape batch_norm_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.attrs<BatchNormAttrs>();
  check.inputs(5, 5);
  check.check(in[0].size() >= 2, "expected an input of rank >= 2");
  for (std::size_t i = 1; i < 5; ++i) check.shape(i, {in[0][1]});
  return in[0];
}

Shape add_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.attrs<AddAttrs>();
  check.inputs(2, 2);
  check.shape(1, in[0]);
  return in[0];
}

// The classifier head: pooling to one value per channel, flattening, the fully connected layer.
Shape global_avg_pool_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.inputs(1, 1);
  check.rank(0, 4);
  return {in[0][0], in[0][1], 1, 1};
}

Shape flatten_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.inputs(1, 1);
  check.check(in[0].size() >= 2, "expected an input of rank >= 2");
  std::int64_t features = 1;
  for (std::size_t axis = 1; axis < in[0].size(); ++axis) features *= in[0][axis];
  return {in[0][0], features};
}

Shape linear_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.inputs(2, 3);
  check.rank(0, 2);
  check.rank(1, 2);
  check.shape(1, {in[1][0], in[0][1]});
  if (in.size() == 3) check.shape(2, {in[1][0]});
  return {in[0][0], in[1][0]};
}

// ResNeSt's split attention: summing the radix splits, their softmax, and the weighted sum.
Shape radix_sum_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.inputs(1, 1);
  check.rank(0, 4);
  return radix_split_shape(check, in[0], check.attrs<RadixAttrs>());
}

Shape radix_softmax_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const auto& attrs = check.attrs<RadixAttrs>();
  check.inputs(1, 1);
  check.rank(0, 4);
  check.check(in[0][2] == 1 && in[0][3] == 1, "expected attention logits of shape [N, C, 1, 1]");
  check.check(in[0][1] % (attrs.radix * attrs.cardinality) == 0,
              cat("channels ", in[0][1], " are not a multiple of radix x cardinality"));
  return in[0];
}

Shape radix_weighted_sum_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const auto& attrs = check.attrs<RadixAttrs>();
  check.inputs(2, 2);
  check.rank(0, 4);
  check.shape(1, {in[0][0], in[0][1], 1, 1});
  return radix_split_shape(check, in[0], attrs);
}

// FP8: quantizing activations, dequantizing weights per output channel, and per-channel rescaling.
Shape quantize_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const QuantizeAttrs& attrs = check.attrs<QuantizeAttrs>();
  check.inputs(1, 1);
  check.check(std::isfinite(attrs.scale) && attrs.scale > 0.0f,
              cat("expected a positive finite scale, got ", attrs.scale));
  if (!attrs.per_channel()) return in[0];
  // Per-channel scales: int8 codes of an activation whose axis 1 holds the channels.
  check.check(attrs.int8, "per-channel scales are for int8 quantize points only");
  const std::int64_t channels = in[0].size() >= 2 ? in[0][1] : 0;
  check.check(static_cast<std::int64_t>(attrs.channel_scales.size()) == channels,
              cat(attrs.channel_scales.size(), " channel scales for an input of shape ", shape_str(in[0]),
                  ": expected one per channel (axis 1)"));
  for (const float scale : attrs.channel_scales)
    check.check(std::isfinite(scale) && scale > 0.0f,
                cat("expected positive finite channel scales, got ", scale));
  return in[0];
}

Shape dequantize_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.attrs<std::monostate>();
  check.inputs(2, 2);
  check.check(!in[0].empty(), "expected codes of rank >= 1 with output channels on axis 0");
  check.shape(1, {in[0][0]});
  return in[0];
}

Shape channel_scale_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  check.attrs<std::monostate>();
  check.inputs(2, 2);
  check.rank(0, 4);
  check.shape(1, {in[0][0], in[0][1], 1, 1});
  return in[0];
}

// YOLOv10's operators: channel slices per group, nearest upsampling, attention and the detection decode.
Shape channel_slice_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const auto& a = check.attrs<SliceAttrs>();
  check.inputs(1, 1);
  check.check(in[0].size() >= 2, "expected an input of rank >= 2");
  check.check(a.groups >= 1 && in[0][1] % a.groups == 0,
              cat("channels ", in[0][1], " do not split into ", a.groups, " groups"));
  check.check(
      a.begin >= 0 && a.begin < a.end && a.end <= in[0][1] / a.groups,
      cat("slice [", a.begin, ", ", a.end, ") is not inside a group of ", in[0][1] / a.groups, " channels"));
  Shape out = in[0];
  out[1] = a.groups * (a.end - a.begin);
  return out;
}

Shape upsample_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const std::int64_t scale = check.attrs<UpsampleAttrs>().scale;
  check.inputs(1, 1);
  check.rank(0, 4);
  check.check(scale >= 1, "scale must be positive");
  return {in[0][0], in[0][1], in[0][2] * scale, in[0][3] * scale};
}

Shape attention_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const auto& a = check.attrs<AttentionAttrs>();
  check.inputs(1, 1);
  check.rank(0, 4);
  check.check(a.heads >= 1 && a.key_dim >= 1 && a.head_dim >= 1, "heads and dimensions must be positive");
  check.check(
      in[0][1] == a.heads * (2 * a.key_dim + a.head_dim),
      cat("expected ", a.heads * (2 * a.key_dim + a.head_dim), " channels (heads x (2 key_dim + head_dim))"));
  return {in[0][0], a.heads * a.head_dim, in[0][2], in[0][3]};
}

Shape detect_decode_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const auto& a = check.attrs<DetectAttrs>();
  check.inputs(1, 1);
  check.rank(0, 4);
  check.check(a.reg_max >= 1 && a.stride >= 1, "reg_max and stride must be positive");
  check.check(in[0][1] > 4 * a.reg_max, cat("expected more than 4 x reg_max = ", 4 * a.reg_max, " channels"));
  return {in[0][0], in[0][1] - 4 * a.reg_max + 4, in[0][2] * in[0][3]};
}

// Every image has at least max_det anchors, so every output row is a real detection.
Shape detect_select_shape(const ShapeChecker& check, const std::vector<Shape>& in) {
  const std::int64_t max_det = check.attrs<DetectSelectAttrs>().max_det;
  check.inputs(1, 1);
  check.rank(0, 3);
  check.check(max_det >= 1, "max_det must be positive");
  check.check(in[0][1] > 4, "expected decoded predictions [N, 4 + classes, anchors] with at least one class");
  check.check(in[0][2] >= max_det, cat("expected at least max_det = ", max_det, " anchors, got ", in[0][2]));
  return {in[0][0], max_det, 6};
}

}  // namespace

Shape infer_node_shape(const Node& node, const std::vector<Shape>& in) {
  const ShapeChecker check(node, in);
  switch (node.op) {
    case OpKind::kConv2d:
      return conv_shape(check, in, check.attrs<ConvAttrs>());
    case OpKind::kBatchNorm:
      return batch_norm_shape(check, in);
    case OpKind::kActivation:
      check.attrs<ActivationAttrs>();
      check.inputs(1, 1);
      return in[0];
    case OpKind::kAdd:
      return add_shape(check, in);
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
      return pool_shape(check, in, check.attrs<PoolAttrs>());
    case OpKind::kGlobalAvgPool:
      return global_avg_pool_shape(check, in);
    case OpKind::kFlatten:
      return flatten_shape(check, in);
    case OpKind::kLinear:
      return linear_shape(check, in);
    case OpKind::kRadixSum:
      return radix_sum_shape(check, in);
    case OpKind::kRadixSoftmax:
      return radix_softmax_shape(check, in);
    case OpKind::kRadixWeightedSum:
      return radix_weighted_sum_shape(check, in);
    case OpKind::kQuantize:
      return quantize_shape(check, in);
    case OpKind::kDequantize:
      return dequantize_shape(check, in);
    case OpKind::kChannelScale:
      return channel_scale_shape(check, in);
    case OpKind::kConcat:
      return concat_shape(check, in, check.attrs<ConcatAttrs>());
    case OpKind::kChannelSlice:
      return channel_slice_shape(check, in);
    case OpKind::kUpsample:
      return upsample_shape(check, in);
    case OpKind::kAttention:
      return attention_shape(check, in);
    case OpKind::kDetectDecode:
      return detect_decode_shape(check, in);
    case OpKind::kDetectSelect:
      return detect_select_shape(check, in);
  }
  fail(check.where(), "unknown operator");
}

std::vector<Shape> infer_shapes(const Graph& graph, const std::vector<Shape>& input_shapes) {
  require(input_shapes.size() == graph.inputs().size(), "expected ", graph.inputs().size(), " inputs, got ",
          input_shapes.size());
  std::vector<Shape> shapes(graph.values().size());
  for (std::size_t i = 0; i < graph.values().size(); ++i) shapes[i] = graph.values()[i].shape;
  for (std::size_t i = 0; i < input_shapes.size(); ++i) {
    const Value& input = graph.value(graph.inputs()[i]);
    const Shape& given = input_shapes[i];
    bool fits = given.size() == input.shape.size();
    for (std::size_t axis = 0; fits && axis < given.size(); ++axis) {
      fits = input.shape[axis] == -1 ? given[axis] >= 1 : given[axis] == input.shape[axis];
    }
    require(fits, "input '", input.name, "': expected shape ", shape_str(input.shape), " (-1: any), got ",
            shape_str(given));
    shapes[static_cast<std::size_t>(graph.inputs()[i])] = given;
  }
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    std::vector<Shape> node_inputs;
    node_inputs.reserve(node.inputs.size());
    for (const ValueId input : node.inputs) node_inputs.push_back(shapes[static_cast<std::size_t>(input)]);
    shapes[static_cast<std::size_t>(node.output)] = infer_node_shape(node, node_inputs);
  }
  return shapes;
}

}  // namespace kiln
