#include "pipeline/detector_study.h"

#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "data/folder_dataset.h"
#include "data/image_loop.h"
#include "data/sampling.h"
#include "data/yolo_dataset.h"
#include "data/yolo_labels.h"
#include "eval/stress_inputs.h"
#include "pipeline/detection_pass.h"
#include "pipeline/detector_engine.h"
#include "pipeline/detector_parity.h"
#include "pipeline/detector_plan.h"
#include "study/non_finite_check.h"
#include "study/timing_rounds.h"

namespace kiln::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct DetectionSet {
  YoloLayout layout;
  Dataset dataset;
  std::vector<std::string> names;  // the labels' classes
  std::vector<std::string> notes;
};

std::string first_names(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, names.size()); ++i) text += (i ? ", " : "") + names[i];
  return text + (names.size() > 3 ? ", ..." : "");
}

DetectionSet open_detection_set(const DetectorStudyInputs& inputs) {
  const std::string& data = inputs.study.data;
  std::optional<YoloLayout> layout = find_yolo_layout(data);
  require(layout.has_value(), data,
          ": not a labelled detection set; a detector study needs the YOLO layout (images/ beside labels/, "
          "or a data.yaml naming them)");
  const std::vector<std::string>& model = inputs.study.detector->class_names;
  DetectionSet set{
      *layout, open_folder_dataset(layout->images), layout->names.empty() ? model : layout->names, {}};
  if (!layout->names.empty() && layout->names != model) {
    const std::string yaml = layout->data_yaml ? layout->data_yaml->string() : data;
    require(inputs.allow_other_class_names && layout->names.size() <= model.size(), yaml, ": ",
            layout->names.size(), " classes (", first_names(layout->names), ") that are not the model's ",
            model.size(), " (", first_names(model),
            "): give a detection set labelled with the model's classes");
    set.notes.push_back(cat("the labels' ", layout->names.size(), " classes (", first_names(layout->names),
                            ") are not the model's ", model.size(), " (", first_names(model),
                            "): mAP pairs them by class id, so it measures nothing but the machinery"));
  }
  return set;
}

struct StudySplit {
  std::size_t sample = 0;
  CalibrationSplit split;
  CalibrationImages calibration;  // empty unless a variant is fp8
};

StudySplit split_images(const DetectorStudyInputs& inputs, const Dataset& dataset) {
  const StudySpec& spec = inputs.spec.study;
  StudySplit s;
  s.sample = std::min(dataset.size(), spec.images);
  s.split = split_every(stride_sample(dataset.size(), s.sample), spec.every);
  if (s.split.calibration.size() > spec.calibration_images)
    s.split.calibration.resize(spec.calibration_images);
  require(!s.split.held_out.empty(), inputs.study.data, ": the sample of ", s.sample,
          " images leaves none held out");
  const bool any_fp8 = has_fp8_variant(spec.variants);
  if (any_fp8) s.calibration = load_calibration_images(dataset, s.split.calibration, inputs.to_input, false);
  require(!any_fp8 || !s.calibration.images.empty(), inputs.study.data,
          ": no calibration image could be read");
  share_calibration_between_variants(spec, s.calibration);
  s.calibration.source = {{"data", inputs.study.data},
                          {"sample", s.sample},
                          {"every", spec.every},
                          {"calibration_images", s.calibration.images.size()}};
  return s;
}

// One engine's boxes on the held-out images, in order, and its NaN/Inf counts per input.
struct DetectorPass {
  std::vector<std::size_t> indices;
  std::vector<std::vector<Detection>> detections;
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;  // width, height of each image
  EvalResult non_finite;  // images_evaluated, images_with_non_finite, non_finite(_images), stress
};

// The decoded output's row `row` ([N, 4 + classes, anchors]).
NonFiniteCount row_non_finite(const Tensor& decoded, std::size_t row) {
  const std::size_t per_row = static_cast<std::size_t>(decoded.numel() / decoded.dim(0));
  return count_non_finite(decoded.f32().subspan(row * per_row, per_row));
}

// Every stress input, letterboxed-space ([0, 1] RGB and beyond), as a batch of copies.
std::vector<StressResult> run_stress(DetectorEngine& engine, std::int64_t size) {
  PreprocessConfig preprocess;
  preprocess.input_size = size;
  preprocess.mean = {0.0f, 0.0f, 0.0f};
  preprocess.std = {1.0f, 1.0f, 1.0f};
  const std::int64_t batch = engine.engine().batch();
  std::vector<StressResult> results;
  for (const StressInput& stress : make_stress_inputs(preprocess)) {
    Tensor input(DType::kF32, {batch, 3, size, size});
    const std::size_t n = static_cast<std::size_t>(stress.input.numel());
    for (std::int64_t b = 0; b < batch; ++b)
      std::copy(stress.input.f32().begin(), stress.input.f32().end(),
                input.mutable_f32().begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * n));
    StressResult result;
    result.name = stress.name;
    result.description = stress.description;
    result.non_finite = row_non_finite(engine.detect_letterboxed(input).decoded, 0);
    results.push_back(std::move(result));
  }
  return results;
}

DetectorPass detect_held_out(DetectorEngine& engine, const Dataset& dataset, const StudySplit& s,
                             const std::string& label) {
  DetectorPass pass;
  EvalResult& nf = pass.non_finite;
  nf.images_requested = s.split.held_out.size();
  for_each_detection(engine, nullptr, dataset, s.split.held_out, false, label,
                     [&](const DetectedImage& image) {
                       pass.indices.push_back(image.index);
                       pass.detections.push_back(*image.detections);
                       pass.sizes.emplace_back(image.image->width, image.image->height);
                       const NonFiniteCount count = row_non_finite(*image.decoded, image.row);
                       ++nf.images_evaluated;
                       nf.non_finite += count;
                       if (count.total() == 0) return;
                       ++nf.images_with_non_finite;
                       if (nf.non_finite_images.size() < 5)
                         nf.non_finite_images.push_back(dataset.sample(image.index).name);
                     });
  require(!pass.indices.empty(), dataset.source(), ": no held-out image could be read");
  nf.stress = run_stress(engine, engine.config().imgsz);
  return pass;
}

BoxParitySummary parity_against(const DetectorPass& ours, const DetectorPass& reference,
                                const Dataset& dataset, double min_score) {
  require(ours.indices == reference.indices, "study: the variant and fp32 read different images");
  DetectorParityReport report;
  for (std::size_t i = 0; i < ours.indices.size(); ++i)
    report.add(dataset.sample(ours.indices[i]).name, ours.detections[i], reference.detections[i], min_score);
  const BoxParity& t = report.total;
  return {min_score,         kGateMinIou,        kGateMaxScoreDiff, ours.indices.size(),
          t.reference_boxes, t.matched,          t.missing,         t.extra,
          t.worst_iou,       t.worst_score_diff, t.worst_iou_image, t.worst_score_image};
}

// Each held-out image's labels in its pixels and the detections scoring min_score or more.
std::vector<MapImage> map_images(const DetectorPass& pass,
                                 const std::map<std::size_t, std::vector<YoloBox>>& labels,
                                 double min_score) {
  std::vector<MapImage> images;
  for (std::size_t i = 0; i < pass.indices.size(); ++i) {
    const auto width = static_cast<double>(pass.sizes[i].first);
    const auto height = static_cast<double>(pass.sizes[i].second);
    MapImage image;
    for (const YoloBox& box : labels.at(pass.indices[i])) {
      image.truth.push_back({box.label, (box.cx - box.width / 2) * width, (box.cy - box.height / 2) * height,
                             (box.cx + box.width / 2) * width, (box.cy + box.height / 2) * height});
    }
    for (const Detection& d : pass.detections[i]) {
      if (d.score >= min_score) image.detections.push_back({d.label, d.x1, d.y1, d.x2, d.y2, d.score});
    }
    images.push_back(std::move(image));
  }
  return images;
}

MapResult full_map(const std::vector<MapImage>& images, std::size_t classes) {
  DetectionMap map(classes);
  for (const MapImage& image : images) map.add_image(image.truth, image.detections);
  return map.result();
}

std::map<std::size_t, std::vector<YoloBox>> read_labels(const Dataset& dataset,
                                                        const std::vector<std::size_t>& indices,
                                                        std::size_t classes) {
  std::map<std::size_t, std::vector<YoloBox>> labels;
  for (const std::size_t index : indices) {
    const std::filesystem::path& image = dataset.sample(index).file;
    const auto file = yolo_label_path(image);
    require(file.has_value(), image.string(), ": not under an 'images' folder, so it has no labels");
    labels.emplace(index, read_yolo_labels(*file, classes));
  }
  return labels;
}

}  // namespace

namespace {

// Every variant's plan and its boxes on the held-out images, and the fp32 build's boxes.
struct DetectedVariants {
  std::vector<std::shared_ptr<const Plan>> plans;
  std::vector<DetectorPass> passes;
  DetectorPass reference;
};

DetectedVariants build_and_detect(const DetectorStudyInputs& inputs, const Dataset& dataset,
                                  const StudySplit& s, const CompileOptions& compile,
                                  std::vector<VariantResult>& variants) {
  DetectedVariants built;
  std::filesystem::create_directories(inputs.study.out_dir / "plans");
  std::set<std::string> warned;
  const auto run = [&](const std::shared_ptr<const Plan>& plan, const std::string& name) {
    DetectorEngine engine(plan, name, inputs.study.backend, compile);
    const std::string warning = fallback_warning(engine.engine());
    if (!warning.empty() && warned.insert(warning).second) std::cerr << warning << "\n";
    return detect_held_out(engine, dataset, s, "detect");
  };
  std::optional<std::size_t> fp32;
  for (const StudyVariant& variant : inputs.spec.study.variants) {
    std::cerr << "study: " << variant.name << "\n";
    VariantResult r;
    r.variant = variant;
    built.plans.push_back(build_and_write_variant(inputs.study, s.calibration, r));
    built.passes.push_back(run(built.plans.back(), r.plan_file.string()));
    r.eval = built.passes.back().non_finite;
    if (variant.precision == Precision::kF32) fp32 = variants.size();
    variants.push_back(std::move(r));
  }
  if (fp32) {
    built.reference = built.passes[*fp32];
  } else {
    std::cerr << "study: fp32 (the reference)\n";
    const StudyVariant reference{"fp32", Precision::kF32, "", CalibrationMethod::kMax};
    built.reference = run(std::make_shared<const Plan>(build_study_variant(
                              inputs.study, reference, s.calibration, inputs.spec.study.opt_level)),
                          "fp32");
  }
  return built;
}

// Box parity with fp32 and mAP for every variant; the mAP drop against the baseline by paired bootstrap.
std::vector<DetectorQuality> judge_boxes(const DetectorStudySpec& spec, const DetectedVariants& built,
                                         const Dataset& dataset,
                                         const std::map<std::size_t, std::vector<YoloBox>>& labels,
                                         std::size_t classes) {
  std::vector<DetectorQuality> quality(built.passes.size());
  std::vector<WeightedMap> weighted;
  std::size_t baseline = 0;
  for (std::size_t i = 0; i < built.passes.size(); ++i) {
    quality[i].parity = parity_against(built.passes[i], built.reference, dataset, spec.parity_min_score);
    const std::vector<MapImage> images = map_images(built.passes[i], labels, spec.map_min_score);
    quality[i].map = full_map(images, classes);
    weighted.emplace_back(images, classes);
    if (spec.study.variants[i].name == spec.study.baseline) baseline = i;
  }
  Progress progress("mAP bootstrap", quality.size() - 1);
  for (std::size_t i = 0; i < quality.size(); ++i) {
    if (i == baseline) continue;
    quality[i].drop =
        paired_map_bootstrap(weighted[baseline], weighted[i], spec.bootstrap_resamples, spec.bootstrap_seed);
    progress.advance();
  }
  progress.finish();
  return quality;
}

// The first held-out image letterboxed, repeated to fill a batch.
Tensor timing_batch(const DetectorStudyInputs& inputs, const Dataset& dataset, const StudySplit& s,
                    std::int64_t batch_size) {
  Tensor input;
  std::ostringstream quiet;  // the image was read fine during evaluation
  for_each_decoded_image(
      dataset, std::span<const std::size_t>(s.split.held_out).first(1),
      [&](std::size_t, const Image& image) { input = inputs.to_input(image); }, true, nullptr, quiet);
  return repeated_batch(input, batch_size);
}

void time_variants(const DetectorStudyInputs& inputs, const Dataset& dataset, const StudySplit& s,
                   const CompileOptions& compile, const DetectedVariants& built, StudyResult& study) {
  const StudySpec& spec = inputs.spec.study;
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<Engine*> timed;
  for (const auto& plan : built.plans) {
    engines.push_back(std::make_unique<Engine>(plan, inputs.study.backend, compile));
    timed.push_back(engines.back().get());
  }
  const Tensor batch = timing_batch(inputs, dataset, s, spec.batch);
  const std::optional<ChildTiming> child = child_timing_for(inputs.study, *engines.front());
  study.timed_region = study_timed_region(*engines.front(), child);
  study.timing_image = dataset.sample(s.split.held_out.front()).name;
  std::vector<LoadSample> load = {sample_load()};
  time_in_rounds(spec, timed, batch, study.variants, child);
  summarize_rounds(spec, study.variants);
  engines.clear();
  profile_variants(spec, inputs.study.backend, compile, built.plans, batch, study.variants);
  study.matrix = time_speed_matrix(
      inputs.study, s.calibration, built.plans, study.variants,
      [&](std::int64_t size) { return timing_batch(inputs, dataset, s, size); }, child);
  load.push_back(sample_load());
  study.timing = check_study_timing(load, study.environment, study.variants);
}

// NaN/Inf in the baseline or fp32: said first, and no FP8 variant ships.
void flag_non_finite_references(DetectorStudyResult& result, const DetectorPass& reference) {
  const std::vector<NonFiniteReference> references = non_finite_references(result.study);
  result.study.warnings = non_finite_warnings(references);
  const bool listed = find_variant(result.study, "fp32") != nullptr;  // then warned about above
  if (!listed && (reference.non_finite.images_with_non_finite > 0 ||
                  stress_inputs_with_non_finite(reference.non_finite) > 0)) {
    result.study.warnings.push_back(cat("fp32 (the reference, built for box parity) gives NaN/Inf on ",
                                        non_finite_inputs_text(reference.non_finite),
                                        ": every box parity figure is measured against it"));
  }
  if (result.study.warnings.empty()) return;
  DetectorDecision& decision = result.decision;
  decision.outcome = ShipOutcome::kDoNotShip;
  decision.variant.clear();
  decision.reasons.insert(decision.reasons.begin(), result.study.warnings.begin(),
                          result.study.warnings.end());
  const std::string reason = references.empty() ? "not judged: " + result.study.warnings.front()
                                                : non_finite_verdict_reason(references.front());
  for (DetectorVerdict& verdict : decision.verdicts) {
    verdict.outcome = ShipOutcome::kDoNotShip;
    verdict.reasons.insert(verdict.reasons.begin(), reason);
  }
}

}  // namespace

DetectorStudyResult run_detector_study(const DetectorStudyInputs& inputs) {
  const auto start = Clock::now();
  require(inputs.study.detector.has_value() && inputs.detector != nullptr && inputs.to_input,
          "a detector study needs the detector's section and letterbox");
  DetectorStudyResult result;
  result.spec = inputs.spec;
  StudyResult& study = result.study;
  study.environment = capture_environment();
  study.inputs = inputs.study;
  study.inputs.spec = inputs.spec.study;
  study.family = inputs.study.model.family;
  study.checkpoint_sha256 = inputs.study.model.checkpoint_sha256;

  const DetectionSet set = open_detection_set(inputs);
  const StudySplit s = split_images(inputs, set.dataset);
  const std::size_t classes = inputs.study.detector->class_names.size();
  const auto labels = read_labels(set.dataset, s.split.held_out, classes);
  study.data = {{"source", inputs.study.data},
                {"kind", "YOLO-layout detection set"},
                {"dataset_images", set.dataset.size()},
                {"labelled", true},
                {"sample", s.sample},
                {"every", inputs.spec.study.every},
                {"calibration_images", s.calibration.images.size()},
                {"held_out_images", s.split.held_out.size()},
                {"imgsz", inputs.study.detector->image_size}};
  result.labels = std::filesystem::proximate(set.layout.labels).string();  // as the data was given
  result.names = set.names;
  result.notes = inputs.notes;
  result.notes.insert(result.notes.end(), set.notes.begin(), set.notes.end());

  CompileOptions compile;
  compile.batch = inputs.spec.study.batch;
  compile.strict_backend = inputs.study.strict_backend;
  const DetectedVariants built = build_and_detect(inputs, set.dataset, s, compile, study.variants);
  study.environment.backend_options = built.plans.front()->info.backend_options;
  result.quality = judge_boxes(inputs.spec, built, set.dataset, labels, classes);
  time_variants(inputs, set.dataset, s, compile, built, study);
  result.decision = decide_detector(inputs.spec, study.variants, result.quality, !study.timing.loaded());
  flag_non_finite_references(result, built.reference);
  study.seconds = seconds_since(start);
  return result;
}

}  // namespace kiln::pipeline
