// timm's ResNet with its BasicBlock or Bottleneck (timm/models/resnet.py): resnet18/34/50/101/152 and the
// c/d/s/t stem and downsample variants, ResNeXt (grouped 3x3) and wide ResNets. The architecture is read
// off the checkpoint's key names and shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "families/common/resnet_skeleton.h"
#include "graph/graph.h"
#include "io/timm_config.h"

namespace kiln {

struct ResNetStageArch {
  std::int64_t depth = 0;
  std::int64_t in_channels = 0;  // of the first block
  std::int64_t first_width = 0;  // conv1 outputs
  std::int64_t width = 0;        // conv2 outputs (Bottleneck; equals out_channels for BasicBlock)
  std::int64_t out_channels = 0;
  std::int64_t cardinality = 1;  // groups of the Bottleneck's 3x3 conv2
  ShortcutArch shortcut;         // of the first block
};

struct ResNetArch {
  StemArch stem;
  bool bottleneck = true;  // Bottleneck (conv1 1x1, conv2 3x3, conv3 1x1) or BasicBlock (two 3x3)
  std::vector<ResNetStageArch> stages;
  std::int64_t num_classes = 0;
};

ResNetArch infer_resnet_arch(const std::map<std::string, Tensor>& weights, const ModelConfig& config);
Graph build_timm_resnet(const std::map<std::string, Tensor>& weights, const ModelConfig& config,
                        std::int64_t batch);

}  // namespace kiln
