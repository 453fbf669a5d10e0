// The C API's task calls: classification and detection.
#include "sdk/c_api_internal.h"

namespace kiln::capi {

namespace {

using embed::InvalidArgument;

constexpr std::size_t kDefaultTopK = 5;
constexpr float kDefaultMinScore = 0.25f;

std::span<const std::uint8_t> byte_argument(const void* bytes, size_t size) {
  if (bytes == nullptr) throw InvalidArgument("bytes is NULL");
  return {static_cast<const std::uint8_t*>(bytes), size};
}

// The caller's context and options, checked before the image is decoded.
struct ClassifyCall {
  kiln::embed::SdkContext& context;
  std::size_t top_k;
};

ClassifyCall classify_call(kiln_context* context, const kiln_classify_options* options,
                           kiln_classifications** result) {
  checked(result, "result") = nullptr;
  kiln_classify_options given =
      read_options(options, defaults_of<kiln_classify_options>(), "classify options");
  return {checked(context, "context").context, given.top_k == 0 ? kDefaultTopK : given.top_k};
}

void classify_into(const ClassifyCall& call, const Image& image, kiln_classifications** result) {
  auto made = std::make_unique<kiln_classifications>();
  made->scores = embed::classify(call.context, image, call.top_k);
  for (const embed::ClassScore& score : made->scores) {
    made->entries.push_back({score.index, score.probability, score.logit, score.label.c_str()});
  }
  *result = made.release();
}

kiln_status classify_encoded(kiln_context* context, const void* bytes, size_t size,
                             const kiln_classify_options* options, kiln_classifications** result,
                             kiln_error** error) {
  return guard(error, [&] {
    const ClassifyCall call = classify_call(context, options, result);
    classify_into(call, embed::image_from_bytes(byte_argument(bytes, size), "image"), result);
  });
}

kiln_status classify_pixels(kiln_context* context, const kiln_image* image,
                            const kiln_classify_options* options, kiln_classifications** result,
                            kiln_error** error) {
  return guard(error, [&] {
    const ClassifyCall call = classify_call(context, options, result);
    classify_into(call, image_argument(image), result);
  });
}

size_t classifications_count(const kiln_classifications* result) {
  return result ? result->entries.size() : 0;
}

const kiln_class_score* classifications_at(const kiln_classifications* result, size_t index) {
  return result && index < result->entries.size() ? &result->entries[index] : nullptr;
}

void classifications_free(kiln_classifications* result) { delete result; }

kiln_status detector_create(const kiln_detector_source* source, const kiln_engine_options* options,
                            kiln_detector** detector, kiln_error** error) {
  return guard(error, [&] {
    checked(detector, "detector") = nullptr;
    const kiln_detector_source given =
        read_options(&checked(source, "source"), defaults_of<kiln_detector_source>(), "source");
    embed::DetectorSource made{checked_text(given.family, "source family"),
                               checked_text(given.checkpoint, "source checkpoint"), std::nullopt};
    if (given.config != nullptr) made.config = given.config;
    for (const auto& path : {std::optional(made.checkpoint), made.config}) {
      std::error_code missing;
      if (path && !std::filesystem::exists(*path, missing))
        throw embed::NotFound(cat(path->string(), ": no such file"));
    }
    *detector = new kiln_detector{embed::SdkDetector(made, engine_settings(options))};
  });
}

kiln_status detector_create_from_plan(const kiln_plan* plan, const kiln_engine_options* options,
                                      kiln_detector** detector, kiln_error** error) {
  return guard(error, [&] {
    checked(detector, "detector") = nullptr;
    const kiln_plan& given = checked(plan, "plan");
    *detector = new kiln_detector{embed::SdkDetector(given.plan, given.name, engine_settings(options))};
  });
}

void detector_free(kiln_detector* detector) { delete detector; }

size_t detector_class_count(const kiln_detector* detector) {
  return detector ? detector->detector.class_names().size() : 0;
}

// The caller's detector and options, checked before the image is decoded.
struct DetectCall {
  kiln::embed::SdkDetector& detector;
  float min_score;
};

DetectCall detect_call(kiln_detector* detector, const kiln_detect_options* options,
                       kiln_detections** result) {
  checked(result, "result") = nullptr;
  kiln_detect_options defaults = defaults_of<kiln_detect_options>();
  defaults.min_score = kDefaultMinScore;
  const kiln_detect_options given = read_options(options, defaults, "detect options");
  return {checked(detector, "detector").detector, given.min_score};
}

void detect_into(const DetectCall& call, const Image& image, kiln_detections** result) {
  auto made = std::make_unique<kiln_detections>();
  made->found = call.detector.detect(image, call.min_score);
  for (const embed::NamedDetection& d : made->found) {
    made->entries.push_back({d.x1, d.y1, d.x2, d.y2, d.score, d.class_index, d.class_name.c_str()});
  }
  *result = made.release();
}

kiln_status detect_encoded(kiln_detector* detector, const void* bytes, size_t size,
                           const kiln_detect_options* options, kiln_detections** result, kiln_error** error) {
  return guard(error, [&] {
    const DetectCall call = detect_call(detector, options, result);
    detect_into(call, embed::image_from_bytes(byte_argument(bytes, size), "image"), result);
  });
}

kiln_status detect_pixels(kiln_detector* detector, const kiln_image* image,
                          const kiln_detect_options* options, kiln_detections** result, kiln_error** error) {
  return guard(error, [&] {
    const DetectCall call = detect_call(detector, options, result);
    detect_into(call, image_argument(image), result);
  });
}

size_t detections_count(const kiln_detections* result) { return result ? result->entries.size() : 0; }

const kiln_detection* detections_at(const kiln_detections* result, size_t index) {
  return result && index < result->entries.size() ? &result->entries[index] : nullptr;
}

void detections_free(kiln_detections* result) { delete result; }

embed::PixelLayout pixel_layout(kiln_pixel_layout layout, const std::string& name) {
  switch (layout) {
    case KILN_PIXELS_RGB8:
      return embed::PixelLayout::kRgb8;
    case KILN_PIXELS_BGR8:
      return embed::PixelLayout::kBgr8;
    case KILN_PIXELS_RGBA8:
      return embed::PixelLayout::kRgba8;
    case KILN_PIXELS_BGRA8:
      return embed::PixelLayout::kBgra8;
    case KILN_PIXELS_GRAY8:
      return embed::PixelLayout::kGray8;
  }
  throw InvalidArgument(cat(name, ": unknown pixel layout ", static_cast<int>(layout)));
}

}  // namespace

Image image_argument(const kiln_image* image, const std::string& name) {
  const kiln_image given =
      read_options(&checked(image, name.c_str()), defaults_of<kiln_image>(), name.c_str());
  return embed::image_from_pixels(
      {given.pixels, given.width, given.height, given.row_stride, pixel_layout(given.layout, name)}, name);
}

void add_task_entries(kiln_api& api) {
  api.classify_encoded = classify_encoded;
  api.classify_pixels = classify_pixels;
  api.classifications_count = classifications_count;
  api.classifications_at = classifications_at;
  api.classifications_free = classifications_free;
  api.detector_create = detector_create;
  api.detector_free = detector_free;
  api.detector_class_count = detector_class_count;
  api.detect_encoded = detect_encoded;
  api.detect_pixels = detect_pixels;
  api.detections_count = detections_count;
  api.detections_at = detections_at;
  api.detections_free = detections_free;
  api.detector_create_from_plan = detector_create_from_plan;
}

}  // namespace kiln::capi
