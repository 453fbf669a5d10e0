// merge_concat_slices: a concat along the channels whose neighbouring inputs are channel slices of one
// tensor, each starting where the one before it ends, reads that stretch of the tensor once: the tensor
// itself where the stretch is all of its channels, else one slice of the stretch. YOLOv10's C2f blocks
// split a convolution's output in two halves and concatenate both halves again, so the halves' copies
// (and the first half's slice, whose only reader was the concat) disappear.
#include "core/error.h"
#include "passes/pass.h"
#include "passes/rewrite_util.h"

namespace kiln {

namespace {

// The slice a value is, when it is a live ungrouped channel slice.
const Node* slice_producing(const Graph& graph, ValueId value) {
  const NodeId producer = graph.value(value).producer;
  if (producer == kNoNode) return nullptr;
  const Node& node = graph.node(producer);
  if (node.dead || node.op != OpKind::kChannelSlice || node.attr<SliceAttrs>().groups != 1) return nullptr;
  return &node;
}

// Match: inputs [first, last) of a concat are slices of one tensor, each beginning at its predecessor's
// end. Returns `last` for the longest such run starting at `first`.
std::size_t end_of_run(const Graph& graph, const std::vector<ValueId>& inputs, std::size_t first) {
  const Node* head = slice_producing(graph, inputs[first]);
  if (head == nullptr) return first + 1;
  std::int64_t end = head->attr<SliceAttrs>().end;
  std::size_t last = first + 1;
  for (; last < inputs.size(); ++last) {
    const Node* next = slice_producing(graph, inputs[last]);
    if (next == nullptr || next->inputs[0] != head->inputs[0] || next->attr<SliceAttrs>().begin != end) break;
    end = next->attr<SliceAttrs>().end;
  }
  return last;
}

// Apply: the value the run [first, last) reads, made as a new slice when it is not the whole tensor.
ValueId merged_value(Graph& graph, const std::vector<ValueId>& inputs, std::size_t first, std::size_t last) {
  const Node& head = *slice_producing(graph, inputs[first]);
  const ValueId source = head.inputs[0];
  const std::int64_t begin = head.attr<SliceAttrs>().begin;
  const std::int64_t end = slice_producing(graph, inputs[last - 1])->attr<SliceAttrs>().end;
  if (begin == 0 && end == graph.value(source).shape.at(1)) return source;
  const std::string name = passes::fresh_value_name(graph, head.name + ".merged");
  return graph.add_node(OpKind::kChannelSlice, name, {source},
                        SliceAttrs{.groups = 1, .begin = begin, .end = end});
}

}  // namespace

PassChanges merge_concat_slices(Graph& graph) {
  PassChanges changes;
  for (const NodeId id : graph.topological_order()) {
    if (graph.node(id).op != OpKind::kConcat || graph.node(id).attr<ConcatAttrs>().axis != 1) continue;
    // Check: a graph output stays a value some node computes (as eliminate_identity).
    if (passes::is_graph_output(graph, graph.node(id).output)) continue;
    const std::string name = graph.node(id).name;
    const std::vector<ValueId> inputs = graph.node(id).inputs;
    std::vector<ValueId> merged;
    for (std::size_t first = 0; first < inputs.size();) {
      const std::size_t last = end_of_run(graph, inputs, first);
      if (last - first == 1) {
        merged.push_back(inputs[first]);
      } else {
        merged.push_back(merged_value(graph, inputs, first, last));
        changes.push_back(cat(name, " reads ", last - first, " neighbouring slices of ",
                              graph.value(merged.back()).name, " as one"));
      }
      first = last;
    }
    if (merged.size() == inputs.size()) continue;
    if (merged.size() == 1) {
      passes::bypass(graph, id, merged.front());
    } else {
      graph.node(id).inputs = std::move(merged);
    }
  }
  return changes;
}

}  // namespace kiln
