#include "families/common/resnet_skeleton.h"

#include "core/error.h"

namespace kiln {

namespace {

// ResNet.__init__: the plain stem is one 7x7 stride-2 conv; the deep stem three 3x3 convs, the first
// with stride 2; then a 3x3 stride-2 max pool with padding 1.
constexpr std::int64_t kPlainStemKernel = 7;
constexpr std::int64_t kDeepStemKernel = 3;
constexpr std::int64_t kStemStride = 2;
constexpr std::int64_t kStemPoolKernel = 3;
// downsample_avg pools with a 2x2 window, ceil_mode=True, count_include_pad=False.
constexpr std::int64_t kAvgDownKernel = 2;

// timm's get_padding(kernel, stride, dilation=1).
std::int64_t same_padding(std::int64_t kernel, std::int64_t stride) {
  return ((stride - 1) + (kernel - 1)) / 2;
}

}  // namespace

std::string block_name(std::size_t stage, std::int64_t block) { return cat("layer", stage + 1, ".", block); }

std::int64_t block_stride(std::size_t stage, std::int64_t block) { return stage > 0 && block == 0 ? 2 : 1; }

StemArch infer_stem(const CheckpointReader& reader) {
  StemArch stem;
  stem.deep = reader.has("conv1.0.weight");
  if (stem.deep) {
    // The deep stem is nn.Sequential(conv, bn, act, conv, bn, act, conv): convs at 0, 3 and 6.
    for (const char* key : {"conv1.0.weight", "conv1.3.weight", "conv1.6.weight"}) {
      stem.widths.push_back(reader.shape(key, 4)[0]);
    }
    stem.in_channels = reader.shape("conv1.0.weight")[1];
  } else {
    const Shape& weight = reader.shape("conv1.weight", 4);
    stem.widths.push_back(weight[0]);
    stem.in_channels = weight[1];
  }
  // timm's replace_stem_pool puts a conv where the max pool is; not a variant kiln builds.
  require(!reader.has_prefix("maxpool."),
          "checkpoint keys 'maxpool.*': a stem with a strided conv in place of the ",
          "max pool (replace_stem_pool) is not supported");
  return stem;
}

std::vector<std::int64_t> infer_stage_depths(const CheckpointReader& reader) {
  std::vector<std::int64_t> depths;
  for (std::size_t stage = 0; reader.has_prefix(cat("layer", stage + 1, ".")); ++stage) {
    const std::string prefix = cat("layer", stage + 1, ".");
    const auto blocks = reader.child_indices(prefix);
    require(!blocks.empty(), "checkpoint keys '", prefix, "*': expected blocks '", prefix, "0.*', '", prefix,
            "1.*', ...");
    depths.push_back(static_cast<std::int64_t>(blocks.size()));
  }
  require(!depths.empty(),
          "checkpoint key 'layer1.0.conv1.weight': missing (needed for layer layer1.0.conv1)");
  return depths;
}

ShortcutArch infer_shortcut(const CheckpointReader& reader, const std::string& block) {
  const std::string prefix = block + ".downsample.";
  if (reader.has(prefix + "0.weight")) {
    const Shape& weight = reader.shape(prefix + "0.weight", 4);
    return {ShortcutKind::kConv, weight[2]};
  }
  // downsample.1.weight is the BN after a conv at .0, or the conv after a pool at .0 (avg_down).
  if (reader.has(prefix + "1.weight") && reader.shape(prefix + "1.weight").size() == 4) {
    return {ShortcutKind::kAvgPoolConv, 1};
  }
  require(!reader.has_prefix(prefix), "checkpoint keys '", prefix, "*': expected a conv at ", prefix,
          "0 (then BN) or, after an average pool, at ", prefix, "1 (then BN)");
  return {};
}

std::int64_t infer_num_classes(const CheckpointReader& reader, const ModelConfig& config) {
  const Shape& weight = reader.shape("fc.weight", 2);
  require(weight[0] == config.num_classes, "checkpoint key 'fc.weight': expected ", config.num_classes,
          " classes (num_classes of the config), got shape ", shape_str(weight));
  return weight[0];
}

ValueId add_image_input(LayerBuilder& builder, const StemArch& stem, const ModelConfig& config,
                        std::int64_t batch) {
  require(batch == -1 || batch > 0, "batch size: expected a positive number or -1 (any), got ", batch);
  const std::int64_t size = config.preprocess.input_size;
  return builder.graph().add_input("input", {batch, stem.in_channels, size, size});
}

ValueId build_stem(LayerBuilder& builder, const StemArch& stem, ValueId input) {
  ValueId x = input;
  if (stem.deep) {
    x = builder.conv("conv1.0", x, stem.widths.at(0), conv_attrs(kDeepStemKernel, kStemStride, 1));
    x = builder.batch_norm("conv1.1", x);
    x = builder.relu("conv1.2", x);
    x = builder.conv("conv1.3", x, stem.widths.at(1), conv_attrs(kDeepStemKernel, 1, 1));
    x = builder.batch_norm("conv1.4", x);
    x = builder.relu("conv1.5", x);
    x = builder.conv("conv1.6", x, stem.widths.at(2), conv_attrs(kDeepStemKernel, 1, 1));
  } else {
    x = builder.conv("conv1", x, stem.widths.at(0),
                     conv_attrs(kPlainStemKernel, kStemStride, kPlainStemKernel / 2));
  }
  x = builder.batch_norm("bn1", x);
  x = builder.relu("act1", x);
  return builder.op(OpKind::kMaxPool2d, "maxpool", {x}, pool_attrs(kStemPoolKernel, 2, 1));
}

ValueId build_residual(LayerBuilder& builder, const std::string& block, const ShortcutArch& shortcut,
                       ValueId block_input, ValueId branch, std::int64_t stride,
                       const std::string& act_name) {
  const std::string prefix = block + ".downsample.";
  const std::int64_t out_channels = builder.channels(branch);
  ValueId skip = block_input;
  switch (shortcut.kind) {
    case ShortcutKind::kIdentity:
      require(stride == 1 && builder.channels(block_input) == out_channels, "layer ", block, ": maps ",
              builder.channels(block_input), " channels to ", out_channels, " with stride ", stride,
              " but has no shortcut projection (no '", prefix, "*' keys)");
      break;
    case ShortcutKind::kConv:
      skip = builder.conv(prefix + "0", skip, out_channels,
                          conv_attrs(shortcut.kernel, stride, same_padding(shortcut.kernel, stride)));
      skip = builder.batch_norm(prefix + "1", skip);
      break;
    case ShortcutKind::kAvgPoolConv:
      // downsample_avg uses nn.Identity as the pool when the stride is 1.
      if (stride > 1) {
        skip = builder.op(
            OpKind::kAvgPool2d, prefix + "0", {skip},
            pool_attrs(kAvgDownKernel, stride, 0, /*ceil_mode=*/true, /*count_include_pad=*/false));
      }
      skip = builder.conv(prefix + "1", skip, out_channels, conv_attrs(1, 1, 0));
      skip = builder.batch_norm(prefix + "2", skip);
      break;
  }
  const ValueId sum = builder.op(OpKind::kAdd, block + ".add", {branch, skip}, AddAttrs{});
  return builder.relu(block + "." + act_name, sum);
}

ValueId build_head(LayerBuilder& builder, ValueId x, std::int64_t num_classes) {
  x = builder.op(OpKind::kGlobalAvgPool, "global_pool.pool", {x});
  x = builder.op(OpKind::kFlatten, "global_pool.flatten", {x});
  x = builder.linear("fc", x, num_classes);
  builder.graph().mark_output(x);
  return x;
}

}  // namespace kiln
