// Concatenations, channel slices and nearest upsampling: copies between NHWC buffers. In the backend's
// channels-last order a tensor [N, C, d2, d3] is stored [N, d2, d3, C] (rank 3 [N, C, L]: [N, L, C]), so
// a concatenation along any axis joins blocks of contiguous elements: along the channels one block per
// pixel, along a later axis one block per image (or per row), as the column gather copies them.
#include "backends/cuda/kernels/data_movement_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {
namespace {

// The extents of `s` in storage order: channels last.
Shape storage_dims(const Shape& s) {
  Shape dims = {s[0]};
  dims.insert(dims.end(), s.begin() + 2, s.end());
  dims.push_back(s[1]);
  return dims;
}

// Where logical axis `axis` of a rank-`rank` tensor is in storage order.
std::size_t storage_axis(std::size_t rank, std::int64_t axis) {
  if (axis == 1) return rank - 1;
  return axis == 0 ? 0 : static_cast<std::size_t>(axis) - 1;
}

std::int64_t product(const Shape& dims, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t d = begin; d < end; ++d) p *= dims[d];
  return p;
}

void* offset_by(void* base, std::int64_t elements, Elem e) {
  return static_cast<std::byte*>(base) + elements * static_cast<std::int64_t>(elem_bytes(e));
}

}  // namespace

// Inputs written in place (channel_views.h) are skipped; a concat whose inputs all are has no step.
void ProgramBuilder::add_concat(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& out_shape = shape(node.output);
  const std::size_t axis = storage_axis(out_shape.size(), node.attr<ConcatAttrs>().axis);
  // Per row of everything before the axis, each input's block of the axis and what follows it.
  const std::int64_t rows = product(storage_dims(out_shape), 0, axis);
  std::vector<ColumnSource> sources;
  std::int64_t offset = 0, in_place = 0;
  for (const ValueId input : node.inputs) {
    const Shape dims = storage_dims(shape(input));
    const std::int64_t block = product(dims, axis, dims.size());
    const bool placed =
        views_.is_view(input) && views_.of[static_cast<std::size_t>(input)].root == node.output;
    if (!placed) sources.push_back({ptr(input), pitch(input) > 0 ? pitch(input) : block, block, offset});
    in_place += placed ? 1 : 0;
    offset += block;
  }
  if (sources.empty()) return;
  void* y = ptr(node.output);
  const Elem e = elem_;
  const std::string written = in_place > 0 ? cat(" (", in_place, " written in place)") : "";
  add_step(id, cat("concat ", sources.size(), " inputs", written),
           [=](cudaStream_t s) { check(gather_columns(sources, y, e, rows, offset, s), "concat"); });
}

// A slice that is a view (channel_views.h) has no step; a copied one may read a view.
void ProgramBuilder::add_channel_slice(NodeId id) {
  const Node& node = graph_.node(id);
  if (views_.is_view(node.output)) return;
  const auto& a = node.attr<SliceAttrs>();
  const Shape& in_shape = shape(node.inputs[0]);
  const std::int64_t channels = channels_of(in_shape), group = channels / a.groups;
  const std::int64_t src_pitch = pitch(node.inputs[0]) > 0 ? pitch(node.inputs[0]) : channels;
  const std::int64_t width = a.end - a.begin;
  const std::int64_t rows = shape_numel(in_shape) / channels;
  const Elem e = elem_;
  std::vector<ColumnSource> sources;
  for (std::int64_t g = 0; g < a.groups; ++g) {
    sources.push_back({offset_by(ptr(node.inputs[0]), g * group + a.begin, e), src_pitch, width, g * width});
  }
  void* y = ptr(node.output);
  const std::int64_t y_pitch = a.groups * width;
  add_step(id, cat("channel slice [", a.begin, ", ", a.end, ") of ", a.groups, " groups"),
           [=](cudaStream_t s) { check(gather_columns(sources, y, e, rows, y_pitch, s), "channel slice"); });
}

void ProgramBuilder::add_upsample(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& xs = shape(node.inputs[0]);
  const int n = to_int(xs[0]), c = to_int(xs[1]), h = to_int(xs[2]), w = to_int(xs[3]);
  const int scale = to_int(node.attr<UpsampleAttrs>().scale);
  const void* x = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const Elem e = elem_;
  const UpsamplePitches p{pitch(node.inputs[0]), pitch(node.output)};
  const std::string views = p.x > 0 || p.y > 0 ? " (channel views)" : "";
  add_step(id, cat("nearest upsample x", scale, views),
           [=](cudaStream_t s) { check(upsample_nearest(x, y, e, n, h, w, c, scale, s, p), "upsample"); });
}

}  // namespace kiln::cuda
