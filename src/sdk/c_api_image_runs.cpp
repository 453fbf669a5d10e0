// The C API's image runs (ABI 1.3): up to a batch of images, encoded or as pixels, under a classifier
// plan's preprocessing; the raw outputs of the whole batch into the caller's host buffers.
#include "sdk/c_api_internal.h"
#include "sdk/image_runs.h"

namespace kiln::capi {

namespace {

using embed::InvalidArgument;

// The caller's context, image array and output buffers, checked before any image is decoded.
struct ImageRunCall {
  embed::SdkContext& context;
  std::vector<embed::BufferView> outputs;
  const char* name;  // the entry point, for messages
};

ImageRunCall image_run_call(kiln_context* context, const void* images, size_t image_count,
                            const kiln_tensor* outputs, size_t output_count, const char* name) {
  ImageRunCall call{checked(context, "context").context, {}, name};
  if (images == nullptr && image_count > 0) throw InvalidArgument("images is NULL");
  call.outputs = buffer_views(outputs, output_count, "output");
  embed::check_image_run(call.context, image_count, call.outputs, name);
  return call;
}

kiln_status context_run_encoded(kiln_context* context, const void* const* images, const size_t* sizes,
                                size_t image_count, const kiln_tensor* outputs, size_t output_count,
                                kiln_error** error) {
  return guard(error, [&] {
    const ImageRunCall call =
        image_run_call(context, images, image_count, outputs, output_count, "context_run_encoded");
    if (sizes == nullptr) throw InvalidArgument("sizes is NULL");
    std::vector<Image> decoded;
    for (size_t i = 0; i < image_count; ++i) {
      const std::string name = cat("image ", i);
      if (images[i] == nullptr) throw InvalidArgument(cat(name, " is NULL"));
      decoded.push_back(
          embed::image_from_bytes({static_cast<const std::uint8_t*>(images[i]), sizes[i]}, name));
    }
    embed::run_images(call.context, decoded, call.outputs, call.name);
  });
}

kiln_status context_run_pixels(kiln_context* context, const kiln_image* const* images, size_t image_count,
                               const kiln_tensor* outputs, size_t output_count, kiln_error** error) {
  return guard(error, [&] {
    const ImageRunCall call =
        image_run_call(context, images, image_count, outputs, output_count, "context_run_pixels");
    std::vector<Image> decoded;
    for (size_t i = 0; i < image_count; ++i) decoded.push_back(image_argument(images[i], cat("image ", i)));
    embed::run_images(call.context, decoded, call.outputs, call.name);
  });
}

}  // namespace

void add_image_run_entries(kiln_api& api) {
  api.context_run_encoded = context_run_encoded;
  api.context_run_pixels = context_run_pixels;
}

}  // namespace kiln::capi
