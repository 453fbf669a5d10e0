#include "families/timm_efficientnet/builder.h"

#include <array>
#include <string_view>

#include "core/error.h"
#include "families/common/checkpoint_reader.h"
#include "families/common/layer_builder.h"

namespace kiln {

namespace {

// EfficientNet's stage strides (the s values of timm's efficientnet arch_def); a checkpoint does not
// record strides, so the stage count must be EfficientNet's.
constexpr std::array<std::int64_t, 7> kStageStrides = {1, 2, 2, 2, 1, 2, 1};
constexpr std::int64_t kStemKernel = 3;
constexpr std::int64_t kStemStride = 2;

// Names of timm models built by the same class whose checkpoints look alike but compute differently:
// "tf_" ports pad like TensorFlow ('same') with BN epsilon 1e-3; "lite" models use ReLU6 and no SE; "blur"
// models downsample through a blur pool that saves no weights.
void check_architecture(std::string_view architecture) {
  if (architecture.empty()) return;  // not stated: the checkpoint's keys decide
  require(architecture.substr(0, 3) != "tf_", "architecture '", architecture,
          "': TensorFlow-ported EfficientNets ('same' padding, BN epsilon 1e-3) are not supported");
  require(architecture.find("lite") == std::string_view::npos, "architecture '", architecture,
          "': EfficientNet-Lite (ReLU6, no squeeze-excite) is not supported");
  require(architecture.find("blur") == std::string_view::npos, "architecture '", architecture,
          "': anti-aliased downsampling (timm's aa_layer) is not supported");
  require(
      architecture.substr(0, 14) == "efficientnet_b" || architecture.substr(0, 14) == "efficientnet_l",
      "architecture '", architecture,
      "': timm_efficientnet builds timm's efficientnet_b0..b8 / efficientnet_l2 and their width and depth "
      "variants");
}

std::string block_path(std::size_t stage, std::int64_t index) { return cat("blocks.", stage, ".", index); }

// A depthwise conv weight [C, 1, k, k] with an odd square kernel; returns k.
std::int64_t depthwise_kernel(const CheckpointReader& reader, const std::string& key, std::int64_t channels) {
  const Shape& w = reader.shape(key, 4);
  require(w[0] == channels && w[1] == 1 && w[2] == w[3] && w[2] % 2 == 1, "checkpoint key '", key,
          "': expected a depthwise weight [", channels, ", 1, k, k] with odd k, got shape ", shape_str(w));
  return w[2];
}

// A 1x1 conv weight [out, in, 1, 1]; returns out after checking in.
std::int64_t pointwise_outputs(const CheckpointReader& reader, const std::string& key, std::int64_t in) {
  const Shape& w = reader.shape(key, 4);
  require(w[1] == in && w[2] == 1 && w[3] == 1, "checkpoint key '", key,
          "': expected a 1x1 conv weight [out, ", in, ", 1, 1], got shape ", shape_str(w));
  return w[0];
}

std::int64_t infer_se_channels(const CheckpointReader& reader, const std::string& block,
                               std::int64_t channels) {
  if (!reader.has_prefix(block + ".se.")) return 0;
  return pointwise_outputs(reader, block + ".se.conv_reduce.weight", channels);
}

EfficientNetBlockArch infer_block(const CheckpointReader& reader, const std::string& block, std::int64_t in,
                                  std::int64_t stride) {
  EfficientNetBlockArch arch;
  arch.in_channels = in;
  arch.stride = stride;
  if (reader.has(block + ".conv_pwl.weight")) {
    arch.kind = EfficientNetBlockKind::kInvertedResidual;
    arch.mid_channels = pointwise_outputs(reader, block + ".conv_pw.weight", in);
    arch.kernel = depthwise_kernel(reader, block + ".conv_dw.weight", arch.mid_channels);
    arch.se_channels = infer_se_channels(reader, block, arch.mid_channels);
    arch.out_channels = pointwise_outputs(reader, block + ".conv_pwl.weight", arch.mid_channels);
  } else {
    require(reader.has(block + ".conv_dw.weight") && reader.has(block + ".conv_pw.weight"), "block '", block,
            "': expected an inverted residual (conv_pw, conv_dw, conv_pwl) or a depthwise-separable block "
            "(conv_dw, conv_pw); checkpoint key '",
            block, ".conv_dw.weight' or '", block, ".conv_pw.weight' is missing");
    arch.kind = EfficientNetBlockKind::kDepthwiseSeparable;
    arch.mid_channels = in;
    arch.kernel = depthwise_kernel(reader, block + ".conv_dw.weight", in);
    arch.se_channels = infer_se_channels(reader, block, in);
    arch.out_channels = pointwise_outputs(reader, block + ".conv_pw.weight", in);
  }
  arch.skip = stride == 1 && arch.in_channels == arch.out_channels;
  return arch;
}

EfficientNetArch infer_arch(const CheckpointReader& reader, const ModelConfig& config) {
  check_architecture(config.architecture);
  EfficientNetArch arch;
  const Shape& stem = reader.shape("conv_stem.weight", 4);
  require(stem[2] == kStemKernel && stem[3] == kStemKernel, "checkpoint key 'conv_stem.weight': expected a ",
          kStemKernel, "x", kStemKernel, " kernel, got shape ", shape_str(stem));
  arch.stem_channels = stem[0];
  arch.in_channels = stem[1];
  const auto stages = reader.child_indices("blocks.");
  require(stages.size() == kStageStrides.size(), "checkpoint keys 'blocks.S.*': found ", stages.size(),
          " stages, EfficientNet has ", kStageStrides.size());
  std::int64_t channels = arch.stem_channels;
  for (std::size_t stage = 0; stage < stages.size(); ++stage) {
    const auto blocks = reader.child_indices(cat("blocks.", stage, "."));
    require(!blocks.empty(), "checkpoint keys 'blocks.", stage, ".I.*': stage ", stage, " has no blocks");
    std::vector<EfficientNetBlockArch> stage_arch;
    for (const std::int64_t index : blocks) {
      const std::int64_t stride = index == 0 ? kStageStrides[stage] : 1;
      stage_arch.push_back(infer_block(reader, block_path(stage, index), channels, stride));
      channels = stage_arch.back().out_channels;
    }
    arch.stages.push_back(std::move(stage_arch));
  }
  arch.head_channels = pointwise_outputs(reader, "conv_head.weight", channels);
  const Shape& classifier = reader.shape("classifier.weight", 2);
  require(classifier[0] == config.num_classes && classifier[1] == arch.head_channels,
          "checkpoint key 'classifier.weight': expected [", config.num_classes,
          " (num_classes of the config), ", arch.head_channels, " (outputs of conv_head)], got shape ",
          shape_str(classifier));
  arch.num_classes = classifier[0];
  return arch;
}

ValueId silu(LayerBuilder& b, const std::string& name, ValueId x) {
  return b.activation(name, x, Activation::kSilu);
}

// timm's BatchNormAct2d: the batch norm `name` and, when `act`, its SiLU `name.act`.
ValueId bn_act(LayerBuilder& b, const std::string& name, ValueId x, bool act) {
  x = b.batch_norm(name, x);
  return act ? silu(b, name + ".act", x) : x;
}

// timm's SqueezeExcite: mean over the image, conv_reduce (bias) + SiLU, conv_expand (bias) + sigmoid,
// then x scaled per channel by the gate.
ValueId squeeze_excite(LayerBuilder& b, const std::string& se, ValueId x, std::int64_t reduced) {
  const std::int64_t channels = b.channels(x);
  ValueId gate = b.op(OpKind::kGlobalAvgPool, se + ".pool", {x});
  gate = b.conv(se + ".conv_reduce", gate, reduced, conv_attrs(1, 1, 0), true);
  gate = silu(b, se + ".act1", gate);
  gate = b.conv(se + ".conv_expand", gate, channels, conv_attrs(1, 1, 0), true);
  gate = b.activation(se + ".gate", gate, Activation::kSigmoid);
  return b.op(OpKind::kChannelScale, se + ".scale", {x, gate});
}

ValueId depthwise(LayerBuilder& b, const std::string& name, ValueId x, const EfficientNetBlockArch& arch) {
  return b.conv(name, x, arch.mid_channels,
                conv_attrs(arch.kernel, arch.stride, arch.kernel / 2, arch.mid_channels));
}

ValueId build_block(LayerBuilder& b, const std::string& block, const EfficientNetBlockArch& arch, ValueId x) {
  ValueId y = x;
  if (arch.kind == EfficientNetBlockKind::kInvertedResidual) {
    y = b.conv(block + ".conv_pw", y, arch.mid_channels, conv_attrs(1, 1, 0));
    y = bn_act(b, block + ".bn1", y, true);
    y = depthwise(b, block + ".conv_dw", y, arch);
    y = bn_act(b, block + ".bn2", y, true);
    if (arch.se_channels > 0) y = squeeze_excite(b, block + ".se", y, arch.se_channels);
    y = b.conv(block + ".conv_pwl", y, arch.out_channels, conv_attrs(1, 1, 0));
    y = bn_act(b, block + ".bn3", y, false);
  } else {
    y = depthwise(b, block + ".conv_dw", y, arch);
    y = bn_act(b, block + ".bn1", y, true);
    if (arch.se_channels > 0) y = squeeze_excite(b, block + ".se", y, arch.se_channels);
    y = b.conv(block + ".conv_pw", y, arch.out_channels, conv_attrs(1, 1, 0));
    y = bn_act(b, block + ".bn2", y, false);  // timm's pw_act is off
  }
  return arch.skip ? b.op(OpKind::kAdd, block + ".add", {y, x}, AddAttrs{}) : y;
}

}  // namespace

EfficientNetArch infer_efficientnet_arch(const std::map<std::string, Tensor>& weights,
                                         const ModelConfig& config) {
  return infer_arch(CheckpointReader(weights), config);
}

Graph build_timm_efficientnet(const std::map<std::string, Tensor>& weights, const ModelConfig& config,
                              std::int64_t batch) {
  require(batch == -1 || batch > 0, "batch size: expected a positive number or -1 (any), got ", batch);
  CheckpointReader reader(weights);
  const EfficientNetArch arch = infer_arch(reader, config);
  Graph graph;
  LayerBuilder b(graph, reader);
  const std::int64_t size = config.preprocess.input_size;
  ValueId x = graph.add_input("input", {batch, arch.in_channels, size, size});
  x = b.conv("conv_stem", x, arch.stem_channels, conv_attrs(kStemKernel, kStemStride, kStemKernel / 2));
  x = bn_act(b, "bn1", x, true);
  for (std::size_t stage = 0; stage < arch.stages.size(); ++stage) {
    for (std::size_t index = 0; index < arch.stages[stage].size(); ++index) {
      x = build_block(b, block_path(stage, static_cast<std::int64_t>(index)), arch.stages[stage][index], x);
    }
  }
  x = b.conv("conv_head", x, arch.head_channels, conv_attrs(1, 1, 0));
  x = bn_act(b, "bn2", x, true);
  x = b.op(OpKind::kGlobalAvgPool, "global_pool.pool", {x});
  x = b.op(OpKind::kFlatten, "global_pool.flatten", {x});
  x = b.linear("classifier", x, arch.num_classes);
  graph.mark_output(x);
  reader.finish();
  return graph;
}

}  // namespace kiln
