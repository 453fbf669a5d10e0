// Reading many images of a dataset where one bad file should not end a long run: each image that
// cannot be read or decoded is reported ("skipped NAME: REASON") and passed over, unless strict.
#pragma once

#include <cstddef>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "core/progress.h"
#include "core/tensor.h"
#include "data/dataset.h"
#include "io/image.h"
#include "io/timm_config.h"

namespace kiln {

struct SkippedImage {
  std::size_t index = 0;
  std::string reason;  // the error, which names the sample
};

using InputCallback = std::function<void(std::size_t index, const Tensor& input)>;
using ImageCallback = std::function<void(std::size_t index, const Image& image)>;

// Loads and preprocesses dataset images `indices` in order, calling `callback` with each [3, S, S]
// input. A bad image is written to `log` as "skipped NAME: REASON", added to `skipped` when given,
// and passed over; with `strict` its error is thrown instead. `progress`, when given, advances once
// per image and is finished at the end. Ends by writing "N of M images skipped" to `log`. Returns the
// number skipped. Errors thrown by `callback` are not caught.
std::size_t for_each_image(const Dataset& dataset, std::span<const std::size_t> indices,
                           const PreprocessConfig& preprocess, const InputCallback& callback, bool strict,
                           Progress* progress, std::ostream& log = std::cerr,
                           std::vector<SkippedImage>* skipped = nullptr);

// The same with the decoded images, not preprocessed.
std::size_t for_each_decoded_image(const Dataset& dataset, std::span<const std::size_t> indices,
                                   const ImageCallback& callback, bool strict, Progress* progress,
                                   std::ostream& log = std::cerr,
                                   std::vector<SkippedImage>* skipped = nullptr);

}  // namespace kiln
