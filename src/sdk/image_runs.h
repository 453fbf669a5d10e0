// Runs that start from images, for library callers: up to a batch of decoded images under a classifier
// plan's preprocessing (timm's eval transform, as classify does), the graph's raw outputs for the whole
// batch back in the caller's host buffers. On cuda the images are preprocessed on the device.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "io/image.h"
#include "sdk/sdk_engine.h"

namespace kiln::embed {

// Fails with InvalidArgument naming `call` when the engine runs a detector plan: image runs and
// classification need a classifier plan.
void require_classifier_engine(const SdkEngine& engine, std::string_view call);

// What a run of `image_count` images into `outputs` needs, checked before any image is decoded: a
// classifier plan, 1 to the engine's batch images, host buffers matching the engine's outputs.
void check_image_run(const SdkContext& context, std::size_t image_count, std::span<const BufferView> outputs,
                     std::string_view call);

// Image i fills batch slot i and the slots past the images are zeros; the outputs of the whole batch are
// written into `outputs`. Checks as check_image_run does.
void run_images(SdkContext& context, std::span<const Image> images, std::span<const BufferView> outputs,
                std::string_view call);

}  // namespace kiln::embed
