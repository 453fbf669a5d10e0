// Adds checkpoint-backed layers to a graph: each layer takes its parameters from the checkpoint under
// its module path, checked against the shapes the layer needs, and is named by that path so that
// passes and precision recipes can select layers by name.
#pragma once

#include <cstdint>
#include <string>

#include "families/common/checkpoint_reader.h"
#include "graph/graph.h"

namespace kiln {

class LayerBuilder {
 public:
  LayerBuilder(Graph& graph, CheckpointReader& reader) : graph_(graph), reader_(reader) {}

  Graph& graph() { return graph_; }
  CheckpointReader& reader() { return reader_; }
  // Dimension 1 of x's shape.
  std::int64_t channels(ValueId x) const;

  // Conv2d `name` with weight `name.weight` [out, in / groups, kh, kw] (and `name.bias` [out] when
  // `bias`); kernel, stride, padding and groups come from `attrs`.
  ValueId conv(const std::string& name, ValueId x, std::int64_t out_channels, const ConvAttrs& attrs,
               bool bias = false);
  // BatchNorm2d `name` over x's channels: `name.weight`, `.bias`, `.running_mean`, `.running_var`;
  // epsilon is PyTorch's default unless the model sets another.
  ValueId batch_norm(const std::string& name, ValueId x, float epsilon = 1e-5f);
  ValueId activation(const std::string& name, ValueId x, Activation activation);
  ValueId relu(const std::string& name, ValueId x) { return activation(name, x, Activation::kRelu); }
  // Linear `name`: `name.weight` [out, in], `name.bias` [out].
  ValueId linear(const std::string& name, ValueId x, std::int64_t out_features);
  // A node without parameters.
  ValueId op(OpKind op, const std::string& name, std::vector<ValueId> inputs, Attributes attrs = {});

  // The checkpoint tensor `key` of shape `expected`, as a graph constant named `key`.
  ValueId parameter(const std::string& key, const Shape& expected);

 private:
  Graph& graph_;
  CheckpointReader& reader_;
};

// Square-kernel convolution attributes with symmetric padding.
ConvAttrs conv_attrs(std::int64_t kernel, std::int64_t stride, std::int64_t padding, std::int64_t groups = 1);
// Square-window pooling attributes with symmetric padding.
PoolAttrs pool_attrs(std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool ceil_mode = false,
                     bool count_include_pad = true);

}  // namespace kiln
