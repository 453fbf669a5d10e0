#include "backends/cpu/onednn/program_builder.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>

#include "backends/cpu/onednn/precision.h"
#include "backends/cpu/onednn/radix_kernels.h"
#include "core/error.h"
#include "graph/shape_inference.h"

namespace kiln::onednn {

using DataType = dnnl::memory::data_type;

ProgramBuilder::ProgramBuilder(const Graph& graph, const CompileOptions& options,
                               std::map<std::string, Int8Weights> int8_weights)
    : graph_(graph),
      options_(options),
      int8_weights_(std::move(int8_weights)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  require(options.batch >= 1, "onednn backend: batch must be at least 1, got ", options.batch);
  program_.engine = engine_;
  program_.workspace = std::make_unique<Workspace>(engine_);
  program_.io = std::make_shared<RunIo>();
}

Program ProgramBuilder::build() {
  std::vector<Shape> input_shapes;
  for (const ValueId input : graph_.inputs()) {
    Shape s = graph_.value(input).shape;
    require(!s.empty(), "onednn backend: graph input '", graph_.value(input).name,
            "' has no batch dimension");
    s[0] = options_.batch;
    input_shapes.push_back(s);
  }
  shapes_ = infer_shapes(graph_, input_shapes);
  program_.input_shapes = input_shapes;
  slots_.assign(graph_.values().size(), Slot{});

  order_ = graph_.topological_order();
  for (const NodeId id : order_) {
    const Node& node = graph_.node(id);
    require(precision_supported(node.precision), "layer '", node.name, "': precision ",
            precision_name(node.precision), " is not supported by the cpu backend yet");
  }
  fusions_ = find_fusions(graph_, order_);
  consumers_ = graph_.consumers();
  position_.assign(graph_.nodes().size(), -1);
  for (std::size_t i = 0; i < order_.size(); ++i)
    position_[static_cast<std::size_t>(order_[i])] = static_cast<int>(i);
  // An absorbed node runs (and reads its inputs) at its absorber's place.
  for (const NodeId id : order_) {
    const auto index = static_cast<std::size_t>(id);
    for (const NodeId inner : {fusions_.conv_into_add[index], fusions_.radix_sum_into_pool[index]}) {
      if (inner != kNoNode) position_[static_cast<std::size_t>(inner)] = position_[index];
    }
  }
  last_reader_.assign(graph_.values().size(), -1);
  for (const NodeId id : order_) {
    for (const ValueId input : graph_.node(id).inputs) {
      int& last = last_reader_[static_cast<std::size_t>(input)];
      last = std::max(last, position_[static_cast<std::size_t>(id)]);
    }
  }
  for (const ValueId output : graph_.outputs()) last_reader_[static_cast<std::size_t>(output)] = INT_MAX;

  probe_preferred_layout();
  add_inputs();
  for (const NodeId id : order_) {
    if (!fusions_.absorbed[static_cast<std::size_t>(id)]) add_node(id);
  }
  add_outputs();
  program_.workspace->finalize();
  return std::move(program_);
}

void ProgramBuilder::probe_preferred_layout() {
  const Shape x{1, 64, 56, 56};
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_direct, any_desc(x),
                                       any_desc({64, 64, 1, 1}), any_desc(x), {1, 1}, {0, 0}, {0, 0}, {0, 0});
  const dnnl::convolution_forward::primitive_desc pd(desc, engine_);
  const ChannelLayout layout = channel_layout(pd.src_desc(), x);
  if (layout.kind != ChannelLayout::Kind::kNone) {
    preferred_kind_ = layout.kind;
    preferred_block_ = layout.block;
  }
}

Desc ProgramBuilder::preferred_desc(const Shape& s) const {
  return channel_layout_desc(s, preferred_kind_, preferred_block_);
}

ChannelLayout ProgramBuilder::radix_output_layout(const ChannelLayout& x, const Shape& y) const {
  const ChannelLayout own = channel_layout(channel_layout_desc(y, x.kind, x.block), y);
  const ChannelLayout preferred = channel_layout(preferred_desc(y), y);
  // From NCHW a per-pixel scatter would cost more than the reorder it saves.
  const bool worth_it = x.kind == ChannelLayout::Kind::kChannelsLast || x.block >= 8;
  return worth_it && radix_output_supported(x, preferred) ? preferred : own;
}

void ProgramBuilder::begin_step(NodeId node) {
  current_ = Step{};
  current_.node = node;
}

void ProgramBuilder::end_step() { program_.steps.push_back(std::move(current_)); }

dnnl::memory ProgramBuilder::input(ValueId value) {
  const dnnl::memory stored = stored_input(value);
  if (slot(value).desc.data_type() == DataType::f32) return stored;
  const dnnl::memory widened = temporary(read_desc(value));
  reorder(stored, widened);
  return widened;
}

Desc ProgramBuilder::read_desc(ValueId value) const { return with_type(slot(value).desc, DataType::f32); }

dnnl::memory ProgramBuilder::stored_input(ValueId value) {
  const Slot& s = slot(value);
  require(s.buffer >= 0, "onednn backend: value '", graph_.value(value).name,
          "' is read before it is computed");
  program_.workspace->use(s.buffer, step_index());
  if (!reads_rounded(reading_precision_) || s.desc.data_type() != DataType::f32) return s.memory;
  // An fp16 or bf16 node reads activations rounded; those a node of its precision (or an fp8 node, for
  // fp16) wrote already are, and so is a value stored in bf16.
  const Value& v = graph_.value(value);
  if (v.is_constant() || (v.producer != kNoNode && writes_rounded(graph_.node(v.producer).precision))) {
    return s.memory;
  }
  const dnnl::memory rounded = temporary(s.desc);
  call([source = s.memory, rounded, precision = reading_precision_](const dnnl::stream&) {
    round_to_storage(static_cast<const float*>(source.get_data_handle()),
                     static_cast<float*>(rounded.get_data_handle()),
                     source.get_desc().get_size() / sizeof(float), precision);
  });
  return rounded;
}

dnnl::memory ProgramBuilder::input_as(ValueId value, const Desc& desc) {
  const bool narrowing = desc.data_type() != DataType::f32;
  // Into bf16 the reorder itself rounds, so the value is read as stored.
  dnnl::memory source = narrowing ? stored_input(value) : input(value);
  if (source.get_desc() == desc) return source;
  dnnl::memory converted = temporary(desc);
  note(cat("(reorder ", layout_name(source.get_desc()), "->", layout_name(desc), ")"));
  reorder(source, converted);
  return converted;
}

dnnl::memory ProgramBuilder::output(ValueId value, const Desc& desc) {
  Slot& s = slots_[static_cast<std::size_t>(value)];
  s.buffer = program_.workspace->add_buffer(desc.get_size());
  s.desc = desc;
  s.memory = program_.workspace->memory(s.buffer, desc);
  program_.workspace->use(s.buffer, step_index());
  return s.memory;
}

dnnl::memory ProgramBuilder::output_in_place(ValueId value, ValueId source) {
  Slot& s = slots_[static_cast<std::size_t>(value)];
  s = slot(source);
  program_.workspace->use(s.buffer, step_index());
  return s.memory;
}

dnnl::memory ProgramBuilder::temporary(const Desc& desc) {
  const int buffer = program_.workspace->add_buffer(desc.get_size());
  program_.workspace->use(buffer, step_index());
  return program_.workspace->memory(buffer, desc);
}

dnnl::memory ProgramBuilder::view(ValueId value, const Desc& desc) {
  const Slot& s = slot(value);
  program_.workspace->use(s.buffer, step_index());
  return program_.workspace->memory(s.buffer, desc);
}

void ProgramBuilder::reorder(const dnnl::memory& src, const dnnl::memory& dst) {
  dnnl::reorder::primitive_desc pd(engine_, src.get_desc(), engine_, dst.get_desc(), attributes());
  call(primitive_call(dnnl::reorder(pd),
                      {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad(pd)}}));
}

dnnl::primitive_attr ProgramBuilder::attributes(const dnnl::post_ops& post_ops) const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(post_ops);
  return attr;
}

dnnl::memory ProgramBuilder::scratchpad(const dnnl::primitive_desc_base& pd) {
  return program_.workspace->scratchpad(pd.scratchpad_desc());
}

dnnl::memory ProgramBuilder::pack_constant(const Tensor& values, const Desc& plain, const Desc& desc) {
  require(values.nbytes() == plain.get_size(), "onednn backend: constant of ", values.nbytes(),
          " bytes for a layout of ", plain.get_size());
  dnnl::memory packed(desc, engine_);
  // The user memory is only read; oneDNN's API takes a non-const handle.
  dnnl::memory user(plain, engine_, const_cast<std::byte*>(values.bytes()));
  dnnl::reorder(user, packed).execute(stream_, user, packed);
  stream_.wait();
  program_.constants.push_back(packed);
  return packed;
}

bool ProgramBuilder::only_read_by(ValueId value, const std::function<bool(NodeId)>& accepts) const {
  const auto& outputs = graph_.outputs();
  if (std::find(outputs.begin(), outputs.end(), value) != outputs.end()) return false;
  const auto& readers = consumers_[static_cast<std::size_t>(value)];
  return !readers.empty() && std::all_of(readers.begin(), readers.end(), accepts);
}

bool ProgramBuilder::all_readers_take_bf16(ValueId value) const {
  return only_read_by(value, [&](NodeId id) {
    const Node& reader = graph_.node(id);
    if (reader.precision != Precision::kBf16) return false;
    const OpKind op = reader.op;
    if (op == OpKind::kConv2d || op == OpKind::kLinear) return true;
    if (op == OpKind::kMaxPool2d || op == OpKind::kAvgPool2d) return true;
    // The radix kernels read their feature map (not the weights or gate beside it) as stored.
    if (op == OpKind::kRadixSum || op == OpKind::kGlobalAvgPool) return true;
    if (op == OpKind::kRadixWeightedSum || op == OpKind::kChannelScale) {
      return reader.inputs[0] == value && reader.inputs[1] != value;
    }
    // A residual add fused into a convolution reads its other operand as stored; every other reader (the
    // backend's own kernels, oneDNN's f32 primitives, the fallback) reads f32.
    return op == OpKind::kAdd && fusions_.conv_into_add[static_cast<std::size_t>(id)] != kNoNode;
  });
}

Desc ProgramBuilder::stored_desc(const Node& node, const Desc& desc) const {
  const bool bf16 = node.precision == Precision::kBf16 && all_readers_take_bf16(node.output);
  return bf16 ? with_type(desc, DataType::bf16) : desc;
}

bool ProgramBuilder::last_read_here(ValueId value, NodeId reader) const {
  return last_reader_[static_cast<std::size_t>(value)] == position_[static_cast<std::size_t>(reader)];
}

void ProgramBuilder::add_inputs() {
  const auto& inputs = graph_.inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ValueId value = inputs[i];
    // The copy is reported under the first layer that reads the input.
    NodeId reader = kNoNode;
    for (const NodeId id : order_) {
      const auto& node_inputs = graph_.node(id).inputs;
      if (std::find(node_inputs.begin(), node_inputs.end(), value) != node_inputs.end()) {
        reader = id;
        break;
      }
    }
    begin_step(reader);
    note("input copy");
    dnnl::memory memory = output(value, plain_desc(shape(value)));
    call([io = program_.io.get(), i, memory](const dnnl::stream&) {
      const Tensor& tensor = (*io->inputs)[i];
      std::memcpy(memory.get_data_handle(), tensor.bytes(), tensor.nbytes());
    });
    end_step();
  }
}

void ProgramBuilder::add_outputs() {
  for (const ValueId value : graph_.outputs()) {
    const Value& v = graph_.value(value);
    require(!v.is_constant(), "onednn backend: graph output '", v.name, "' is a constant");
    begin_step(v.producer);
    note(cat("output reorder ", layout_name(slot(value).desc)));
    const Shape& s = shape(value);
    dnnl::memory user(plain_desc(s), engine_, DNNL_MEMORY_NONE);
    reorder(input(value), user);
    program_.output_shapes.push_back(s);
    program_.output_memories.push_back(user);
    end_step();
  }
}

bool ProgramBuilder::try_step(NodeId reported, const Node& result, const std::function<void()>& build) {
  begin_step(reported);
  reading_precision_ = result.precision;
  try {
    build();
  } catch (const dnnl::error&) {
    // oneDNN has no implementation for this case: the caller takes another route. Buffers the attempt
    // reserved stay unused.
    current_ = Step{};
    reading_precision_ = Precision::kF32;
    return false;
  } catch (const NotNative&) {
    current_ = Step{};
    reading_precision_ = Precision::kF32;
    return false;
  }
  reading_precision_ = Precision::kF32;
  // A value stored in bf16 is rounded already; f32 storage is rounded in place.
  if (writes_rounded(result.precision) && slot(result.output).desc.data_type() == DataType::f32) {
    const dnnl::memory out = input(result.output);
    const Precision precision = result.precision;
    call([out, precision](const dnnl::stream&) {
      float* data = static_cast<float*>(out.get_data_handle());
      round_to_storage(data, data, out.get_desc().get_size() / sizeof(float), precision);
    });
  }
  end_step();
  return true;
}

void ProgramBuilder::emit(NodeId id) {
  const Node& node = graph_.node(id);
  if (native_support(graph_, node) && try_step(id, node, [&] { add_native(node); })) return;
  const bool done = try_step(id, node, [&] { add_fallback(node); });
  require(done, "layer '", node.name, "': the cpu backend could not compile it");
}

void ProgramBuilder::add_node(NodeId id) {
  const Node& node = graph_.node(id);
  const auto index = static_cast<std::size_t>(id);
  if (const NodeId conv = fusions_.conv_into_add[index]; conv != kNoNode) {
    // Reported under the convolution: it is where the time goes.
    if (try_step(conv, node, [&] { add_conv(graph_.node(conv), &node); })) return;
    emit(conv);
  } else if (const NodeId sum = fusions_.radix_sum_into_pool[index]; sum != kNoNode) {
    if (try_step(id, node, [&] { add_global_pool(node, &graph_.node(sum)); })) return;
    emit(sum);
  }
  emit(id);
}

void ProgramBuilder::add_native(const Node& node) {
  switch (node.op) {
    case OpKind::kConv2d:
      return add_conv(node, nullptr);
    case OpKind::kBatchNorm:
      return add_batch_norm(node);
    case OpKind::kActivation:
      return add_activation(node);
    case OpKind::kAdd:
      return add_add(node);
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
      return add_pool(node);
    case OpKind::kGlobalAvgPool:
      return add_global_pool(node, nullptr);
    case OpKind::kFlatten:
      return add_flatten(node);
    case OpKind::kLinear:
      return add_linear(node);
    case OpKind::kRadixSum:
      return add_radix_sum(node);
    case OpKind::kRadixSoftmax:
      return add_radix_softmax(node);
    case OpKind::kRadixWeightedSum:
      return add_radix_weighted_sum(node);
    case OpKind::kChannelScale:
      return add_channel_scale(node);
    case OpKind::kConcat:
      return add_concat(node);
    case OpKind::kUpsample:
      return add_upsample(node);
    case OpKind::kChannelSlice:
      return add_channel_slice(node);
    case OpKind::kQuantize:
      return add_quantize(node);
    default:
      throw NotNative{};  // native_support() keeps these on the reference fallback
  }
}

}  // namespace kiln::onednn
