#include "tests/families/synthetic_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace kiln::testing {

namespace {

class Writer {
 public:
  explicit Writer(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}

  void random(const std::string& key, Shape shape, float low, float high) {
    Tensor tensor(DType::kF32, std::move(shape));
    for (float& value : tensor.mutable_f32()) value = low + (high - low) * next_unit();
    weights_[key] = std::move(tensor);
  }
  void conv(const std::string& name, std::int64_t out, std::int64_t in_per_group, std::int64_t kernel,
            bool bias = false) {
    random(name + ".weight", {out, in_per_group, kernel, kernel}, -0.1f, 0.1f);
    if (bias) random(name + ".bias", {out}, -0.1f, 0.1f);
  }
  void batch_norm(const std::string& name, std::int64_t channels) {
    random(name + ".weight", {channels}, 0.5f, 1.5f);
    random(name + ".bias", {channels}, -0.1f, 0.1f);
    random(name + ".running_mean", {channels}, -0.1f, 0.1f);
    random(name + ".running_var", {channels}, 0.5f, 1.5f);
    weights_[name + ".num_batches_tracked"] = Tensor(DType::kI64, {});
  }
  void linear(const std::string& name, std::int64_t out, std::int64_t in) {
    random(name + ".weight", {out, in}, -0.1f, 0.1f);
    random(name + ".bias", {out}, -0.1f, 0.1f);
  }
  std::map<std::string, Tensor> release() { return std::move(weights_); }

 private:
  // xorshift64*: fast and deterministic; the values only need to be arbitrary.
  float next_unit() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<float>((state_ * 0x2545F4914F6CDD1Dull) >> 40) / static_cast<float>(1 << 24);
  }

  std::uint64_t state_;
  std::map<std::string, Tensor> weights_;
};

// ResNet.__init__'s stem; returns its output width (inplanes).
std::int64_t write_stem(Writer& w, StemType type, std::int64_t stem_width, std::int64_t in_chans) {
  if (type == StemType::kPlain) {
    w.conv("conv1", 64, in_chans, 7);
    w.batch_norm("bn1", 64);
    return 64;
  }
  const std::int64_t first = type == StemType::kDeepTiered ? 3 * (stem_width / 4) : stem_width;
  const std::int64_t inplanes = stem_width * 2;
  w.conv("conv1.0", first, in_chans, 3);
  w.batch_norm("conv1.1", first);
  w.conv("conv1.3", stem_width, first, 3);
  w.batch_norm("conv1.4", stem_width);
  w.conv("conv1.6", inplanes, stem_width, 3);
  w.batch_norm("bn1", inplanes);
  return inplanes;
}

// make_blocks: a downsample on the first block when the stride or the width changes.
void write_downsample(Writer& w, const std::string& block, bool avg_down, std::int64_t in, std::int64_t out) {
  if (avg_down) {
    w.conv(block + ".downsample.1", out, in, 1);
    w.batch_norm(block + ".downsample.2", out);
  } else {
    w.conv(block + ".downsample.0", out, in, 1);
    w.batch_norm(block + ".downsample.1", out);
  }
}

}  // namespace

std::int64_t make_divisible(double value, std::int64_t divisor, std::int64_t min_value) {
  const auto rounded =
      static_cast<std::int64_t>(value + static_cast<double>(divisor) / 2) / divisor * divisor;
  std::int64_t result = std::max(min_value, rounded);
  if (static_cast<double>(result) < 0.9 * value) result += divisor;
  return result;
}

std::map<std::string, Tensor> resnet_checkpoint(const ResNetSpec& spec, std::uint64_t seed) {
  Writer w(seed);
  std::int64_t inplanes = write_stem(w, spec.stem, spec.stem_width, spec.in_chans);
  const std::int64_t expansion = spec.bottleneck ? 4 : 1;
  for (std::size_t stage = 0; stage < spec.layers.size(); ++stage) {
    const std::int64_t planes = spec.channels[stage];
    const std::int64_t stride = stage == 0 ? 1 : 2;
    for (std::int64_t index = 0; index < spec.layers[stage]; ++index) {
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(index);
      const std::int64_t out = planes * expansion;
      if (spec.bottleneck) {
        const auto width = static_cast<std::int64_t>(std::floor(
                               static_cast<double>(planes) * static_cast<double>(spec.base_width) / 64.0)) *
                           spec.cardinality;
        w.conv(block + ".conv1", width, inplanes, 1);
        w.batch_norm(block + ".bn1", width);
        w.conv(block + ".conv2", width, width / spec.cardinality, 3);
        w.batch_norm(block + ".bn2", width);
        w.conv(block + ".conv3", out, width, 1);
        w.batch_norm(block + ".bn3", out);
      } else {
        w.conv(block + ".conv1", planes, inplanes, 3);
        w.batch_norm(block + ".bn1", planes);
        w.conv(block + ".conv2", out, planes, 3);
        w.batch_norm(block + ".bn2", out);
      }
      if (index == 0 && (stride != 1 || inplanes != out))
        write_downsample(w, block, spec.avg_down, inplanes, out);
      inplanes = out;
    }
  }
  w.linear("fc", spec.num_classes, inplanes);
  return w.release();
}

std::map<std::string, Tensor> resnest_checkpoint(const ResNestSpec& spec, std::uint64_t seed) {
  Writer w(seed);
  std::int64_t inplanes = write_stem(w, spec.stem, spec.stem_width, spec.in_chans);
  for (std::size_t stage = 0; stage < spec.layers.size(); ++stage) {
    const std::int64_t planes = spec.channels[stage];
    const std::int64_t stride = stage == 0 ? 1 : 2;
    for (std::int64_t index = 0; index < spec.layers[stage]; ++index) {
      const std::string block = "layer" + std::to_string(stage + 1) + "." + std::to_string(index);
      const std::int64_t out = planes * 4;
      // ResNestBottleneck: group_width = int(planes * base_width / 64) * cardinality.
      const auto group_width = static_cast<std::int64_t>(static_cast<double>(planes) *
                                                         static_cast<double>(spec.base_width) / 64.0) *
                               spec.cardinality;
      w.conv(block + ".conv1", group_width, inplanes, 1);
      w.batch_norm(block + ".bn1", group_width);
      // SplitAttn(group_width, group_width, groups=cardinality, radix, rd_ratio=0.25, rd_divisor=8).
      const std::int64_t mid = group_width * spec.radix;
      const std::int64_t attn = make_divisible(static_cast<double>(group_width * spec.radix) * 0.25, 8, 32);
      w.conv(block + ".conv2.conv", mid, group_width / (spec.cardinality * spec.radix), 3);
      w.batch_norm(block + ".conv2.bn0", mid);
      w.conv(block + ".conv2.fc1", attn, group_width / spec.cardinality, 1, /*bias=*/true);
      w.batch_norm(block + ".conv2.bn1", attn);
      w.conv(block + ".conv2.fc2", mid, attn / spec.cardinality, 1, /*bias=*/true);
      w.conv(block + ".conv3", out, group_width, 1);
      w.batch_norm(block + ".bn3", out);
      if (index == 0 && (stride != 1 || inplanes != out))
        write_downsample(w, block, spec.avg_down, inplanes, out);
      inplanes = out;
    }
  }
  w.linear("fc", spec.num_classes, inplanes);
  return w.release();
}

std::int64_t float_parameter_count(const std::map<std::string, Tensor>& weights) {
  std::int64_t count = 0;
  for (const auto& [key, tensor] : weights) {
    if (dtype_is_float(tensor.dtype())) count += tensor.numel();
  }
  return count;
}

namespace {

// One row of efficientnet_b0's arch_def: block type, repeats, depthwise kernel, expansion, width.
struct EfficientNetStage {
  bool depthwise_separable;
  std::int64_t repeats, kernel, expansion, channels;
};

constexpr EfficientNetStage kEfficientNetB0Stages[] = {
    {true, 1, 3, 1, 16},   {false, 2, 3, 6, 24},  {false, 2, 5, 6, 40},  {false, 3, 3, 6, 80},
    {false, 3, 5, 6, 112}, {false, 4, 5, 6, 192}, {false, 1, 3, 6, 320},
};

}  // namespace

std::map<std::string, Tensor> efficientnet_checkpoint(const EfficientNetSpec& spec, std::uint64_t seed) {
  Writer w(seed);
  const auto round_channels = [&](std::int64_t channels) {
    return make_divisible(static_cast<double>(channels) * spec.channel_multiplier, 8, 8);
  };
  std::int64_t in = round_channels(32);
  w.conv("conv_stem", in, spec.in_chans, 3);
  w.batch_norm("bn1", in);
  for (std::size_t s = 0; s < std::size(kEfficientNetB0Stages); ++s) {
    const EfficientNetStage& stage = kEfficientNetB0Stages[s];
    const auto repeats =
        static_cast<std::int64_t>(std::ceil(static_cast<double>(stage.repeats) * spec.depth_multiplier));
    const std::int64_t out = round_channels(stage.channels);
    for (std::int64_t b = 0; b < repeats; ++b) {
      const std::string block = "blocks." + std::to_string(s) + "." + std::to_string(b);
      const std::int64_t mid =
          stage.depthwise_separable ? in : make_divisible(static_cast<double>(in * stage.expansion), 8, 8);
      // The squeeze-excite width is a quarter of the block's input width, as timm rounds it.
      const auto reduced = std::max<std::int64_t>(1, std::llround(static_cast<double>(in) * 0.25));
      if (!stage.depthwise_separable) {
        w.conv(block + ".conv_pw", mid, in, 1);
        w.batch_norm(block + ".bn1", mid);
      }
      w.conv(block + ".conv_dw", mid, 1, stage.kernel);
      w.batch_norm(block + (stage.depthwise_separable ? ".bn1" : ".bn2"), mid);
      if (spec.squeeze_excite) {
        w.conv(block + ".se.conv_reduce", reduced, mid, 1, true);
        w.conv(block + ".se.conv_expand", mid, reduced, 1, true);
      }
      w.conv(block + (stage.depthwise_separable ? ".conv_pw" : ".conv_pwl"), out, mid, 1);
      w.batch_norm(block + (stage.depthwise_separable ? ".bn2" : ".bn3"), out);
      in = out;
    }
  }
  const std::int64_t head = round_channels(1280);
  w.conv("conv_head", head, in, 1);
  w.batch_norm("bn2", head);
  w.linear("classifier", spec.num_classes, head);
  return w.release();
}

}  // namespace kiln::testing
