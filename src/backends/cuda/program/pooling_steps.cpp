// Max and average pools (writing the E4M3 codes of a quantize point fused into them, quantize_fusion.h),
// and the global average pool (with the radix sum it pools on the fly, and the codes too).
#include "backends/cuda/kernels/pooling_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

// The cascade of max pools `first` computes (fusion.h), in one launch.
void ProgramBuilder::add_pool_cascade(NodeId first) {
  const Node& node = graph_.node(first);
  const Shape& xs = shape(node.inputs[0]);
  PoolCascade p;
  p.x = ptr(node.inputs[0]);
  p.x_pitch = pitch(node.inputs[0]);
  p.n = to_int(xs[0]), p.c = to_int(xs[1]), p.h = to_int(xs[2]), p.w = to_int(xs[3]);
  p.radius = to_int(node.attr<PoolAttrs>().kernel[0] / 2);
  std::string views;
  for (const NodeId pool : {first, fusions_.pools_into_pool[static_cast<std::size_t>(first)][0],
                            fusions_.pools_into_pool[static_cast<std::size_t>(first)][1]}) {
    if (pool == kNoNode) continue;
    const ValueId y = graph_.node(pool).output;
    p.y[p.outputs] = ptr(y);
    p.y_pitch[p.outputs] = pitch(y);
    if (pitch(y) > 0 || p.x_pitch > 0) views = " (channel views)";
    ++p.outputs;
  }
  const Elem e = elem_;
  add_step(first,
           cat("max pool cascade of ", p.outputs, " (", 2 * p.radius + 1, "x", 2 * p.radius + 1, ")", views),
           [=](cudaStream_t s) { check(max_pool_cascade(p, e, s), "pooling"); });
}

void ProgramBuilder::add_pool(NodeId id) {
  if (fusions_.pools_into_pool[static_cast<std::size_t>(id)][0] != kNoNode) return add_pool_cascade(id);
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const auto& a = node.attr<PoolAttrs>();
  const Shape& xs = shape(node.inputs[0]);
  const PoolShape p{to_int(xs[0]),        to_int(xs[1]),        to_int(xs[2]),        to_int(xs[3]),
                    to_int(out_shape[2]), to_int(out_shape[3]), to_int(a.kernel[0]),  to_int(a.kernel[1]),
                    to_int(a.stride[0]),  to_int(a.stride[1]),  to_int(a.padding[0]), to_int(a.padding[1]),
                    to_int(a.padding[2]), to_int(a.padding[3]), a.count_include_pad};
  const void* x = ptr(node.inputs[0]);
  void* y = value_out(id);
  const CodesOut codes = codes_out(id);
  const bool is_max = node.op == OpKind::kMaxPool2d;
  const Elem e = elem_;
  add_step(id, cat(is_max ? "max pool" : "avg pool", codes_label(id)), [=](cudaStream_t s) {
    check(is_max ? max_pool(x, y, e, p, s, codes) : avg_pool(x, y, e, p, s, codes), "pooling");
  });
}

void ProgramBuilder::add_global_pool(NodeId id) {
  const Node& node = graph_.node(id);
  const NodeId sum = fusions_.radix_sum_into_pool[static_cast<std::size_t>(id)];
  const ValueId source = sum != kNoNode ? graph_.node(sum).inputs[0] : node.inputs[0];
  const int radix = sum != kNoNode ? to_int(graph_.node(sum).attr<RadixAttrs>().radix) : 1;
  const Shape& xs = shape(source);
  const int n = to_int(xs[0]), hw = to_int(xs[2] * xs[3]), c = to_int(xs[1]) / radix;
  DeviceBuffer partial(radix_global_pool_scratch(elem_, n, hw, c));
  check(cudaMemset(partial.data(), 0, partial.bytes()), "zeroing pool scratch");
  auto* scratch = static_cast<float*>(keep(std::move(partial)));
  const void* x = ptr(source);
  void* y = value_out(id);
  const CodesOut codes = codes_out(id);
  const Elem e = elem_;
  const char* what = sum != kNoNode ? "radix sum + global avg pool" : "global avg pool";
  add_step(sum != kNoNode ? sum : id, cat(what, codes_label(id)), [=](cudaStream_t s) {
    check(radix_global_pool(x, y, scratch, e, n, hw, radix, c, s, codes), "global pool");
  });
}

}  // namespace kiln::cuda
