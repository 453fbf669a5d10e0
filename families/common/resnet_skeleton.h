// The parts of timm's ResNet class (timm/models/resnet.py) that do not depend on the residual block:
// the stem, the stage layout, the shortcut ("downsample") of a block and the classifier head. timm builds
// its ResNeSt models with this same class and another block, so both families use these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "families/common/checkpoint_reader.h"
#include "families/common/layer_builder.h"
#include "io/timm_config.h"

namespace kiln {

struct StemArch {
  bool deep = false;  // three 3x3 convs (conv1.0/.3/.6) instead of one 7x7 (conv1)
  std::int64_t in_channels = 3;
  std::vector<std::int64_t> widths;  // output channels of each stem conv; back() feeds layer1
};

enum class ShortcutKind {
  kIdentity,     // no downsample keys
  kConv,         // downsample.0 = conv (stride of the block), downsample.1 = BN
  kAvgPoolConv,  // avg_down: downsample.0 = AvgPool2d (none at stride 1), .1 = 1x1 conv, .2 = BN
};

struct ShortcutArch {
  ShortcutKind kind = ShortcutKind::kIdentity;
  std::int64_t kernel = 1;  // conv kernel (kConv; 3 in timm's SENet-style down_kernel_size=3)
};

StemArch infer_stem(const CheckpointReader& reader);
// Blocks per stage: the "layerS.B." indices for S = 1, 2, ... while such keys exist.
std::vector<std::int64_t> infer_stage_depths(const CheckpointReader& reader);
// timm's make_blocks with output_stride 32: stride 1 for the first stage, 2 for the others, on the
// first block only.
std::int64_t block_stride(std::size_t stage, std::int64_t block);
// `block` is the block's module path, e.g. "layer2.0".
ShortcutArch infer_shortcut(const CheckpointReader& reader, const std::string& block);
// Classifier outputs from fc.weight; fails when they differ from the config's num_classes.
std::int64_t infer_num_classes(const CheckpointReader& reader, const ModelConfig& config);
// "layer2.0"
std::string block_name(std::size_t stage, std::int64_t block);

// The graph input "input" [batch, in_channels, size, size] with the config's input size.
ValueId add_image_input(LayerBuilder& builder, const StemArch& stem, const ModelConfig& config,
                        std::int64_t batch);
// conv1 (or the deep conv1.0-conv1.6), bn1, act1 and the 3x3 stride-2 maxpool.
ValueId build_stem(LayerBuilder& builder, const StemArch& stem, ValueId input);
// The end of every timm ResNet block: the shortcut of `block_input` (its downsample, if any), the
// sum with `branch` ("<block>.add") and the final ReLU "<block>.<act_name>".
ValueId build_residual(LayerBuilder& builder, const std::string& block, const ShortcutArch& shortcut,
                       ValueId block_input, ValueId branch, std::int64_t stride, const std::string& act_name);
// Global average pool, flatten and the fc classifier; marks the logits as the graph output.
ValueId build_head(LayerBuilder& builder, ValueId x, std::int64_t num_classes);

}  // namespace kiln
