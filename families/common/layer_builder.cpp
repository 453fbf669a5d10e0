#include "families/common/layer_builder.h"

#include "core/error.h"

namespace kiln {

std::int64_t LayerBuilder::channels(ValueId x) const { return graph_.value(x).shape.at(1); }

ValueId LayerBuilder::parameter(const std::string& key, const Shape& expected) {
  return graph_.add_constant(key, reader_.take(key, expected));
}

ValueId LayerBuilder::conv(const std::string& name, ValueId x, std::int64_t out_channels,
                           const ConvAttrs& attrs, bool bias) {
  const std::int64_t in_channels = channels(x);
  require(attrs.groups > 0 && in_channels % attrs.groups == 0, "layer ", name, ": ", in_channels,
          " input channels do not split into ", attrs.groups, " groups");
  std::vector<ValueId> inputs = {x, parameter(name + ".weight", {out_channels, in_channels / attrs.groups,
                                                                 attrs.kernel[0], attrs.kernel[1]})};
  if (bias) inputs.push_back(parameter(name + ".bias", {out_channels}));
  return graph_.add_node(OpKind::kConv2d, name, std::move(inputs), attrs);
}

ValueId LayerBuilder::batch_norm(const std::string& name, ValueId x, float epsilon) {
  const Shape per_channel = {channels(x)};
  std::vector<ValueId> inputs = {
      x, parameter(name + ".weight", per_channel), parameter(name + ".bias", per_channel),
      parameter(name + ".running_mean", per_channel), parameter(name + ".running_var", per_channel)};
  return graph_.add_node(OpKind::kBatchNorm, name, std::move(inputs), BatchNormAttrs{epsilon});
}

ValueId LayerBuilder::activation(const std::string& name, ValueId x, Activation activation) {
  return graph_.add_node(OpKind::kActivation, name, {x}, ActivationAttrs{activation});
}

ValueId LayerBuilder::linear(const std::string& name, ValueId x, std::int64_t out_features) {
  const std::int64_t in_features = channels(x);
  std::vector<ValueId> inputs = {x, parameter(name + ".weight", {out_features, in_features}),
                                 parameter(name + ".bias", {out_features})};
  return graph_.add_node(OpKind::kLinear, name, std::move(inputs));
}

ValueId LayerBuilder::op(OpKind op, const std::string& name, std::vector<ValueId> inputs, Attributes attrs) {
  return graph_.add_node(op, name, std::move(inputs), std::move(attrs));
}

ConvAttrs conv_attrs(std::int64_t kernel, std::int64_t stride, std::int64_t padding, std::int64_t groups) {
  ConvAttrs attrs;
  attrs.kernel = {kernel, kernel};
  attrs.stride = {stride, stride};
  attrs.padding = {padding, padding, padding, padding};
  attrs.groups = groups;
  return attrs;
}

PoolAttrs pool_attrs(std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool ceil_mode,
                     bool count_include_pad) {
  PoolAttrs attrs;
  attrs.kernel = {kernel, kernel};
  attrs.stride = {stride, stride};
  attrs.padding = {padding, padding, padding, padding};
  attrs.ceil_mode = ceil_mode;
  attrs.count_include_pad = count_include_pad;
  return attrs;
}

}  // namespace kiln
