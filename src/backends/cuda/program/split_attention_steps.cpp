// ResNeSt's split-attention operators: the radix sum, the radix softmax and the weighted sum (which
// computes a fused softmax inline, and writes the E4M3 codes of a quantize point fused into it).
#include "backends/cuda/kernels/split_attention_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

void ProgramBuilder::add_radix_sum(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const int radix = to_int(node.attr<RadixAttrs>().radix);
  const void* x = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const std::int64_t rows = rows_of(out_shape);
  const int c = to_int(channels_of(out_shape));
  const Elem e = elem_;
  add_step(id, "radix sum",
           [=](cudaStream_t s) { check(radix_sum(x, y, e, rows, radix, c, s), "radix sum"); });
}

void ProgramBuilder::add_radix_softmax(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const auto& a = node.attr<RadixAttrs>();
  const int n = to_int(out_shape[0]), radix = to_int(a.radix), card = to_int(a.cardinality);
  const int c = to_int(out_shape[1]) / radix;
  const void* x = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const Elem e = elem_;
  add_step(id, "radix softmax",
           [=](cudaStream_t s) { check(radix_softmax(x, y, e, n, radix, card, c, s), "radix softmax"); });
}

void ProgramBuilder::add_radix_weighted_sum(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const auto& a = node.attr<RadixAttrs>();
  const NodeId softmax = fusions_.softmax_into_sum[static_cast<std::size_t>(id)];
  const int n = to_int(out_shape[0]), hw = to_int(out_shape[2] * out_shape[3]), c = to_int(out_shape[1]);
  const int radix = to_int(a.radix), card = to_int(a.cardinality);
  const void* x = ptr(node.inputs[0]);
  const void* w = softmax != kNoNode ? ptr(graph_.node(softmax).inputs[0]) : ptr(node.inputs[1]);
  void* y = value_out(id);
  const CodesOut codes = codes_out(id);
  const bool fused = softmax != kNoNode;
  const Elem e = elem_;
  const char* what = fused ? "radix softmax + weighted sum" : "radix weighted sum";
  add_step(id, cat(what, codes_label(id)), [=](cudaStream_t s) {
    check(radix_weighted_sum(x, w, y, e, n, hw, radix, card, c, fused, s, codes), "weighted sum");
  });
}

}  // namespace kiln::cuda
