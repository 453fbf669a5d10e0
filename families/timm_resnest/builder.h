// timm's ResNeSt (timm/models/resnest.py): the ResNet class of timm/models/resnet.py with
// ResNestBottleneck blocks, whose 3x3 conv is a split-attention conv (timm/layers/split_attn.py). The
// architecture is read off the checkpoint's key names and shapes; only where the average pool of a
// strided block sits (avd_first), which has no parameters, comes from the config's architecture name.
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

struct ResNestStageArch {
  std::int64_t depth = 0;
  std::int64_t in_channels = 0;  // of the first block
  std::int64_t width = 0;        // group_width: conv1 outputs, split-attention inputs
  std::int64_t split_width = 0;  // split-attention outputs (conv3 inputs); timm: == width
  std::int64_t radix = 2;
  std::int64_t cardinality = 1;
  std::int64_t attention_width = 0;  // fc1 outputs
  std::int64_t out_channels = 0;
  ShortcutArch shortcut;  // of the first block
};

struct ResNestArch {
  StemArch stem;
  std::vector<ResNestStageArch> stages;
  // Where a strided block pools (timm: avd=True for every ResNeSt): before the 3x3 conv when
  // true, after it otherwise; the 3x3 conv then has stride 1.
  bool avd_first = false;
  std::int64_t num_classes = 0;
};

ResNestArch infer_resnest_arch(const std::map<std::string, Tensor>& weights, const ModelConfig& config);
Graph build_timm_resnest(const std::map<std::string, Tensor>& weights, const ModelConfig& config,
                         std::int64_t batch);

}  // namespace kiln
