#include "eval/evaluate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>

#include "core/error.h"
#include "core/progress.h"
#include "data/image_loop.h"
#include "eval/stress_inputs.h"

namespace kiln {

namespace {

constexpr std::size_t kNonFiniteImagesListed = 20;

std::int64_t class_count(const Engine& engine) {
  const Graph& graph = engine.plan().graph;
  require(!graph.outputs().empty(), "the plan has no outputs");
  const Shape& logits = graph.value(graph.outputs().front()).shape;
  require(logits.size() == 2 && logits[1] > 0,
          "expected the plan's first output to be logits [N, classes], got ", shape_str(logits));
  return logits[1];
}

// Runs [3, S, S] inputs through `engine` in batches of its size, padding the last batch with zeros, and
// returns the logits [inputs.size(), classes].
Tensor run_rows(Engine& engine, const std::vector<Tensor>& inputs, std::int64_t classes) {
  const auto count = static_cast<std::int64_t>(inputs.size());
  Tensor logits(DType::kF32, {count, classes});
  if (inputs.empty()) return logits;
  const Shape& image = inputs.front().shape();
  const std::int64_t batch = engine.batch();
  const auto image_bytes = inputs.front().nbytes();
  const auto row_bytes = static_cast<std::size_t>(classes) * sizeof(float);
  for (std::int64_t start = 0; start < count; start += batch) {
    Tensor input(DType::kF32, {batch, image[0], image[1], image[2]});
    const std::int64_t rows = std::min(batch, count - start);
    for (std::int64_t r = 0; r < rows; ++r) {
      std::memcpy(input.mutable_bytes() + static_cast<std::size_t>(r) * image_bytes,
                  inputs[static_cast<std::size_t>(start + r)].bytes(), image_bytes);
    }
    const Tensor output = engine.run(input).at(0);
    require(output.rank() == 2 && output.dim(0) == batch && output.dim(1) == classes,
            "the engine gave logits of ", shape_str(output.shape()), ", expected [", batch, ", ", classes,
            "]");
    std::memcpy(logits.mutable_bytes() + static_cast<std::size_t>(start) * row_bytes, output.bytes(),
                static_cast<std::size_t>(rows) * row_bytes);
  }
  return logits;
}

std::span<const float> row(const Tensor& logits, std::size_t r) {
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  return logits.f32().subspan(r * classes, classes);
}

Tensor as_batch_of_one(const Tensor& image) {
  return image.reshaped({1, image.dim(0), image.dim(1), image.dim(2)});
}

std::vector<StressResult> run_stress(Engine& engine, Engine* reference, std::int64_t classes, LayerTap* tap) {
  const auto inputs = make_stress_inputs(engine.plan().config.preprocess);
  std::vector<Tensor> tensors;
  for (const auto& input : inputs) tensors.push_back(input.input);
  const Tensor logits = run_rows(engine, tensors, classes);
  Tensor reference_logits;
  if (reference != nullptr) reference_logits = run_rows(*reference, tensors, classes);
  std::vector<StressResult> results;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    StressResult result;
    result.name = inputs[i].name;
    result.description = inputs[i].description;
    const auto y = row(logits, i);
    result.non_finite = count_non_finite(y);
    result.top1 = top1_class(y);
    if (std::isnan(y[static_cast<std::size_t>(result.top1)])) result.top1 = -1;
    if (reference != nullptr) {
      const auto ref = row(reference_logits, i);
      result.reference_non_finite = count_non_finite(ref);
      result.relative_error = relative_l2_error(y, ref);
      result.top1_agrees = top1_class(y) == top1_class(ref);
    }
    if (tap != nullptr)
      result.layers = find_non_finite_layers(*tap, tap->run(as_batch_of_one(inputs[i].input)));
    results.push_back(std::move(result));
  }
  return results;
}

// A reference must take the plan's inputs and give its number of classes.
void check_reference_fits(const Engine& reference, const PreprocessConfig& preprocess, std::int64_t classes) {
  require(reference.plan().config.preprocess.input_size == preprocess.input_size, "the reference takes ",
          reference.plan().config.preprocess.input_size, " x ", reference.plan().config.preprocess.input_size,
          " inputs but the plan ", preprocess.input_size, " x ", preprocess.input_size);
  require(class_count(reference) == classes, "the reference gives ", class_count(reference),
          " classes but the plan ", classes);
}

// Images read but not yet run: they go through the engine a whole batch at a time.
struct PendingImages {
  std::vector<Tensor> images;
  std::vector<std::size_t> indices;  // into the dataset
};

// The reference's logits for the pending images: from the cache where it has them, else computed
// (and cached).
std::vector<std::vector<float>> reference_rows(Engine* reference, const PendingImages& pending,
                                               std::int64_t classes, ReferenceLogitsCache* cache) {
  std::vector<std::vector<float>> rows(reference != nullptr ? pending.images.size() : 0);
  if (reference == nullptr) return rows;
  std::vector<Tensor> missing;
  std::vector<std::size_t> missing_rows;
  for (std::size_t r = 0; r < pending.images.size(); ++r) {
    const std::vector<float>* cached = nullptr;
    if (cache != nullptr) {
      const auto found = cache->logits.find(pending.indices[r]);
      if (found != cache->logits.end()) cached = &found->second;
    }
    if (cached != nullptr) {
      require(cached->size() == static_cast<std::size_t>(classes), "the reference logits cache holds ",
              cached->size(), " logits for image ", pending.indices[r], ", expected ", classes);
      rows[r] = *cached;
    } else {
      missing.push_back(pending.images[r]);
      missing_rows.push_back(r);
    }
  }
  const Tensor computed = run_rows(*reference, missing, classes);
  for (std::size_t k = 0; k < missing.size(); ++k) {
    const auto values = row(computed, k);
    rows[missing_rows[k]].assign(values.begin(), values.end());
    if (cache != nullptr) cache->logits[pending.indices[missing_rows[k]]] = rows[missing_rows[k]];
  }
  return rows;
}

// Runs the pending images and adds them to the label, reference and NaN/Inf figures; empties `pending`.
void score_pending(Engine& engine, Engine* reference, const Dataset& dataset, std::int64_t classes,
                   ReferenceLogitsCache* cache, PendingImages& pending, EvalResult& result) {
  if (pending.images.empty()) return;
  const Tensor logits = run_rows(engine, pending.images, classes);
  const std::vector<std::vector<float>> reference_logits = reference_rows(reference, pending, classes, cache);
  for (std::size_t r = 0; r < pending.images.size(); ++r) {
    const Sample& sample = dataset.sample(pending.indices[r]);
    const auto y = row(logits, r);
    const NonFiniteCount non_finite = count_non_finite(y);
    result.non_finite += non_finite;
    if (non_finite.total() > 0) {
      ++result.images_with_non_finite;
      if (result.non_finite_images.size() < kNonFiniteImagesListed)
        result.non_finite_images.push_back(sample.name);
    }
    ImageOutcome outcome{pending.indices[r], sample.name, top1_class(y)};
    if (result.labels) {
      result.labels->add(y, sample.label);
      outcome.label = sample.label;
    }
    if (reference != nullptr) {
      const std::span<const float> ref = reference_logits[r];
      outcome.reference_top1 = top1_class(ref);
      result.reference_non_finite += count_non_finite(ref);
      result.reference->add(y, ref, sample.name);
      if (result.reference_labels) result.reference_labels->add(ref, sample.label);
    }
    result.per_image.push_back(std::move(outcome));
    ++result.images_evaluated;
  }
  pending.images.clear();
  pending.indices.clear();
}

// Per-layer errors against the reference on the first images; the plan's tap is kept for the stress
// inputs, which use it to find the first layer with NaN/Inf.
std::unique_ptr<LayerTap> compare_layers(Engine& engine, Engine& reference, const std::vector<Tensor>& inputs,
                                         EvalResult& result) {
  auto plan_tap = std::make_unique<LayerTap>(engine.plan(), engine.backend(), 1);
  LayerTap reference_tap(reference.plan(), reference.backend(), 1);
  LayerErrorAccumulator accumulator(*plan_tap, reference_tap);
  for (const Tensor& input : inputs) {
    const Tensor batch = as_batch_of_one(input);
    accumulator.add(plan_tap->run(batch), reference_tap.run(batch));
  }
  result.per_layer = accumulator.report();
  return plan_tap;
}

}  // namespace

std::optional<PairedCounts> top1_pairs(const EvalResult& result) {
  if (!result.labels || !result.reference) return std::nullopt;
  PairedCounts pairs;
  for (const ImageOutcome& image : result.per_image) {
    const bool plan_right = image.top1 == image.label, reference_right = image.reference_top1 == image.label;
    if (plan_right && reference_right) ++pairs.both;
    else if (reference_right) ++pairs.baseline_only;
    else if (plan_right) ++pairs.variant_only;
    else ++pairs.neither;
  }
  return pairs;
}

EvalResult evaluate(Engine& engine, Engine* reference, const Dataset& dataset,
                    std::span<const std::size_t> indices, const EvalOptions& options) {
  std::ostream& log = options.log != nullptr ? *options.log : std::cerr;
  EvalResult result;
  result.images_requested = indices.size();
  result.num_classes = class_count(engine);
  const std::int64_t classes = result.num_classes;
  const PreprocessConfig& preprocess = engine.plan().config.preprocess;
  if (reference != nullptr) check_reference_fits(*reference, preprocess, classes);
  require(options.per_layer_images == 0 || reference != nullptr, "per-layer errors need a reference");
  require(!indices.empty(), dataset.source(), ": no images to evaluate");
  if (dataset.labelled()) {
    dataset.check_labels(classes);
    result.labels.emplace();
    if (reference != nullptr) result.reference_labels.emplace();
  }
  if (reference != nullptr) result.reference.emplace();

  PendingImages pending;
  std::vector<Tensor> per_layer_inputs;
  const auto flush = [&] {
    score_pending(engine, reference, dataset, classes, options.reference_cache, pending, result);
  };
  std::unique_ptr<Progress> progress;
  if (options.progress) progress = std::make_unique<Progress>("eval", indices.size());
  std::vector<SkippedImage> skipped;
  for_each_image(
      dataset, indices, preprocess,
      [&](std::size_t index, const Tensor& input) {
        if (per_layer_inputs.size() < options.per_layer_images) per_layer_inputs.push_back(input);
        pending.images.push_back(input);
        pending.indices.push_back(index);
        if (static_cast<std::int64_t>(pending.images.size()) == engine.batch()) flush();
      },
      options.strict, progress.get(), log, &skipped);
  flush();
  for (const auto& bad : skipped) result.skipped.push_back({dataset.sample(bad.index).name, bad.reason});
  require(result.images_evaluated > 0, dataset.source(), ": none of the ", indices.size(),
          " images could be read (the first: ", result.skipped.empty() ? "" : result.skipped.front().reason,
          ")");

  std::unique_ptr<LayerTap> plan_tap;
  if (options.per_layer_images > 0) plan_tap = compare_layers(engine, *reference, per_layer_inputs, result);
  if (options.stress) result.stress = run_stress(engine, reference, classes, plan_tap.get());
  return result;
}

namespace {

nlohmann::json number(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json non_finite_json(const NonFiniteCount& count) {
  return {{"nan", count.nan}, {"inf", count.inf}};
}

// The plan's top-1 minus the reference's, in points, with its 95% interval (paired over the images).
nlohmann::json top1_difference_json(const PairedCounts& pairs) {
  const Interval drop = paired_drop_interval(pairs);
  const auto points = [](double drop_fraction) { return 0.0 - 100.0 * drop_fraction; };  // never -0
  return {{"images", pairs.images()},
          {"plan_only_right", pairs.variant_only},
          {"reference_only_right", pairs.baseline_only},
          {"points", points(drop.estimate)},
          {"interval_95", {points(drop.high), points(drop.low)}},
          {"method", "Newcombe's hybrid score interval for paired proportions"}};
}

nlohmann::json labels_json(const LabelMetrics& metrics) {
  return {{"images", metrics.images()},
          {"top1", number(metrics.top1())},
          {"top5", number(metrics.top5())},
          {"top1_correct", metrics.top1_correct()},
          {"top5_correct", metrics.top5_correct()}};
}

// Compact rows; label and reference_top1 are null where the evaluation had none.
nlohmann::json per_image_json(const std::vector<ImageOutcome>& images) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ImageOutcome& image : images) {
    rows.push_back({{"index", image.index},
                    {"name", image.name},
                    {"top1", image.top1},
                    {"label", image.label >= 0 ? nlohmann::json(image.label) : nlohmann::json(nullptr)},
                    {"reference_top1", image.reference_top1 >= 0 ? nlohmann::json(image.reference_top1)
                                                                 : nlohmann::json(nullptr)}});
  }
  return rows;
}

}  // namespace

nlohmann::json to_json(const EvalResult& result, const EvalJsonOptions& options) {
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& bad : result.skipped) skipped.push_back({{"name", bad.name}, {"error", bad.reason}});
  nlohmann::json json = {
      {"images",
       {{"requested", result.images_requested},
        {"evaluated", result.images_evaluated},
        {"skipped", result.skipped.size()}}},
      {"skipped", skipped},
      {"num_classes", result.num_classes},
      {"non_finite",
       {{"nan", result.non_finite.nan},
        {"inf", result.non_finite.inf},
        {"images", result.images_with_non_finite},
        {"first_images", result.non_finite_images}}},
  };
  json["labels"] = result.labels ? labels_json(*result.labels) : nlohmann::json(nullptr);
  if (result.reference) {
    const ReferenceMetrics& ref = *result.reference;
    json["reference"] = {{"images", ref.images()},
                         {"top1_agreement", number(ref.agreement())},
                         {"top1_agreements", ref.top1_agreements()},
                         {"relative_error", number(ref.relative_error())},
                         {"max_image_relative_error", number(ref.max_image_relative_error())},
                         {"worst_image", ref.worst_image()},
                         {"max_abs_error", number(ref.max_abs_error())},
                         {"non_finite", non_finite_json(result.reference_non_finite)}};
    json["reference"]["labels"] =
        result.reference_labels ? labels_json(*result.reference_labels) : nlohmann::json(nullptr);
    const std::optional<PairedCounts> pairs = top1_pairs(result);
    json["reference"]["top1_difference"] = pairs ? top1_difference_json(*pairs) : nlohmann::json(nullptr);
  } else {
    json["reference"] = nullptr;
  }
  nlohmann::json stress = nlohmann::json::array();
  for (const auto& s : result.stress) {
    nlohmann::json entry = {{"name", s.name},
                            {"description", s.description},
                            {"non_finite", non_finite_json(s.non_finite)},
                            {"top1", s.top1}};
    if (s.reference_non_finite) entry["reference_non_finite"] = non_finite_json(*s.reference_non_finite);
    if (s.relative_error) entry["relative_error"] = number(*s.relative_error);
    if (s.top1_agrees) entry["top1_agrees"] = *s.top1_agrees;
    if (s.layers) {
      entry["non_finite_layers"] = s.layers->count;
      entry["first_non_finite_layer"] =
          s.layers->first.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.layers->first);
    }
    stress.push_back(std::move(entry));
  }
  json["stress"] = stress;
  if (options.per_image) json["per_image"] = per_image_json(result.per_image);
  if (result.per_layer) {
    const LayerErrorReport& report = *result.per_layer;
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& layer : report.layers) {
      layers.push_back({{"name", layer.name},
                        {"op", op_kind_name(layer.op)},
                        {"shape", layer.shape},
                        {"position", layer.position},
                        {"relative_error", number(layer.relative_error)},
                        {"max_abs_error", number(layer.max_abs_error)},
                        {"non_finite", non_finite_json(layer.non_finite)},
                        {"reference_non_finite", non_finite_json(layer.reference_non_finite)}});
    }
    json["per_layer"] = {{"images", report.images},
                         {"plan_layers", report.plan_layers},
                         {"reference_layers", report.reference_layers},
                         {"compared", report.layers.size()},
                         {"unmatched", report.unmatched},
                         {"shape_mismatch", report.shape_mismatch},
                         {"layers", layers}};
  } else {
    json["per_layer"] = nullptr;
  }
  return json;
}

}  // namespace kiln
