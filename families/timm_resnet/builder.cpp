#include "families/timm_resnet/builder.h"

#include <array>
#include <string_view>

#include "core/error.h"
#include "families/common/checkpoint_reader.h"
#include "families/common/layer_builder.h"

namespace kiln {

namespace {

// timm's anti-aliased ResNets (aa_layer: AvgPool2d or BlurPool2d with a non-persistent filter) save
// the same keys as the plain ones but stride differently; only their name tells them apart.
constexpr std::array<std::string_view, 3> kAntiAliasedNameParts = {"resnetaa", "resnextaa", "resnetblur"};

void reject_anti_aliased(std::string_view architecture) {
  for (const auto part : kAntiAliasedNameParts) {
    require(architecture.find(part) == std::string_view::npos, "architecture '", architecture,
            "': anti-aliased downsampling (timm's aa_layer) is not supported");
  }
}

ResNetStageArch infer_stage(const CheckpointReader& reader, std::size_t stage, std::int64_t depth,
                            bool bottleneck) {
  const std::string block = block_name(stage, 0);
  ResNetStageArch arch;
  arch.depth = depth;
  const Shape& conv1 = reader.shape(block + ".conv1.weight", 4);
  arch.first_width = conv1[0];
  arch.in_channels = conv1[1];
  const Shape& conv2 = reader.shape(block + ".conv2.weight", 4);
  if (bottleneck) {
    arch.width = conv2[0];
    require(conv2[1] > 0 && arch.first_width % conv2[1] == 0, "checkpoint key '", block,
            ".conv2.weight': expected input channels per group dividing ", arch.first_width, " (outputs of ",
            block, ".conv1), got shape ", shape_str(conv2));
    arch.cardinality = arch.first_width / conv2[1];
    arch.out_channels = reader.shape(block + ".conv3.weight", 4)[0];
  } else {
    arch.width = conv2[0];
    arch.out_channels = conv2[0];
  }
  arch.shortcut = infer_shortcut(reader, block);
  return arch;
}

// timm's Bottleneck: conv1 1x1, bn1, act1, conv2 3x3 (the block's stride, groups = cardinality), bn2,
// act2, conv3 1x1, bn3; drop_block, aa and se are Identity/None in the plain models.
ValueId build_bottleneck(LayerBuilder& b, const std::string& block, const ResNetStageArch& arch, ValueId x,
                         std::int64_t stride) {
  ValueId y = b.conv(block + ".conv1", x, arch.first_width, conv_attrs(1, 1, 0));
  y = b.batch_norm(block + ".bn1", y);
  y = b.relu(block + ".act1", y);
  y = b.conv(block + ".conv2", y, arch.width, conv_attrs(3, stride, 1, arch.cardinality));
  y = b.batch_norm(block + ".bn2", y);
  y = b.relu(block + ".act2", y);
  y = b.conv(block + ".conv3", y, arch.out_channels, conv_attrs(1, 1, 0));
  y = b.batch_norm(block + ".bn3", y);
  return build_residual(b, block, infer_shortcut(b.reader(), block), x, y, stride, "act3");
}

// timm's BasicBlock: conv1 3x3 (the block's stride), bn1, act1, conv2 3x3, bn2.
ValueId build_basic_block(LayerBuilder& b, const std::string& block, const ResNetStageArch& arch, ValueId x,
                          std::int64_t stride) {
  ValueId y = b.conv(block + ".conv1", x, arch.first_width, conv_attrs(3, stride, 1));
  y = b.batch_norm(block + ".bn1", y);
  y = b.relu(block + ".act1", y);
  y = b.conv(block + ".conv2", y, arch.out_channels, conv_attrs(3, 1, 1));
  y = b.batch_norm(block + ".bn2", y);
  return build_residual(b, block, infer_shortcut(b.reader(), block), x, y, stride, "act2");
}

ResNetArch infer_arch(const CheckpointReader& reader, const ModelConfig& config) {
  reject_anti_aliased(config.architecture);
  ResNetArch arch;
  arch.stem = infer_stem(reader);
  // A Bottleneck has conv3; a BasicBlock does not. timm uses one block type for the whole network.
  arch.bottleneck = reader.has("layer1.0.conv3.weight");
  const auto depths = infer_stage_depths(reader);
  for (std::size_t stage = 0; stage < depths.size(); ++stage) {
    arch.stages.push_back(infer_stage(reader, stage, depths[stage], arch.bottleneck));
  }
  arch.num_classes = infer_num_classes(reader, config);
  return arch;
}

}  // namespace

ResNetArch infer_resnet_arch(const std::map<std::string, Tensor>& weights, const ModelConfig& config) {
  return infer_arch(CheckpointReader(weights), config);
}

Graph build_timm_resnet(const std::map<std::string, Tensor>& weights, const ModelConfig& config,
                        std::int64_t batch) {
  CheckpointReader reader(weights);
  const ResNetArch arch = infer_arch(reader, config);
  Graph graph;
  LayerBuilder builder(graph, reader);
  ValueId x = build_stem(builder, arch.stem, add_image_input(builder, arch.stem, config, batch));
  for (std::size_t stage = 0; stage < arch.stages.size(); ++stage) {
    const ResNetStageArch& stage_arch = arch.stages[stage];
    for (std::int64_t index = 0; index < stage_arch.depth; ++index) {
      const std::string block = block_name(stage, index);
      const std::int64_t stride = block_stride(stage, index);
      x = arch.bottleneck ? build_bottleneck(builder, block, stage_arch, x, stride)
                          : build_basic_block(builder, block, stage_arch, x, stride);
    }
  }
  build_head(builder, x, arch.num_classes);
  reader.finish();
  return graph;
}

}  // namespace kiln
