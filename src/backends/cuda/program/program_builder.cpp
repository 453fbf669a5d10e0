#include "backends/cuda/program/program_builder.h"

#include <algorithm>

#include "backends/cuda/kernels/layout_kernels.h"
#include "backends/cuda/program/op_table.h"
#include "backends/cuda/program/precision.h"
#include "graph/shape_inference.h"

namespace kiln::cuda {
namespace {

// Workspace cuDNN candidates may use while tactics are searched; larger ones are skipped.
constexpr std::size_t kSearchWorkspace = std::size_t{256} << 20;

// [N, C, H, W], [N, C, L] or [N, C] as the conversion kernels see it: images, channels, pixels per image.
struct ImageExtents {
  int n, c, hw;
};
ImageExtents image_extents(const Shape& s) {
  std::int64_t pixels = 1;
  for (std::size_t d = 2; d < s.size(); ++d) pixels *= s[d];
  return {to_int(s[0]), to_int(s[1]), to_int(pixels)};
}

}  // namespace

DeviceBuffer upload(const Tensor& t, Elem elem) {
  const Tensor converted = elem == Elem::kF32 ? t.to(DType::kF32) : t.to(DType::kF16);
  DeviceBuffer buffer(converted.nbytes());
  check(cudaMemcpy(buffer.data(), converted.bytes(), converted.nbytes(), cudaMemcpyHostToDevice),
        "uploading weights");
  return buffer;
}

DeviceBuffer upload_bytes(const Tensor& t) {
  DeviceBuffer buffer(t.nbytes());
  check(cudaMemcpy(buffer.data(), t.bytes(), t.nbytes(), cudaMemcpyHostToDevice), "uploading weights");
  return buffer;
}

ProgramBuilder::ProgramBuilder(const Graph& graph, const CompileOptions& options,
                               const LibraryHandles& handles, std::string device_name)
    : graph_(graph),
      options_(options),
      cuda_(cuda_options_from(options.backend_options)),
      handles_(handles),
      device_name_(std::move(device_name)),
      program_(std::make_unique<Program>()),
      cache_(options.tactic_cache) {}

std::unique_ptr<Program> ProgramBuilder::build() {
  order_ = graph_.topological_order();
  require(!order_.empty(), "cuda backend: the graph has no layers");
  elem_ = storage_elem(graph_, order_);
  program_->elem = elem_;
  shapes_ = infer_shapes(graph_, batch_input_shapes());
  fusions_ = find_fusions(graph_, order_, cuda_.fuse_quantize, options_.batch);
  schedule_ = schedule_steps(graph_, order_, fusions_);
  views_ =
      find_channel_views(graph_, order_, fusions_, shapes_, runtime_fused_convs() && cuda_.channel_views);
  const std::size_t elem_size = elem_bytes(elem_);
  arena_ = assign_arena(graph_, order_, schedule_, shapes_, elem_size, views_);
  program_->arena = DeviceBuffer(arena_.layout.total_bytes);
  // Tactics are timed on the arena: fill it with finite non-zero values first.
  check(fill_pattern(program_->arena.data(), elem_,
                     static_cast<std::int64_t>(arena_.layout.total_bytes / elem_size), handles_.stream),
        "filling the arena");
  stage_inputs();

  // The f32 scratch FP8 convolutions accumulate into when cuDNN cannot fuse their epilogue; steps run
  // one after another, so one buffer serves them all.
  std::size_t accumulator_bytes = 0;
  for (const NodeId id : order_) {
    const Node& node = graph_.node(id);
    if (node.op == OpKind::kConv2d && node.precision == Precision::kF8)
      accumulator_bytes =
          std::max(accumulator_bytes, static_cast<std::size_t>(shape_numel(shape(node.output))) * 4);
  }
  program_->fp8_accumulator = DeviceBuffer(accumulator_bytes);
  search_workspace_ = DeviceBuffer(kSearchWorkspace);
  for (const NodeId id : schedule_.executed) add_node(id);
  stage_outputs();
  cache_.save();
  search_workspace_ = DeviceBuffer();
  program_->workspace = DeviceBuffer(std::max<std::size_t>(workspace_bytes_, kArenaAlignment));
  return std::move(program_);
}

std::vector<Shape> ProgramBuilder::batch_input_shapes() const {
  std::vector<Shape> shapes;
  for (const ValueId input : graph_.inputs()) {
    Shape s = graph_.value(input).shape;
    require(s.size() >= 2 && s.size() <= 4, "cuda backend: graph input '", graph_.value(input).name,
            "' must be [N, C], [N, C, L] or NCHW [N, C, H, W], got ", shape_str(s));
    s[0] = options_.batch;
    shapes.push_back(std::move(s));
  }
  return shapes;
}

// Each input arrives f32 NCHW in pinned memory and is converted to the arena's NHWC storage type by the
// first steps; the outputs leave the same way back, one after the other in one buffer.
void ProgramBuilder::stage_inputs() {
  for (const ValueId input : graph_.inputs()) {
    const Shape& s = shape(input);
    const auto bytes = static_cast<std::size_t>(shape_numel(s)) * 4;
    program_->inputs.push_back({s, DeviceBuffer(bytes), PinnedBuffer(bytes)});
  }
  std::int64_t output_elems = 0;
  for (const ValueId v : graph_.outputs()) {
    require(shape(v).size() >= 2 && shape(v).size() <= 4, "cuda backend: graph output '",
            graph_.value(v).name, "' must be [N, C], [N, C, L] or [N, C, H, W], got ", shape_str(shape(v)));
    program_->output_shapes.push_back(shape(v));
    output_elems += shape_numel(shape(v));
  }
  program_->output_device = DeviceBuffer(static_cast<std::size_t>(output_elems) * 4);
  program_->output_host = PinnedBuffer(static_cast<std::size_t>(output_elems) * 4);
  for (std::size_t i = 0; i < graph_.inputs().size(); ++i) {
    void* x = ptr(graph_.inputs()[i]);
    const ImageExtents d = image_extents(program_->inputs[i].shape);
    const LayoutArgs args{program_->inputs[i].device.data(), x, elem_, d.n, d.c, d.hw};
    add_step(kNoNode, "input NCHW f32 -> NHWC",
             [=](cudaStream_t s) { check(nchw_f32_to_nhwc(args, s), "converting the input"); });
    program_->steps.back().io = IoBinding{false, i, args};
  }
}

void ProgramBuilder::stage_outputs() {
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < graph_.outputs().size(); ++i) {
    const Shape& s = program_->output_shapes[i];
    const void* x = ptr(graph_.outputs()[i]);
    float* y = static_cast<float*>(program_->output_device.data()) + offset;
    const ImageExtents d = image_extents(s);
    const LayoutArgs args{x, y, elem_, d.n, d.c, d.hw};
    add_step(kNoNode, "output NHWC -> NCHW f32",
             [=](cudaStream_t st) { check(nhwc_to_nchw_f32(args, st), "converting an output"); });
    program_->steps.back().io = IoBinding{true, i, args};
    offset += shape_numel(s);
  }
}

void ProgramBuilder::add_node(NodeId id) {
  const Node& node = graph_.node(id);
  const CudaOp* op = find_cuda_op(node.op);
  // CudaBackend::compile refuses such nodes (op_table.h) before a program is built.
  if (op == nullptr)
    fail("cuda backend: layer '", node.name, "' (", op_kind_name(node.op), "): not supported");
  if (op->add != nullptr) (this->*(op->add))(id);
}

void ProgramBuilder::add_step(NodeId node, std::string label, std::function<void(cudaStream_t)> launch) {
  program_->steps.push_back({node, std::move(label), std::move(launch), std::nullopt, std::nullopt});
}

void* ProgramBuilder::ptr(ValueId value) const {
  const int b = arena_.buffer_of[static_cast<std::size_t>(value)];
  require(b >= 0, "cuda backend: value '", graph_.value(value).name, "' has no buffer");
  const std::int64_t view_bytes =
      arena_.element_offset[static_cast<std::size_t>(value)] * static_cast<std::int64_t>(elem_bytes(elem_));
  return static_cast<std::byte*>(program_->arena.data()) +
         arena_.layout.offsets[static_cast<std::size_t>(b)] + view_bytes;
}

const Tensor& ProgramBuilder::constant(ValueId value) const {
  const Value& v = graph_.value(value);
  require(v.is_constant(), "cuda backend: expected '", v.name, "' to be a constant");
  return v.constant;
}

void* ProgramBuilder::keep(DeviceBuffer buffer) {
  program_->constants.push_back(std::move(buffer));
  return program_->constants.back().data();
}

TacticSearch ProgramBuilder::tactic_search(bool timed) {
  return {timed, timed, search_workspace_.data(), kSearchWorkspace, handles_.stream};
}

}  // namespace kiln::cuda
