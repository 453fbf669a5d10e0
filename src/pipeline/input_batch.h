// Turning input files into what a model runs on: images and .npy batches into one classifier batch,
// images for a detector, and the class names to report.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/image.h"
#include "io/timm_config.h"
#include "pipeline/finite_inputs.h"

namespace kiln::pipeline {

struct InputBatch {
  Tensor tensor;                    // [N, 3, H, W] f32
  std::vector<std::string> labels;  // one per image: the file, with "[i]" for rows of a .npy batch
};

// Images are decoded and preprocessed as timm would; .npy files are NCHW f32 batches used as given, their
// NaN and Inf values refused unless `nonfinite` allows them.
InputBatch load_inputs(const std::vector<std::filesystem::path>& files, const PreprocessConfig& preprocess,
                       NonFiniteInputs nonfinite);

// Every file decoded as a photo and not yet preprocessed, for a run that preprocesses them where the model
// runs (the library: on the device on cuda); none when a file is a .npy batch (load_inputs takes those).
std::optional<std::vector<Image>> decode_photos(const std::vector<std::filesystem::path>& files);

// The class names to print: the config's labels, ImageNet's for a 1000-class model, else none.
std::vector<std::string> class_names(const ModelConfig& config);

}  // namespace kiln::pipeline
