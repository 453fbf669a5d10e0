#include "data/image_loop.h"

#include <optional>

#include "core/error.h"

namespace kiln {

namespace {

// `load(index)` may fail with kiln::Error, which skips the image; `use` is the caller's callback.
template <typename Load, typename Use>
std::size_t loop(std::span<const std::size_t> indices, Load&& load, Use&& use, bool strict,
                 Progress* progress, std::ostream& log, std::vector<SkippedImage>* skipped) {
  std::size_t skipped_count = 0;
  for (const std::size_t index : indices) {
    std::optional<decltype(load(index))> item;
    try {
      item.emplace(load(index));
    } catch (const Error& error) {
      if (strict) throw;
      if (progress != nullptr) progress->clear();
      log << "skipped " << error.what() << "\n";
      if (skipped != nullptr) skipped->push_back({index, error.what()});
      ++skipped_count;
    }
    if (item) use(index, *item);
    if (progress != nullptr) progress->advance();
  }
  if (progress != nullptr) progress->finish();
  log << skipped_count << " of " << indices.size() << " images skipped\n";
  return skipped_count;
}

}  // namespace

std::size_t for_each_image(const Dataset& dataset, std::span<const std::size_t> indices,
                           const PreprocessConfig& preprocess, const InputCallback& callback, bool strict,
                           Progress* progress, std::ostream& log, std::vector<SkippedImage>* skipped) {
  return loop(
      indices, [&](std::size_t index) { return preprocess_image(dataset.load(index), preprocess); }, callback,
      strict, progress, log, skipped);
}

std::size_t for_each_decoded_image(const Dataset& dataset, std::span<const std::size_t> indices,
                                   const ImageCallback& callback, bool strict, Progress* progress,
                                   std::ostream& log, std::vector<SkippedImage>* skipped) {
  return loop(
      indices, [&](std::size_t index) { return dataset.load(index); }, callback, strict, progress, log,
      skipped);
}

}  // namespace kiln
