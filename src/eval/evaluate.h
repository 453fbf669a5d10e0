// Evaluating an engine on a dataset: accuracy against labels, agreement with a reference engine
// (normally the fp32 build of the same checkpoint), a NaN/Inf scan over every image and over the stress
// inputs, and optionally per-layer errors against the reference. `kiln eval` prints and saves the
// result; studies call evaluate() directly.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "eval/accuracy_statistics.h"
#include "eval/layer_errors.h"
#include "eval/metrics.h"
#include "runtime/engine.h"

namespace kiln {

// Reference logits by dataset index. A study comparing many plans with one reference over one dataset
// passes the same cache to every evaluate() call: the first fills it, later calls run the reference only
// on images not in it. A cache belongs to one reference engine and one dataset.
struct ReferenceLogitsCache {
  std::map<std::size_t, std::vector<float>> logits;
};

struct EvalOptions {
  bool strict = false;          // a bad image is fatal instead of skipped
  bool progress = false;        // draw a progress line on stderr
  std::ostream* log = nullptr;  // where skipped images are reported; nullptr: std::cerr
  bool stress = true;           // run the stress inputs (stress_inputs.h)
  // Per-layer errors against the reference over the first N evaluated images (0: none). Needs a
  // reference; layers are compared at batch 1 on each engine's backend.
  std::size_t per_layer_images = 0;
  // Used with a reference: cached logits stand in for running the reference (see above).
  ReferenceLogitsCache* reference_cache = nullptr;
};

struct SkippedSample {
  std::string name;
  std::string reason;
};

struct StressResult {
  std::string name;
  std::string description;
  NonFiniteCount non_finite;                           // in the engine's logits
  std::int64_t top1 = -1;                              // -1 when every logit is NaN
  std::optional<NonFiniteCount> reference_non_finite;  // with a reference
  std::optional<double> relative_error;                // ||y - ref|| / ||ref|| with a reference
  std::optional<bool> top1_agrees;                     // with a reference
  std::optional<NonFiniteLayers> layers;               // with per-layer: where non-finite values start
};

// One evaluated image's classes, kept so that engines evaluated on the same images pair up image by
// image (a study compares each variant with its baseline on exactly these).
struct ImageOutcome {
  std::size_t index = 0;             // into the dataset
  std::string name;                  // the dataset's name for it
  std::int64_t top1 = -1;            // the engine's top-1 class
  std::int64_t label = -1;           // -1 when the dataset is unlabelled
  std::int64_t reference_top1 = -1;  // -1 without a reference
};

struct EvalResult {
  std::size_t images_requested = 0;
  std::size_t images_evaluated = 0;
  std::vector<SkippedSample> skipped;
  std::int64_t num_classes = 0;
  std::optional<LabelMetrics> labels;            // when the dataset is labelled
  std::optional<LabelMetrics> reference_labels;  // the reference's accuracy, labelled and with a reference
  std::optional<ReferenceMetrics> reference;     // with a reference
  NonFiniteCount non_finite;                     // over every evaluated image's logits
  NonFiniteCount reference_non_finite;
  std::size_t images_with_non_finite = 0;
  std::vector<std::string> non_finite_images;  // the first few such images, by name
  std::vector<StressResult> stress;            // empty unless options.stress
  std::optional<LayerErrorReport> per_layer;
  std::vector<ImageOutcome> per_image;  // every evaluated image, in evaluation order
};

// Evaluates `engine` on dataset images `indices` (in that order), batching at the engine's batch size
// (a last partial batch is padded and the padding dropped). `reference`, when given, must take the
// same input size and give as many classes; it runs at its own batch size. Images are loaded with
// the engine's plan's preprocessing; bad ones are skipped and listed unless options.strict. Labels are
// checked against the model's number of classes first. Fails when no image could be evaluated.
EvalResult evaluate(Engine& engine, Engine* reference, const Dataset& dataset,
                    std::span<const std::size_t> indices, const EvalOptions& options);

// Top-1 against the labels, each image's reference result paired with the plan's (the reference the
// baseline, the plan the variant: paired_drop_interval() gives reference minus plan); nothing unless the
// dataset is labelled and a reference ran.
std::optional<PairedCounts> top1_pairs(const EvalResult& result);

struct EvalJsonOptions {
  // One entry per evaluated image. Off by default: a study's 2000 images would bury the summary
  // figures, and the counts in the summary already give every accuracy and its interval.
  bool per_image = false;
};

// Everything in `result`, for reports and scripts. Non-finite numbers are written as null.
nlohmann::json to_json(const EvalResult& result, const EvalJsonOptions& options = {});

}  // namespace kiln
