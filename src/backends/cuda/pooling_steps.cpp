// Max and average pools (writing the E4M3 codes of a quantize point fused into them, quantize_fusion.h),
// and the global average pool (with the radix sum it pools on the fly, and the codes too).
#include "backends/cuda/pooling_kernels.h"
#include "backends/cuda/program_builder.h"

namespace kiln::cuda {

void ProgramBuilder::add_pool(NodeId id) {
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
  const E4m3Out codes = codes_out(id);
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
  const E4m3Out codes = codes_out(id);
  const Elem e = elem_;
  const char* what = sum != kNoNode ? "radix sum + global avg pool" : "global avg pool";
  add_step(sum != kNoNode ? sum : id, cat(what, codes_label(id)), [=](cudaStream_t s) {
    check(radix_global_pool(x, y, scratch, e, n, hw, radix, c, s, codes), "global pool");
  });
}

}  // namespace kiln::cuda
