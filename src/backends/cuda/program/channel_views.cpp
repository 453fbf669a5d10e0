#include "backends/cuda/program/channel_views.h"

#include <algorithm>

#include "passes/rewrite_util.h"

namespace kiln::cuda {
namespace {

// Views start and step on whole 16-byte packs of fp16 (what cuDNN's tensors and kiln's kernels align to).
constexpr std::int64_t kViewAlignment = 8;

bool is_graph_value(const Graph& graph, ValueId v) {
  return graph.value(v).producer == kNoNode || passes::is_graph_output(graph, v);
}

// A residual add kiln's add kernel computes on its own (no convolution, no codes written with it).
bool plain_add(const Graph& graph, const Fusions& f, NodeId id) {
  const Node& node = graph.node(id);
  return node.op == OpKind::kAdd && !is_quantized(node.precision) &&
         f.conv_into_add[static_cast<std::size_t>(id)] == kNoNode &&
         f.quantize_into_producer[static_cast<std::size_t>(id)] == kNoNode;
}

// A max pool of a cascade computed in one launch (fusion.h), which reads and writes views.
bool cascade_pool(const Graph& graph, const Fusions& f, NodeId id) {
  const auto i = static_cast<std::size_t>(id);
  return graph.node(id).op == OpKind::kMaxPool2d && i < f.pools_into_pool.size() &&
         (f.pools_into_pool[i][0] != kNoNode || f.absorbed[i]);
}

bool channel_slice_of_one_group(const Node& node) {
  return node.op == OpKind::kChannelSlice && node.attr<SliceAttrs>().groups == 1;
}

class ViewFinder {
 public:
  ViewFinder(const Graph& graph, const Fusions& f, const std::vector<Shape>& shapes, bool runtime_fused_convs)
      : graph_(graph), f_(f), shapes_(shapes), convs_(runtime_fused_convs), consumers_(graph.consumers()) {
    views_.of.assign(graph.values().size(), {});
  }

  // Match: every reader of `v` but `except` reads it as a view; slices among them become views of it.
  bool readers_take_views(ValueId v, NodeId except) {
    if (passes::is_graph_output(graph_, v)) return false;
    for (const NodeId r : consumers_[static_cast<std::size_t>(v)]) {
      if (r == except) continue;
      const Node& node = graph_.node(r);
      const bool ok =
          (node.op == OpKind::kConv2d && node.inputs[0] == v && conv_takes_views(graph_, f_, r, convs_)) ||
          plain_add(graph_, f_, r) || node.op == OpKind::kUpsample || cascade_pool(graph_, f_, r) ||
          (node.op == OpKind::kConcat && node.attr<ConcatAttrs>().axis == 1) ||
          (channel_slice_of_one_group(node) && slice_is_view(r));
      if (!ok) return false;
    }
    return true;
  }

  // A channel slice whose readers all take views: a view of its input.
  bool slice_is_view(NodeId slice) {
    const Node& node = graph_.node(slice);
    if (views_.is_view(node.output)) return true;
    const auto& a = node.attr<SliceAttrs>();
    const std::int64_t channels = shapes_[static_cast<std::size_t>(node.inputs[0])][1];
    if (shapes_[static_cast<std::size_t>(node.output)].size() != 4 || a.begin % kViewAlignment != 0 ||
        channels % kViewAlignment != 0 || !readers_take_views(node.output, kNoNode))
      return false;
    views_.of[static_cast<std::size_t>(node.output)] = {node.inputs[0], a.begin, channels};
    return true;
  }

  // A concat's inputs whose producers write them in place.
  void place_inputs(NodeId concat) {
    const Node& node = graph_.node(concat);
    const Shape& out = shapes_[static_cast<std::size_t>(node.output)];
    // A concat a decode reads apart (fusion.h) has no buffer to write into.
    if (node.attr<ConcatAttrs>().axis != 1 || out.size() != 4 || out[1] % kViewAlignment != 0 ||
        passes::is_graph_output(graph_, node.output) || f_.absorbed[static_cast<std::size_t>(concat)])
      return;
    std::int64_t offset = 0;
    for (const ValueId v : node.inputs) {
      const std::int64_t width = shapes_[static_cast<std::size_t>(v)][1];
      if (offset % kViewAlignment == 0 && writes_in_place(v, concat))
        views_.of[static_cast<std::size_t>(v)] = {node.output, offset, out[1]};
      offset += width;
    }
  }

  ChannelViews resolved() {
    for (std::size_t v = 0; v < views_.of.size(); ++v) {
      ChannelView& view = views_.of[v];
      while (view.root != kNoValue && views_.is_view(view.root)) {
        const ChannelView& outer = views_.of[static_cast<std::size_t>(view.root)];
        view = {outer.root, outer.offset + view.offset, outer.pitch};
      }
    }
    return std::move(views_);
  }

 private:
  // Check: `v` is read once by `concat`, made by a producer that writes views, and read as a view by the
  // rest.
  bool writes_in_place(ValueId v, NodeId concat) {
    const Node& node = graph_.node(concat);
    if (is_graph_value(graph_, v) || views_.is_view(v) ||
        std::count(node.inputs.begin(), node.inputs.end(), v) != 1)
      return false;
    const NodeId producer = graph_.value(v).producer;
    const bool writer = conv_takes_views(graph_, f_, producer, convs_) || plain_add(graph_, f_, producer) ||
                        graph_.node(producer).op == OpKind::kUpsample || cascade_pool(graph_, f_, producer);
    return writer && readers_take_views(v, concat);
  }

  const Graph& graph_;
  const Fusions& f_;
  const std::vector<Shape>& shapes_;
  bool convs_;
  passes::Consumers consumers_;
  ChannelViews views_;
};

}  // namespace

std::size_t ChannelViews::count() const {
  return static_cast<std::size_t>(
      std::count_if(of.begin(), of.end(), [](const ChannelView& v) { return v.root != kNoValue; }));
}

bool conv_takes_views(const Graph& graph, const Fusions& f, NodeId conv, bool runtime_fused_convs) {
  if (!runtime_fused_convs || conv == kNoNode) return false;
  const Node& node = graph.node(conv);
  if (node.op != OpKind::kConv2d || is_quantized(node.precision)) return false;
  const auto& a = node.attr<ConvAttrs>();
  const auto i = static_cast<std::size_t>(conv);
  return (a.activation == Activation::kSilu || a.activation == Activation::kSigmoid) && a.groups == 1 &&
         !f.absorbed[i] && f.squeeze_into_expand[i] == kNoNode && f.pool_into_squeeze[i] == kNoNode &&
         f.quantize_into_producer[i] == kNoNode;
}

ChannelViews find_channel_views(const Graph& graph, const std::vector<NodeId>& order, const Fusions& fusions,
                                const std::vector<Shape>& shapes, bool runtime_fused_convs) {
  ViewFinder finder(graph, fusions, shapes, runtime_fused_convs);
  if (runtime_fused_convs) {
    for (const NodeId id : order) {
      if (graph.node(id).op == OpKind::kConcat) finder.place_inputs(id);
    }
    for (const NodeId id : order) {
      if (channel_slice_of_one_group(graph.node(id))) finder.slice_is_view(id);
    }
  }
  return finder.resolved();
}

}  // namespace kiln::cuda
