// kiln eval: accuracy of a plan on a dataset, its agreement with an fp32 reference, a NaN/Inf scan over
// the images and the stress inputs, and per-layer errors. The work is done by src/eval/; this file
// parses options, prints a summary and writes the JSON report.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "cli/detector_commands.h"
#include "cli/memory_check.h"
#include "cli/option_checks.h"
#include "cli/output_checks.h"
#include "core/error.h"
#include "data/open_dataset.h"
#include "data/sampling.h"
#include "eval/evaluate.h"
#include "io/json_formats.h"
#include "io/output_guard.h"
#include "io/utf8_text.h"
#include "pipeline/detector_plan.h"
#include "pipeline/model_loading.h"
#include "plan/plan_magic.h"

namespace kiln::cli {

namespace {

constexpr std::size_t kLayersPrinted = 15;

struct EvalCliOptions {
  std::filesystem::path plan;
  std::string data;
  std::optional<std::filesystem::path> reference;
  std::string family;
  std::optional<std::filesystem::path> config;
  std::string backend;
  bool strict_backend = false;
  std::optional<std::size_t> images;
  std::optional<std::size_t> every;
  std::string split;
  bool per_layer = false;
  std::size_t per_layer_images = 8;
  bool no_stress = false;
  bool strict = false;
  std::optional<std::filesystem::path> json;
  bool per_image = false;  // --json lists every image's classes too
  std::optional<std::int64_t> batch;
  double min_score = 0.25;              // detector plans: reference boxes compared
  std::optional<double> map_min_score;  // detector plans on labelled data: detections ranked
};

// A plan file starts with "KILNPLAN" (and a .kplan file is read as a plan, so a damaged one says so);
// anything else is read as a checkpoint.
bool is_checkpoint(const std::filesystem::path& path) {
  if (path.extension() == ".kplan") return false;
  return !looks_like_plan(path);
}

std::string percent(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << fraction * 100.0 << "%";
  return out.str();
}

std::string scientific(double value) {
  std::ostringstream out;
  out << std::scientific << std::setprecision(3) << value;
  return out.str();
}

std::string non_finite_str(const NonFiniteCount& count) {
  return cat(count.nan, " NaN, ", count.inf, " Inf");
}

// Points with their sign and two decimals, e.g. "-0.08".
std::string signed_points(double fraction) {
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(2) << 100.0 * fraction + 0.0;  // + 0.0: no "-0.00"
  return out.str();
}

// The plan's top-1 minus the reference's on the same images, with the paired 95% interval: what the
// images can tell about a quantized plan's accuracy cost.
void print_top1_difference(const PairedCounts& pairs, std::ostream& out) {
  const Interval drop = paired_drop_interval(pairs);
  out << "           top-1 minus the reference's " << signed_points(-drop.estimate) << " points, 95% interval "
      << signed_points(-drop.high) << " .. " << signed_points(-drop.low) << " (paired: " << pairs.variant_only
      << " images only the plan gets right, " << pairs.baseline_only << " only the reference)\n";
}

void print_summary(const EvalResult& result, std::ostream& out) {
  out << "images     " << result.images_evaluated << " evaluated, " << result.skipped.size()
      << " skipped (of " << result.images_requested << ")\n";
  if (result.labels) {
    const LabelMetrics& labels = *result.labels;
    out << "accuracy   top-1 " << percent(labels.top1()) << " (" << labels.top1_correct() << "/"
        << labels.images() << "), top-5 " << percent(labels.top5()) << " (" << labels.top5_correct() << "/"
        << labels.images() << ")";
    if (result.reference_labels) {
      out << "; reference top-1 " << percent(result.reference_labels->top1()) << ", top-5 "
          << percent(result.reference_labels->top5());
    }
    out << "\n";
  } else {
    out << "accuracy   no labels in the dataset\n";
  }
  if (result.reference) {
    const ReferenceMetrics& ref = *result.reference;
    out << "reference  top-1 agreement " << percent(ref.agreement()) << " (" << ref.top1_agreements() << "/"
        << ref.images() << "), ||y - ref|| / ||ref|| = " << scientific(ref.relative_error())
        << ", worst image " << scientific(ref.max_image_relative_error()) << " (" << ref.worst_image()
        << ")\n";
  } else {
    out << "reference  none (give --reference for agreement and relative error)\n";
  }
  if (const std::optional<PairedCounts> pairs = top1_pairs(result)) print_top1_difference(*pairs, out);
  if (result.images_with_non_finite == 0) {
    out << "NaN/Inf    none in " << result.images_evaluated << " images\n";
  } else {
    out << "NaN/Inf    " << non_finite_str(result.non_finite) << " in " << result.images_with_non_finite
        << " image(s), first " << result.non_finite_images.front() << "\n";
  }
  if (!result.stress.empty()) {
    std::size_t bad = 0;
    for (const auto& s : result.stress) bad += s.non_finite.total() > 0 ? 1 : 0;
    out << "stress     " << result.stress.size() - bad << " of " << result.stress.size()
        << " stress inputs give finite outputs\n";
    for (const auto& s : result.stress) {
      out << "  " << std::left << std::setw(16) << s.name << std::right;
      out << (s.non_finite.total() == 0 ? "finite" : non_finite_str(s.non_finite));
      if (s.non_finite.total() > 0 && s.reference_non_finite) {
        out << (s.reference_non_finite->total() == 0
                    ? " (reference finite)"
                    : " (reference " + non_finite_str(*s.reference_non_finite) + ")");
      }
      if (s.relative_error) {
        out << ", rel error " << scientific(*s.relative_error)
            << (*s.top1_agrees ? ", top-1 agrees" : ", top-1 differs");
      }
      if (s.layers && s.layers->count > 0) {
        out << ", non-finite from layer " << s.layers->first << " (" << s.layers->count << " layers)";
      }
      out << "\n";
    }
  }
  if (result.per_layer) {
    const LayerErrorReport& report = *result.per_layer;
    out << "per-layer  " << report.layers.size() << " layers compared over " << report.images << " image(s) ("
        << report.plan_layers << " in the plan, " << report.reference_layers << " in the reference, "
        << report.unmatched.size() << " without a namesake, " << report.shape_mismatch.size()
        << " of another shape); the " << std::min(kLayersPrinted, report.layers.size()) << " worst:\n";
    out << "  " << std::setw(10) << "rel error"
        << "  " << std::setw(10) << "max abs"
        << "  " << std::left << std::setw(20) << "op"
        << "layer" << std::right << "\n";
    for (std::size_t i = 0; i < std::min(kLayersPrinted, report.layers.size()); ++i) {
      const LayerError& layer = report.layers[i];
      out << "  " << std::setw(10) << scientific(layer.relative_error) << "  " << std::setw(10)
          << scientific(layer.max_abs_error) << "  " << std::left << std::setw(20) << op_kind_name(layer.op)
          << layer.name << std::right;
      if (layer.non_finite.total() > 0) out << "  (" << non_finite_str(layer.non_finite) << ")";
      out << "\n";
    }
  }
}

std::vector<std::size_t> choose_indices(const EvalCliOptions& options, const Dataset& dataset) {
  std::vector<std::size_t> indices;
  if (options.images) {
    require(*options.images <= dataset.size(), dataset.source(), ": --images ", *options.images,
            " but the dataset has ", dataset.size(), " images");
    indices = stride_sample(dataset.size(), *options.images);
  } else {
    indices.resize(dataset.size());
    std::iota(indices.begin(), indices.end(), std::size_t{0});
  }
  if (options.every) {
    const CalibrationSplit split = split_every(indices, *options.every);
    indices = options.split == "calibration" ? split.calibration : split.held_out;
    require(!indices.empty(), dataset.source(), ": the ", options.split, " part of the split (1 in ",
            *options.every, ") holds no image");
  }
  return indices;
}

// What makes the reference another network than the plan's fp32 self: another family, or weights from
// another checkpoint. Agreement and relative error then compare two models, which the output says.
std::vector<std::string> reference_differences(const Plan& plan, const Plan& reference) {
  std::vector<std::string> differences;
  if (reference.info.family != plan.info.family) {
    differences.push_back(
        cat("the reference is a ", reference.info.family, " model, the plan a ", plan.info.family, " one"));
  }
  const std::string& mine = plan.info.checkpoint_sha256;
  const std::string& theirs = reference.info.checkpoint_sha256;
  if (!mine.empty() && !theirs.empty() && mine != theirs) {
    differences.push_back(cat("the reference was built from another checkpoint (sha256 ",
                              theirs.substr(0, 12), "..., the plan's ", mine.substr(0, 12), "...)"));
  }
  return differences;
}

// What the plan is compared with: a plan file, or a checkpoint built in memory at fp32.
struct ReferenceModel {
  std::shared_ptr<const Plan> plan;      // null without --reference
  std::string kind;                      // how it was made, for the header line
  std::vector<std::string> differences;  // what makes it another network than the plan's (family, weights)
};

ReferenceModel load_reference(const EvalCliOptions& options, const Plan& plan) {
  ReferenceModel reference;
  if (!options.reference) return reference;
  if (is_checkpoint(*options.reference)) {
    const std::string family = options.family.empty() ? plan.info.family : options.family;
    reference.plan =
        std::make_shared<const Plan>(pipeline::build_in_memory(family, *options.reference, options.config));
    reference.kind = cat("checkpoint, ", family, ", built in memory at fp32");
  } else {
    if (!options.family.empty() || options.config)
      usage_error(cat("--family and --config describe a checkpoint --reference, but ",
                      options.reference->string(), " is a plan"));
    reference.plan = pipeline::load_plan(*options.reference);
    pipeline::require_classifier_plan(*reference.plan, options.reference->string(),
                                      cat("the reference of ", options.plan.string()));
    reference.kind = cat("plan, ", precision_name(reference.plan->info.precision));
  }
  reference.differences = reference_differences(plan, *reference.plan);
  return reference;
}

// The lines before evaluation starts: what runs where, on which images, against which reference.
void print_header(const EvalCliOptions& options, const Plan& plan, const std::string& backend,
                  std::int64_t batch, const Dataset& dataset, std::size_t sample_size,
                  const ReferenceModel& reference) {
  std::cout << "eval       " << options.plan.string() << " (" << plan.info.family << ", "
            << precision_name(plan.info.precision) << ") on " << backend << ", batch " << batch << "\n"
            << "data       " << dataset.source() << " (" << dataset_kind_name(dataset.kind()) << ", "
            << dataset.size() << " images)\n";
  if (options.images || options.every) {
    std::cout << "sample     " << sample_size << " images:";
    if (options.images) std::cout << " " << *options.images << " at a fixed stride";
    if (options.every)
      std::cout << (options.images ? "," : "") << " the " << options.split << " part of 1 in "
                << *options.every;
    std::cout << "\n";
  }
  if (options.reference)
    std::cout << "reference  " << options.reference->string() << " (" << reference.kind << ")\n";
  for (const std::string& difference : reference.differences)
    std::cout << "note: " << difference << ": agreement and error compare two different models\n";
  std::cout << std::flush;
}

// The --json report: the run's settings, then every figure of the result.
void write_report(const EvalCliOptions& options, const Plan& plan, const std::string& backend,
                  std::int64_t batch, const Dataset& dataset, const EvalResult& result,
                  const ReferenceModel& reference) {
  nlohmann::json report = {
      {"format", json_format::kEval},
      {"plan", options.plan.string()},
      {"family", plan.info.family},
      {"precision", precision_name(plan.info.precision)},
      {"backend", backend},
      {"batch", batch},
      {"data", dataset.source()},
      {"sample",
       {{"images", options.images ? nlohmann::json(*options.images) : nlohmann::json(nullptr)},
        {"every", options.every ? nlohmann::json(*options.every) : nlohmann::json(nullptr)},
        {"split", options.every ? nlohmann::json(options.split) : nlohmann::json(nullptr)}}},
      {"reference_model",
       options.reference ? nlohmann::json(options.reference->string()) : nlohmann::json(nullptr)},
      {"reference_differences", reference.differences}};
  report.update(to_json(result, {options.per_image}));
  write_json_file(*options.json, report);
}

DetectorEvalRequest detector_request(const EvalCliOptions& options, const CLI::App& command,
                                     std::shared_ptr<const Plan> plan) {
  if (options.per_layer || options.every || options.per_image)
    usage_error(cat(options.plan.string(),
                    ": --per-layer, --per-image and --every are for classifier plans; a detector plan is "
                    "compared box for box"));
  return {.plan_path = options.plan,
          .plan = std::move(plan),
          .data = options.data,
          .reference = options.reference,
          .family = options.family,
          .config = options.config,
          .backend = options.backend,
          .strict_backend = options.strict_backend,
          .batch = options.batch,
          .images = options.images,
          .strict = options.strict,
          .min_score = options.min_score,
          .min_score_given = !first_given(command, {"--min-score"}).empty(),
          .map_min_score = options.map_min_score,
          .json = options.json};
}

void eval(const EvalCliOptions& options, const CLI::App& command) {
  refuse_unless(options.reference.has_value(), command, {"--family", "--config"},
                "to a checkpoint --reference", "no --reference was given");
  if (const auto json = named_if("--json", options.json)) {
    std::vector<NamedPath> inputs = {{"the plan", options.plan}, {"--data", options.data}};
    if (const auto reference = named_if("--reference", options.reference)) inputs.push_back(*reference);
    if (const auto config = named_if("--config", options.config)) inputs.push_back(*config);
    check_output(*json, inputs);
  }
  const std::shared_ptr<const Plan> plan = pipeline::load_plan(options.plan);
  if (plan->detector) return eval_detector(detector_request(options, command, plan));
  refuse_unless(false, command, {"--min-score", "--map-min-score"}, "to detector plans",
                cat(options.plan.string(), " is a classifier plan"));
  if (options.per_layer && !options.reference)
    usage_error("--per-layer compares layers with a reference: give --reference");
  const Dataset dataset = open_dataset(options.data);
  const std::int64_t classes = plan->graph.value(plan->graph.outputs().at(0)).shape.back();
  if (dataset.labelled()) dataset.check_labels(classes);
  const std::vector<std::size_t> indices = choose_indices(options, dataset);
  const ReferenceModel reference_model = load_reference(options, *plan);

  CompileOptions compile;
  compile.batch = options.batch.value_or(plan->info.batch);
  compile.strict_backend = options.strict_backend;
  const std::string backend = options.backend.empty() ? default_backend() : options.backend;
  refuse_batch_beyond_host_memory(plan->graph, compile.batch, backend);
  Engine engine(plan, backend, compile);
  std::optional<Engine> reference;
  if (reference_model.plan) reference.emplace(reference_model.plan, backend, compile);
  // The set prints a warning both engines share once.
  for (const std::string& warning :
       std::set<std::string>{fallback_warning(engine), reference ? fallback_warning(*reference) : ""})
    if (!warning.empty()) std::cerr << warning << "\n";
  print_header(options, *plan, backend, compile.batch, dataset, indices.size(), reference_model);

  EvalOptions eval_options;
  eval_options.strict = options.strict;
  eval_options.progress = true;
  eval_options.stress = !options.no_stress;
  eval_options.per_layer_images = options.per_layer ? options.per_layer_images : 0;
  const EvalResult result =
      evaluate(engine, reference ? &*reference : nullptr, dataset, indices, eval_options);
  print_summary(result, std::cout);
  if (options.json) write_report(options, *plan, backend, compile.batch, dataset, result, reference_model);
}

// The options only detector plans take: the box parity and mAP score floors.
void add_detector_options(CLI::App& cmd, EvalCliOptions& options) {
  cmd.add_option("--min-score", options.min_score,
                 "Detector plans: compare the reference's boxes scoring at least this (box parity gate: "
                 "IoU >= 0.9, |score diff| <= 0.005, none missing or extra). On a labelled detection set, "
                 "box parity runs only with --reference; the JSON then holds both 'map' and the parity "
                 "figures ('boxes', 'per_image')")
      ->capture_default_str()
      ->check(real_between(0.0, 1.0));
  cmd.add_option("--map-min-score", options.map_min_score,
                 "Detector plans on a labelled detection set: rank the detections scoring at least this "
                 "for mAP (default 0.001, as COCO evaluation keeps nearly every detection)")
      ->check(real_between(0.0, 1.0));
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Evaluate a plan on a dataset: top-1/top-5 against labels, agreement and relative error against an "
      "fp32 reference, a NaN/Inf scan over the images and stress inputs, per-layer errors. A detector plan: "
      "mAP@0.5 and mAP@0.5:0.95 (COCO's definition) on a labelled detection set in the YOLO layout, box "
      "parity with a reference (on a labelled set only with --reference)");
  cmd->add_option("plan", options->plan, "The plan file to evaluate (kiln build)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option(
         "--data", options->data,
         "Images to evaluate on: a folder (flat, or one sub-folder per class, optionally with labels.txt or "
         "labels.csv), a .tar or .tar.gz shard, a folder of shards or a pattern such as "
         "'val-{000000..000009}.tar'. "
         "Labels, when present, give top-1/top-5 and must lie in [0, the model's classes). For a detector "
         "plan, a labelled detection set in the YOLO layout (a folder with data.yaml naming the classes and "
         "its val images, a folder with images/ beside labels/, or an images folder such as ROOT/images/val "
         "with ROOT/labels/val) gives mAP@0.5 and mAP@0.5:0.95 as COCO defines them")
      ->required();
  cmd->add_option(
         "--reference", options->reference,
         "What to compare against: a plan file, or a checkpoint (model.safetensors) built in memory at "
         "fp32. Gives top-1 agreement and ||y - ref|| / ||ref||; for a detector plan, box parity (default: "
         "the plan itself on cpu-reference)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--family", options->family,
                  "Model family of a checkpoint --reference (default: the plan's family)");
  cmd->add_option(
         "--config", options->config,
         "timm config.json of a checkpoint --reference (default: config.json beside it, else the family's "
         "defaults)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--backend", options->backend,
                  "Backend to run the plan and the reference on (default: the fastest CPU backend built in)")
      ->check(known_backend());
  cmd->add_flag("--strict-backend", options->strict_backend, kStrictBackendHelp);
  cmd->add_option("--batch", options->batch,
                  "Images per engine run, 1 to 4096 (default: the plan's batch); a last partial batch is "
                  "padded")
      ->check(whole_between(1, kMaxBatch));
  cmd->add_option("--images", options->images,
                  "Evaluate N images taken at a fixed stride, indices floor(i * images / N) (default: all)")
      ->check(whole_between(1, kMaxCount));
  auto* every =
      cmd->add_option("--every", options->every,
                      "Split the (sampled) images as a study does: every K-th calibrates, the others are "
                      "held out; evaluate the part --split names (without --every: the whole sample)")
          ->check(whole_between(1, kMaxCount));
  cmd->add_option("--split", options->split,
                  "With --every: which part to evaluate, held-out (default) or calibration")
      ->check(CLI::IsMember({"held-out", "calibration"}))
      ->default_str("held-out")
      ->needs(every);
  auto* per_layer = cmd->add_flag(
      "--per-layer", options->per_layer,
      "Also compare every layer's output with the reference's layer of the same name, and list the layers "
      "sorted by relative error (needs --reference)");
  cmd->add_option("--per-layer-images", options->per_layer_images,
                  "With --per-layer: compare layers over the first M evaluated images")
      ->capture_default_str()
      ->check(whole_between(1, kMaxCount))
      ->needs(per_layer);
  cmd->add_flag(
      "--no-stress", options->no_stress,
      "Skip the stress inputs (zeros, constant colours, saturated colours, checkerboards, large noise, "
      "the extremes of the preprocessing range) scanned for NaN/Inf outputs");
  cmd->add_flag("--strict", options->strict,
                "Stop at the first unreadable image (by default it is reported and skipped)");
  auto* json = cmd->add_option("--json", options->json,
                               "Write the full report (every metric, stress input and layer) as JSON");
  cmd->add_flag("--per-image", options->per_image,
                "With --json: also list every evaluated image in order (its top-1 class, label and the "
                "reference's top-1), to pair results image by image across plans")
      ->needs(json);
  add_detector_options(*cmd, *options);
  cmd->callback([options, cmd] {
    if (options->split.empty()) options->split = "held-out";
    eval(*options, *cmd);
  });
}

}  // namespace kiln::cli
