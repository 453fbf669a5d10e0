// YOLOv10's attention (PSA), the decode of each detection level and the NMS-free selection of the boxes.
#include <algorithm>
#include <cmath>

#include "backends/cuda/kernels/attention_kernels.h"
#include "backends/cuda/kernels/detect_select_kernels.h"
#include "backends/cuda/kernels/detection_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

void ProgramBuilder::add_attention(NodeId id) {
  const Node& node = graph_.node(id);
  const auto& a = node.attr<AttentionAttrs>();
  const Shape& xs = shape(node.inputs[0]);
  // The scale as PyTorch multiplies by it: key_dim ** -0.5 rounded to float, as the reference has it.
  const AttentionShape extents{
      to_int(xs[0]),      to_int(xs[2] * xs[3]),
      to_int(a.heads),    to_int(a.key_dim),
      to_int(a.head_dim), static_cast<float>(std::pow(static_cast<double>(a.key_dim), -0.5))};
  // The partial sums of a split live in the program's workspace, which steps run one after another share.
  workspace_bytes_ = std::max(workspace_bytes_, attention_workspace_bytes(extents));
  const void* qkv = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const DeviceBuffer* workspace = &program_->workspace;
  const Elem e = elem_;
  const std::string kernel = attention_uses_mma(elem_, extents)
                                 ? std::string("tensor cores")
                                 : cat(attention_split(extents).splits, " key splits");
  add_step(id, cat("attention ", a.heads, " heads, ", kernel),
           [=](cudaStream_t s) { check(attention(qkv, y, workspace->data(), e, extents, s), "attention"); });
}

// The decode reads its input's bins and logits where they lie: apart, when it reads a concat of the two
// (fusion.h), each as a view where it is one.
void ProgramBuilder::add_detect_decode(NodeId id) {
  const Node& node = graph_.node(id);
  const auto& a = node.attr<DetectAttrs>();
  const Shape& xs = shape(node.inputs[0]);
  const DetectShape extents{
      to_int(xs[0]),   to_int(xs[2]), to_int(xs[3]), to_int(a.reg_max), to_int(xs[1] - 4 * a.reg_max),
      to_int(a.stride)};
  const NodeId parts = fusions_.concat_into_decode[static_cast<std::size_t>(id)];
  const auto or_packed = [&](ValueId v) { return to_int(pitch(v) > 0 ? pitch(v) : shape(v)[1]); };
  const ValueId box = parts != kNoNode ? graph_.node(parts).inputs[0] : kNoValue;
  const ValueId classes = parts != kNoNode ? graph_.node(parts).inputs[1] : kNoValue;
  const DecodeSources x = parts == kNoNode
                              ? packed_decode_sources(ptr(node.inputs[0]), extents, elem_)
                              : DecodeSources{ptr(box), ptr(classes), or_packed(box), or_packed(classes)};
  void* y = ptr(node.output);
  const Elem e = elem_;
  add_step(id, cat("detect decode stride ", a.stride, parts != kNoNode ? ", bins and logits read apart" : ""),
           [=](cudaStream_t s) { check(detect_decode(x, y, e, extents, s), "detect decode"); });
}

// The selection's per-anchor keys live in the program's workspace, which steps run one after another share.
void ProgramBuilder::add_detect_select(NodeId id) {
  const Node& node = graph_.node(id);
  const Shape& xs = shape(node.inputs[0]);
  const DetectSelectShape extents{to_int(xs[0]), to_int(xs[2]), to_int(xs[1] - 4),
                                  to_int(node.attr<DetectSelectAttrs>().max_det)};
  workspace_bytes_ = std::max(workspace_bytes_, detect_select_workspace_bytes(extents));
  const void* x = ptr(node.inputs[0]);
  void* y = ptr(node.output);
  const DeviceBuffer* workspace = &program_->workspace;
  const Elem e = elem_;
  add_step(id, cat("detect select top ", extents.max_det), [=](cudaStream_t s) {
    check(detect_select(x, y, workspace->data(), e, extents, s), "detect select");
  });
}

}  // namespace kiln::cuda
