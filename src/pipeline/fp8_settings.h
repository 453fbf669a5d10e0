// The FP8 or int8 settings of a build: options first, then the manifest's [quantization] section, then
// kiln's defaults. Text fields are spelled as `kiln build` takes them, and errors name those flags.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include "builder/build_plan.h"
#include "io/timm_config.h"
#include "manifest/manifest.h"
#include "quant/calibration_images.h"

namespace kiln::pipeline {

struct Fp8Options {
  std::optional<std::string> recipe;      // all | nose | nose-L1 | auto | a pattern; default: the manifest's
  std::optional<std::string> calib_data;  // calibration images: a folder or webdataset shards
  std::optional<std::size_t> calib_images;  // default: the manifest's calibration_images, else 500
  std::size_t calib_every = 4;              // calibrate on every K-th image of the sample
  std::optional<std::string> calib_method;  // max | percentile | entropy | mse; default: the manifest's
  // Activation scales: read from this file when it exists (no calibration runs), else written to it.
  std::optional<std::filesystem::path> calib_cache;
  double percentile = 99.99;
  // Precision of the layers not quantized: fp16 | fp32; default fp16 for fp8 (the GPU's), fp32 for int8
  // (the CPU's, which emulates fp16).
  std::optional<std::string> fallback;
  std::string auto_target = "logit-error=0.05";
  std::size_t sensitivity_images = 16;
  bool strict = false;  // stop at the first unreadable calibration image
  bool quantize_residuals = false;  // fp8: the residual stream held as E4M3 codes (quant/fp8_rewrite.h)
  // int8: per-channel | per-tensor scales for the inputs only depthwise convolutions read
  // (quant/depthwise_inputs.h); default per-channel.
  std::optional<std::string> depthwise_input_scales;
};

struct Fp8Quantization {
  Quantizer quantizer;
  Precision fallback = Precision::kF16;
};

// Checks the settings against `graph` (a bad recipe fails before any image loads) and loads the
// calibration images the quantizer will run on. `precision`: fp8 or int8.
Fp8Quantization make_fp8_quantization(const Fp8Options& options, Precision precision,
                                      const Manifest& manifest, const Graph& graph,
                                      const PreprocessConfig& preprocess);
// The same with calibration images made into inputs by `to_input` (a detector's letterbox).
Fp8Quantization make_fp8_quantization(const Fp8Options& options, Precision precision,
                                      const Manifest& manifest, const Graph& graph,
                                      const ImageToInput& to_input);

// Writes an fp8 plan's activation scales to options.calib_cache when one is named and does not exist yet.
void keep_calibration_cache(const Fp8Options& options, const Plan& plan);

}  // namespace kiln::pipeline
