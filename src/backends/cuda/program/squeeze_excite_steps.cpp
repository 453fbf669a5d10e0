// A squeeze-excite as two steps (squeeze_excite_kernels.h): fc1's step computes the global pool before it,
// the channel scale's step computes fc2 and its activation for the channels it scales.
#include "backends/cuda/kernels/squeeze_excite_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

const void* ProgramBuilder::upload_bias(const Node& conv, std::int64_t count) {
  return keep(upload(bias_of(conv, count), elem_));
}

void ProgramBuilder::add_squeeze_pool(NodeId fc1) {
  const Node& node = graph_.node(fc1);
  const Node& pool = graph_.node(fusions_.pool_into_squeeze[static_cast<std::size_t>(fc1)]);
  const Shape& xs = shape(pool.inputs[0]);
  const int n = to_int(xs[0]), c = to_int(xs[1]), hw = to_int(xs[2] * xs[3]);
  const Tensor& w1 = constant(node.inputs[1]);  // [hidden, c, 1, 1]: the row-major rows the kernel reads
  SqueezeArgs a;
  a.units = to_int(w1.dim(0));
  a.w1 = keep(upload(w1, elem_));
  a.b1 = upload_bias(node, a.units);
  a.hidden = ptr(node.output);
  a.act = act_of(node.attr<ConvAttrs>().activation);
  DeviceBuffer scratch(squeeze_pool_scratch(elem_, n, hw, c, a.units));
  check(cudaMemset(scratch.data(), 0, scratch.bytes()), "zeroing squeeze-excite scratch");
  void* counters = keep(std::move(scratch));
  const void* x = ptr(pool.inputs[0]);
  const Elem e = elem_;
  add_step(
      fc1,
      cat("squeeze-excite global avg pool + fc1 + ", activation_name(node.attr<ConvAttrs>().activation), " (",
          c, " -> ", a.units, ")"),
      [=](cudaStream_t s) { check(squeeze_pool(x, counters, e, n, hw, c, a, s), "squeeze-excite pool"); });
}

void ProgramBuilder::add_excite_scale(NodeId id) {
  const Node& node = graph_.node(id);
  const Node& fc2 = graph_.node(fusions_.excite_into_scale[static_cast<std::size_t>(id)]);
  const Shape& xs = shape(node.inputs[0]);
  const Tensor& w2 = constant(fc2.inputs[1]);  // [c, hidden, 1, 1]
  ExciteArgs a;
  a.units = to_int(w2.dim(1));
  a.hidden = ptr(fc2.inputs[0]);
  a.w2 = keep(upload(w2, elem_));
  a.b2 = upload_bias(fc2, w2.dim(0));
  const Activation gate_act = fc2.attr<ConvAttrs>().activation;
  a.act = act_of(gate_act);
  const void* x = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const int images = to_int(xs[0]), ch = to_int(channels_of(xs));
  const std::int64_t pixels = xs[2] * xs[3];
  const Elem e = elem_;
  add_step(
      id,
      cat("squeeze-excite fc2 + ", activation_name(gate_act), " + channel scale (", a.units, " -> ", ch, ")"),
      [=](cudaStream_t s) {
        check(excite_scale(x, a, y, e, images, pixels, ch, s), "squeeze-excite scale");
      });
}

}  // namespace kiln::cuda
