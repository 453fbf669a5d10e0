#include "sdk/classify.h"

#include <algorithm>
#include <array>

#include "eval/top_k.h"
#include "pipeline/input_batch.h"
#include "sdk/image_runs.h"

namespace kiln::embed {

namespace {

struct LayoutInfo {
  std::size_t channels;
  std::array<std::size_t, 3> rgb;  // where red, green and blue sit in a pixel
};

LayoutInfo layout_info(PixelLayout layout) {
  switch (layout) {
    case PixelLayout::kRgb8:
      return {3, {0, 1, 2}};
    case PixelLayout::kBgr8:
      return {3, {2, 1, 0}};
    case PixelLayout::kRgba8:
      return {4, {0, 1, 2}};
    case PixelLayout::kBgra8:
      return {4, {2, 1, 0}};
    case PixelLayout::kGray8:
      return {1, {0, 0, 0}};
  }
  throw InvalidArgument("unknown pixel layout");
}

}  // namespace

Image image_from_pixels(const PixelsView& view, const std::string& name) {
  if (view.pixels == nullptr) throw InvalidArgument(cat(name, ": the pixel pointer is NULL"));
  if (view.width < 1 || view.height < 1) {
    throw InvalidArgument(cat(name, ": expected a positive size, got ", view.width, "x", view.height));
  }
  const LayoutInfo layout = layout_info(view.layout);
  const std::size_t row_bytes = static_cast<std::size_t>(view.width) * layout.channels;
  const std::size_t stride = view.row_stride == 0 ? row_bytes : view.row_stride;
  if (stride < row_bytes) {
    throw InvalidArgument(cat(name, ": a row stride of ", stride, " bytes is shorter than a row of ",
                              view.width, " pixels (", row_bytes, " bytes)"));
  }
  Image image{view.width, view.height, {}};
  image.rgb.resize(static_cast<std::size_t>(view.width * view.height) * 3);
  for (std::int64_t y = 0; y < view.height; ++y) {
    const std::uint8_t* row = view.pixels + static_cast<std::size_t>(y) * stride;
    std::uint8_t* out = image.rgb.data() + static_cast<std::size_t>(y * view.width) * 3;
    if (view.layout == PixelLayout::kRgb8) {  // already the layout kept: a row is one copy
      std::copy_n(row, row_bytes, out);
      continue;
    }
    for (std::int64_t x = 0; x < view.width; ++x) {
      const std::uint8_t* pixel = row + static_cast<std::size_t>(x) * layout.channels;
      for (std::size_t c = 0; c < 3; ++c) out[static_cast<std::size_t>(x) * 3 + c] = pixel[layout.rgb[c]];
    }
  }
  return image;
}

Image image_from_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) throw InvalidArgument(cat(name, ": no bytes"));
  return decode_image_bytes(bytes, name);
}

std::vector<ClassScore> classify(SdkContext& context, const Image& image, std::size_t top_k) {
  const SdkEngine& engine = context.engine();
  const Plan& plan = engine.plan();
  require_classifier_engine(engine, "classify");
  const std::int64_t size = plan.config.preprocess.input_size;
  const Shape image_shape = {engine.batch(), 3, size, size};
  require(engine.inputs().size() == 1 && engine.inputs()[0].shape == image_shape &&
              !engine.outputs().empty() && engine.outputs()[0].shape.size() == 2,
          "classify needs a classifier plan: one ", shape_str(image_shape),
          " input and [N, classes] logits, ", "this plan (", plan.info.family, ") has ",
          engine.inputs().size(), " input(s) of shape ", shape_str(engine.inputs().at(0).shape));
  const std::vector<Tensor> outputs =
      context.run_eval_transform(std::span(&image, 1), plan.config.preprocess);
  const Tensor& logits = outputs.at(0);
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  const std::vector<std::string> names = pipeline::class_names(plan.config);
  std::vector<ClassScore> scores;
  for (const RankedClass& ranked : top_k_classes(logits.f32().subspan(0, classes), top_k)) {
    const auto index = static_cast<std::size_t>(ranked.index);
    scores.push_back({ranked.index, ranked.probability, ranked.logit,
                      index < names.size() ? names[index] : cat("class ", index)});
  }
  return scores;
}

}  // namespace kiln::embed
