#include "families/timm_resnest/builder.h"

#include <array>
#include <string_view>

#include "core/error.h"
#include "families/common/checkpoint_reader.h"
#include "families/common/layer_builder.h"

namespace kiln {

namespace {

// timm registers its ResNeSts with avd_first=False except these two (resnest.py).
constexpr std::array<std::string_view, 2> kAvdFirstArchitectures = {"resnest50d_4s2x40d",
                                                                    "resnest50d_1s4x24d"};
// ResNestBottleneck's avd pool: nn.AvgPool2d(3, stride, padding=1).
constexpr std::int64_t kAvdKernel = 3;

bool avd_first_for(std::string_view architecture) {
  // A config may name a pretrained tag too ("resnest50d_4s2x40d.in1k").
  architecture = architecture.substr(0, architecture.find('.'));
  for (const auto name : kAvdFirstArchitectures) {
    if (architecture == name) return true;
  }
  return false;
}

// Radix and cardinality follow from three shapes. SplitAttn's conv maps the block width W to
// radix * C channels (C = split width, conv3's input) in cardinality * radix groups, so its weight is
// [radix * C, W / (cardinality * radix), 3, 3]; fc1 is [attention, C / cardinality, 1, 1].
void infer_split_attention(const CheckpointReader& reader, const std::string& block, ResNestStageArch& arch) {
  const std::string conv_key = block + ".conv2.conv.weight";
  const Shape& conv = reader.shape(conv_key, 4);
  require(conv[0] >= arch.split_width && conv[0] % arch.split_width == 0, "checkpoint key '", conv_key,
          "': expected output channels a multiple of ", arch.split_width, " (inputs of ", block,
          ".conv3), got shape ", shape_str(conv));
  arch.radix = conv[0] / arch.split_width;
  require(conv[1] > 0 && arch.width % conv[1] == 0, "checkpoint key '", conv_key,
          "': expected input channels per group dividing ", arch.width, " (outputs of ", block,
          ".conv1), got shape ", shape_str(conv));
  const std::int64_t groups = arch.width / conv[1];
  require(groups % arch.radix == 0, "checkpoint key '", conv_key, "': ", groups,
          " groups are not a multiple of the radix ", arch.radix, " (shape ", shape_str(conv), ")");
  arch.cardinality = groups / arch.radix;
  require(arch.split_width % arch.cardinality == 0, "checkpoint key '", conv_key, "': cardinality ",
          arch.cardinality, " does not divide the split width ", arch.split_width);
  const std::string fc1_key = block + ".conv2.fc1.weight";
  arch.attention_width = reader.shape(fc1_key, 4)[0];
  require(arch.attention_width % arch.cardinality == 0, "checkpoint key '", fc1_key, "': expected outputs a ",
          "multiple of the cardinality ", arch.cardinality, ", got shape ", shape_str(reader.shape(fc1_key)));
}

ResNestStageArch infer_stage(const CheckpointReader& reader, std::size_t stage, std::int64_t depth) {
  const std::string block = block_name(stage, 0);
  ResNestStageArch arch;
  arch.depth = depth;
  const Shape& conv1 = reader.shape(block + ".conv1.weight", 4);
  arch.width = conv1[0];
  arch.in_channels = conv1[1];
  const Shape& conv3 = reader.shape(block + ".conv3.weight", 4);
  arch.out_channels = conv3[0];
  arch.split_width = conv3[1];
  infer_split_attention(reader, block, arch);
  arch.shortcut = infer_shortcut(reader, block);
  return arch;
}

// timm's SplitAttn: conv, bn0, act0; the radix splits summed, averaged over space, fc1 (bias), bn1,
// act1, fc2 (bias), both grouped by cardinality; RadixSoftmax (a sigmoid for radix 1) weights the
// splits, which are summed.
// Its conv has stride 1: with avd the block's stride is in a pool.
ValueId build_split_attention(LayerBuilder& b, const std::string& name, const ResNestStageArch& arch,
                              ValueId x) {
  const RadixAttrs radix{arch.radix, arch.cardinality};
  const std::int64_t mid = arch.radix * arch.split_width;
  ValueId splits = b.conv(name + ".conv", x, mid, conv_attrs(3, 1, 1, arch.cardinality * arch.radix));
  splits = b.batch_norm(name + ".bn0", splits);
  splits = b.relu(name + ".act0", splits);
  ValueId gap = arch.radix > 1 ? b.op(OpKind::kRadixSum, name + ".radix_sum", {splits}, radix) : splits;
  gap = b.op(OpKind::kGlobalAvgPool, name + ".gap", {gap});
  gap =
      b.conv(name + ".fc1", gap, arch.attention_width, conv_attrs(1, 1, 0, arch.cardinality), /*bias=*/true);
  gap = b.batch_norm(name + ".bn1", gap);
  gap = b.relu(name + ".act1", gap);
  ValueId attention = b.conv(name + ".fc2", gap, mid, conv_attrs(1, 1, 0, arch.cardinality), /*bias=*/true);
  attention = arch.radix > 1 ? b.op(OpKind::kRadixSoftmax, name + ".rsoftmax", {attention}, radix)
                             : b.activation(name + ".rsoftmax", attention, Activation::kSigmoid);
  return b.op(OpKind::kRadixWeightedSum, name + ".weighted_sum", {splits, attention}, radix);
}

// timm's ResNestBottleneck with avd=True: a strided block moves its stride from the 3x3 conv to a
// 3x3 average pool, before the conv (avd_first) or after it (avd_last). With split attention (every
// timm ResNeSt) bn2 and act2 are Identity: SplitAttn normalises and activates inside.
ValueId build_block(LayerBuilder& b, const std::string& block, const ResNestStageArch& arch, bool avd_first,
                    ValueId x, std::int64_t stride) {
  const bool avd = stride > 1;
  const PoolAttrs avd_pool = pool_attrs(kAvdKernel, stride, 1);
  ValueId y = b.conv(block + ".conv1", x, arch.width, conv_attrs(1, 1, 0));
  y = b.batch_norm(block + ".bn1", y);
  y = b.relu(block + ".act1", y);
  if (avd && avd_first) y = b.op(OpKind::kAvgPool2d, block + ".avd_first", {y}, avd_pool);
  y = build_split_attention(b, block + ".conv2", arch, y);
  if (avd && !avd_first) y = b.op(OpKind::kAvgPool2d, block + ".avd_last", {y}, avd_pool);
  y = b.conv(block + ".conv3", y, arch.out_channels, conv_attrs(1, 1, 0));
  y = b.batch_norm(block + ".bn3", y);
  return build_residual(b, block, infer_shortcut(b.reader(), block), x, y, stride, "act3");
}

ResNestArch infer_arch(const CheckpointReader& reader, const ModelConfig& config) {
  ResNestArch arch;
  arch.stem = infer_stem(reader);
  const auto depths = infer_stage_depths(reader);
  for (std::size_t stage = 0; stage < depths.size(); ++stage) {
    arch.stages.push_back(infer_stage(reader, stage, depths[stage]));
  }
  arch.avd_first = avd_first_for(config.architecture);
  arch.num_classes = infer_num_classes(reader, config);
  return arch;
}

}  // namespace

ResNestArch infer_resnest_arch(const std::map<std::string, Tensor>& weights, const ModelConfig& config) {
  return infer_arch(CheckpointReader(weights), config);
}

Graph build_timm_resnest(const std::map<std::string, Tensor>& weights, const ModelConfig& config,
                         std::int64_t batch) {
  CheckpointReader reader(weights);
  const ResNestArch arch = infer_arch(reader, config);
  Graph graph;
  LayerBuilder builder(graph, reader);
  ValueId x = build_stem(builder, arch.stem, add_image_input(builder, arch.stem, config, batch));
  for (std::size_t stage = 0; stage < arch.stages.size(); ++stage) {
    for (std::int64_t index = 0; index < arch.stages[stage].depth; ++index) {
      x = build_block(builder, block_name(stage, index), arch.stages[stage], arch.avd_first, x,
                      block_stride(stage, index));
    }
  }
  build_head(builder, x, arch.num_classes);
  reader.finish();
  return graph;
}

}  // namespace kiln
