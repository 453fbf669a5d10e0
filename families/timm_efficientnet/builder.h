// timm's EfficientNet (timm/models/efficientnet.py with the blocks of _efficientnet_blocks.py):
// efficientnet_b0 .. b8 and their width / depth variants. The stem is a 3x3 stride-2 conv_stem + bn1 +
// SiLU; seven stages of blocks.S.I, the first made of depthwise-separable blocks (conv_dw, bn1, SE,
// conv_pw, bn2), the others of inverted residuals (conv_pw, bn1, conv_dw, bn2, SE, conv_pwl, bn3); then
// conv_head + bn2 + SiLU, global average pooling and the classifier. Widths, depths, kernel sizes and
// squeeze-excite widths are read off the checkpoint's key names and shapes; the stage strides are
// EfficientNet's (1, 2, 2, 2, 1, 2, 1) and padding is symmetric (k // 2), as timm's non-"tf_" models use.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "io/timm_config.h"

namespace kiln {

enum class EfficientNetBlockKind {
  kDepthwiseSeparable,  // conv_dw, bn1 (+SiLU), se, conv_pw, bn2
  kInvertedResidual,    // conv_pw, bn1 (+SiLU), conv_dw, bn2 (+SiLU), se, conv_pwl, bn3
};

struct EfficientNetBlockArch {
  EfficientNetBlockKind kind = EfficientNetBlockKind::kInvertedResidual;
  std::int64_t in_channels = 0;
  std::int64_t mid_channels = 0;  // depthwise conv channels (in_channels for a depthwise-separable block)
  std::int64_t out_channels = 0;
  std::int64_t kernel = 3;  // depthwise kernel
  std::int64_t stride = 1;
  std::int64_t se_channels = 0;  // squeeze-excite reduction width; 0: the block has none
  bool skip = false;             // residual: stride 1 and in_channels == out_channels
};

struct EfficientNetArch {
  std::int64_t in_channels = 3;
  std::int64_t stem_channels = 0;
  std::vector<std::vector<EfficientNetBlockArch>> stages;
  std::int64_t head_channels = 0;
  std::int64_t num_classes = 0;
};

EfficientNetArch infer_efficientnet_arch(const std::map<std::string, Tensor>& weights,
                                         const ModelConfig& config);
Graph build_timm_efficientnet(const std::map<std::string, Tensor>& weights, const ModelConfig& config,
                              std::int64_t batch);

}  // namespace kiln
