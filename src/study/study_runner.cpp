#include "study/study_runner.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "data/image_loop.h"
#include "data/open_dataset.h"
#include "data/sampling.h"
#include "plan/plan_writer.h"
#include "quant/calibration_images.h"
#include "quant/fp8_build.h"
#include "quant/shared_calibration.h"
#include "study/non_finite_check.h"
#include "study/study_folder.h"
#include "study/timing_rounds.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string slug(const std::string& name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out;
}

}  // namespace

Plan build_study_variant(const StudyInputs& inputs, const StudyVariant& variant,
                         const CalibrationImages& calibration, std::int64_t opt_level) {
  BuildOptions options;
  options.precision = variant.precision;
  options.opt_level = opt_level;
  options.batch = inputs.spec.batch;
  options.backend = inputs.backend;
  options.strict_backend = inputs.strict_backend;
  options.strict_precision = inputs.strict_precision;
  options.backend_options = inputs.backend_options;
  // Variants share convolution shapes: a backend that times kernels (cuda) times each shape once.
  options.tactic_cache = (inputs.out_dir / "plans" / "tactics.txt").string();
  if (is_quantized(variant.precision)) {
    Fp8Settings settings;
    settings.format = quant_format_of(variant.precision);
    settings.recipe = variant.recipe;
    settings.method = variant.method;
    settings.auto_target = inputs.spec.auto_target;
    settings.sensitivity_images = inputs.spec.sensitivity_images;
    settings.depthwise_input_scales = variant.depthwise_input_scales;
    // As `kiln build` chooses: fp16 beside FP8; beside int8 fp32 on a CPU (which emulates fp16), fp16 on
    // cuda (whose quantized layers run among fp16 ones).
    settings.fallback = make_backend(inputs.backend)->quantized_fallback(variant.precision);
    options.fp8_fallback = settings.fallback;
    // Not owned: the calibration images outlive the build.
    options.quantizer = fp8_quantizer(
        settings, std::shared_ptr<const CalibrationImages>(std::shared_ptr<void>(), &calibration));
  }
  Plan plan = build_plan(inputs.model, options).plan;
  plan.detector = inputs.detector;
  return plan;
}

void share_calibration_between_variants(const StudySpec& spec, CalibrationImages& calibration) {
  const auto fp8 = std::count_if(spec.variants.begin(), spec.variants.end(),
                                 [](const StudyVariant& v) { return is_quantized(v.precision); });
  if (fp8 >= 2) calibration.shared = std::make_shared<SharedCalibration>();
}

std::string variant_refusal(const std::string& backend, const StudyVariant& variant) {
  const auto be = make_backend(backend);
  // A one-convolution graph in the variant's precision, as the builder would make it.
  Graph probe;
  ValueId x = probe.add_input("x", {1, 16, 8, 8});
  ValueId w = probe.add_constant("w", Tensor(DType::kF32, {16, 16, 1, 1}));
  if (is_quantized(variant.precision)) {
    const bool int8 = variant.precision == Precision::kI8;
    x = probe.add_node(OpKind::kQuantize, "x.quantize", {x}, QuantizeAttrs{1.0f, int8});
    const ValueId codes =
        probe.add_constant("w.codes", Tensor(int8 ? DType::kI8 : DType::kF8E4M3, {16, 16, 1, 1}));
    const ValueId scales = probe.add_constant("w.scale", Tensor::from_f32({16}, std::vector<float>(16, 1.0f)));
    w = probe.add_node(OpKind::kDequantize, "w.dequantize", {codes, scales});
  }
  const ValueId y = probe.add_node(OpKind::kConv2d, "conv", {x, w}, ConvAttrs{});
  probe.node(probe.value(y).producer).precision = variant.precision;
  if (std::string refusal = be->precision_refusal(variant.precision); !refusal.empty()) return refusal;
  if (be->supports(probe, probe.node(probe.value(y).producer))) return {};
  return cat("the ", backend, " backend cannot run ", precision_name(variant.precision), " layers");
}

namespace {

// Fails before any work when the backend cannot run a variant's precision.
void check_backend_runs(const std::string& backend, const StudySpec& spec) {
  for (const StudyVariant& variant : spec.variants) {
    const std::string refusal = variant_refusal(backend, variant);
    require(refusal.empty(), refusal, " (variant '", variant.name,
            "'): leave the variant out with --variants, or study it on a CPU backend");
  }
}

// The images the study uses: a fixed-stride sample, every k-th image calibrates, the rest are held out.
struct StudySample {
  std::size_t sample_size = 0;
  CalibrationSplit split;
  CalibrationImages calibration;  // empty unless a variant is fp8
};

// Calibration from its own data set: a fixed-stride sample of study.calibration_images of it, so
// that no held-out image (a test set's) calibrates.
CalibrationImages separate_calibration(const StudyInputs& inputs) {
  const Dataset calibration = open_dataset(inputs.calibration_data);
  const std::vector<std::size_t> chosen =
      stride_sample(calibration.size(), std::min(calibration.size(), inputs.spec.calibration_images));
  CalibrationImages images =
      load_calibration_images(calibration, chosen, inputs.model.config.preprocess, false);
  images.source = {{"data", inputs.calibration_data},
                   {"dataset_images", calibration.size()},
                   {"calibration_images", images.images.size()}};
  return images;
}

StudySample sample_images(const StudyInputs& inputs, const Dataset& dataset) {
  const StudySpec& spec = inputs.spec;
  const bool separate = !inputs.calibration_data.empty();
  StudySample s;
  s.sample_size = std::min(dataset.size(), spec.images);
  const std::vector<std::size_t> sample = stride_sample(dataset.size(), s.sample_size);
  s.split = separate ? CalibrationSplit{{}, sample} : split_every(sample, spec.every);
  if (s.split.calibration.size() > spec.calibration_images)
    s.split.calibration.resize(spec.calibration_images);
  require(!s.split.held_out.empty(), inputs.data, ": the sample of ", s.sample_size,
          " images leaves none held out");
  const bool any_fp8 = has_fp8_variant(spec.variants);
  if (any_fp8 && separate) {
    s.calibration = separate_calibration(inputs);
  } else if (any_fp8) {
    s.calibration =
        load_calibration_images(dataset, s.split.calibration, inputs.model.config.preprocess, false);
  }
  const std::string& source = separate ? inputs.calibration_data : inputs.data;
  require(!any_fp8 || !s.calibration.images.empty(), source, ": no calibration image could be read");
  share_calibration_between_variants(spec, s.calibration);
  if (!separate) {
    s.calibration.source = {{"data", inputs.data},
                            {"sample", s.sample_size},
                            {"every", spec.every},
                            {"calibration_images", s.calibration.images.size()}};
  }
  return s;
}

// The report's "data" section: the dataset, the sample and its split.
nlohmann::json data_summary(const StudyInputs& inputs, const Dataset& dataset, const StudySample& s) {
  nlohmann::json summary = {{"source", inputs.data},
                            {"kind", dataset_kind_name(dataset.kind())},
                            {"dataset_images", dataset.size()},
                            {"labelled", dataset.labelled()},
                            {"sample", s.sample_size},
                            {"every", inputs.spec.every},
                            {"calibration_images", s.calibration.images.size()},
                            {"held_out_images", s.split.held_out.size()}};
  if (!inputs.calibration_data.empty()) {
    summary["every"] = nullptr;  // nothing of the sample calibrates
    summary["calibration_source"] = s.calibration.source;
  }
  return summary;
}

// Prints each distinct fallback warning once, however many engines share it.
class FallbackWarnings {
 public:
  void note(const Engine& engine) {
    const std::string warning = fallback_warning(engine);
    if (!warning.empty() && warned_.insert(warning).second) std::cerr << warning << "\n";
  }

 private:
  std::set<std::string> warned_;
};

// Every variant's plan and engine, kept for the timing rounds and the profiling that follow evaluation.
struct VariantEngines {
  std::unique_ptr<Engine> reference;  // the fp32 build every variant is compared with
  std::vector<std::shared_ptr<const Plan>> plans;
  std::vector<std::unique_ptr<Engine>> engines;
};

}  // namespace

std::shared_ptr<const Plan> build_and_write_variant(const StudyInputs& inputs,
                                                    const CalibrationImages& calibration, VariantResult& r) {
  const auto build_start = Clock::now();
  auto plan = std::make_shared<const Plan>(
      build_study_variant(inputs, r.variant, calibration, inputs.spec.opt_level));
  r.build_seconds = seconds_since(build_start);
  r.plan_file = variant_plan_path(inputs.out_dir, r.variant.name);
  record_unfinished_plan(inputs.out_dir, r.plan_file);
  write_plan(r.plan_file, *plan);
  r.plan_bytes = std::filesystem::file_size(r.plan_file);
  for (const Node& node : plan->graph.nodes()) {
    if (node.dead || node.op != OpKind::kConv2d) continue;
    ++r.convolutions;
    r.fp8_layers += is_quantized(node.precision) ? 1 : 0;
  }
  r.quantization = plan->info.quantization;
  return plan;
}

namespace {

// Builds and evaluates every variant on the held-out images against the fp32 reference engine.
VariantEngines build_and_evaluate(const StudyInputs& inputs, const Dataset& dataset, const StudySample& s,
                                  const CompileOptions& compile, StudyResult& result) {
  FallbackWarnings warnings;
  VariantEngines built;
  // Every build writes the shared tactic cache there (cuda), the fp32 reference's first.
  std::filesystem::create_directories(inputs.out_dir / "plans");
  StudyVariant fp32{"fp32", Precision::kF32, "", CalibrationMethod::kMax};
  auto reference_plan =
      std::make_shared<const Plan>(build_study_variant(inputs, fp32, s.calibration, inputs.spec.opt_level));
  built.reference = std::make_unique<Engine>(reference_plan, inputs.backend, compile);
  warnings.note(*built.reference);
  ReferenceLogitsCache reference_cache;

  for (const StudyVariant& variant : inputs.spec.variants) {
    std::cerr << "study: " << variant.name << "\n";
    VariantResult r;
    r.variant = variant;
    built.plans.push_back(build_and_write_variant(inputs, s.calibration, r));
    built.engines.push_back(std::make_unique<Engine>(built.plans.back(), inputs.backend, compile));
    warnings.note(*built.engines.back());
    EvalOptions eval;
    eval.progress = true;
    eval.reference_cache = &reference_cache;
    r.eval = evaluate(*built.engines.back(), built.reference.get(), dataset, s.split.held_out, eval);
    result.variants.push_back(std::move(r));
  }
  return built;
}

// The timing input: the first held-out image repeated to fill a batch.
Tensor timing_batch(const Dataset& dataset, const StudySample& s, const PreprocessConfig& preprocess,
                    std::int64_t batch_size) {
  Tensor input;
  std::ostringstream quiet;  // the image was read fine during evaluation; no summary line needed
  for_each_image(
      dataset, std::span<const std::size_t>(s.split.held_out).first(1), preprocess,
      [&](std::size_t, const Tensor& image) { input = image; }, true, nullptr, quiet);
  return repeated_batch(input, batch_size);
}

}  // namespace

// The speed matrix: main-level plans reused, plans at other levels built (not written) once per variant.
SpeedMatrix time_speed_matrix(const StudyInputs& inputs, const CalibrationImages& calibration,
                              const std::vector<std::shared_ptr<const Plan>>& plans,
                              const std::vector<VariantResult>& variants,
                              const std::function<Tensor(std::int64_t batch)>& input,
                              const std::optional<ChildTiming>& child) {
  const auto index_of = [&](const std::string& name) {
    const auto it = std::find_if(variants.begin(), variants.end(),
                                 [&](const VariantResult& r) { return r.variant.name == name; });
    return static_cast<std::size_t>(it - variants.begin());
  };
  std::map<std::pair<std::string, std::int64_t>, std::shared_ptr<const Plan>> other_levels;
  const auto plan = [&](const StudyVariant& variant, std::int64_t level) -> std::shared_ptr<const Plan> {
    if (level == inputs.spec.opt_level) return plans[index_of(variant.name)];
    auto& slot = other_levels[{variant.name, level}];
    if (!slot) slot = std::make_shared<const Plan>(build_study_variant(inputs, variant, calibration, level));
    return slot;
  };
  MatrixRun run{inputs.spec,
                inputs.backend,
                inputs.strict_backend,
                (inputs.out_dir / "plans" / "tactics.txt").string(),
                plan,
                {},
                {},
                {},
                child};
  run.plan_bytes = [&](const StudyVariant& variant, std::int64_t level) -> std::uintmax_t {
    if (level == inputs.spec.opt_level) return variants[index_of(variant.name)].plan_bytes;
    std::ostringstream bytes;
    write_plan(bytes, *plan(variant, level), variant.name);
    return bytes.str().size();
  };
  run.input = input;
  run.main_figures = [&](const std::string& name) {
    const VariantResult& r = variants[index_of(name)];
    MatrixCell cell;
    cell.latency_ms = r.latency_ms.median;
    cell.images_per_second = r.images_per_second.median;
    cell.speedup = r.speedup.median;
    return cell;
  };
  return run_speed_matrix(run);
}

namespace {

// Each FP8 engine against the fake quantization of its plan, on up to study.fake_quant_images held-out
// images.
FakeQuantCheck fake_quant_check(const StudyInputs& inputs, const Dataset& dataset, const StudySample& s,
                                const VariantEngines& built, const std::vector<VariantResult>& variants) {
  std::vector<Fp8Engine> fp8;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (is_quantized(variants[i].variant.precision))
      fp8.push_back({variants[i].variant.name, built.plans[i], built.engines[i].get()});
  }
  return check_fake_quantization(fp8, dataset, s.split.held_out, inputs.spec.fake_quant_images,
                                 inputs.backend);
}

// A baseline or reference with NaN/Inf outputs: said first in the report, and no FP8 variant ships, each
// verdict saying why (on images: not judged at all; on stress inputs only: judged, yet not shipped).
void flag_non_finite_references(StudyResult& result) {
  const std::vector<NonFiniteReference> references = non_finite_references(result);
  if (references.empty()) return;
  result.warnings = non_finite_warnings(references);
  StudyDecision& decision = result.decision;
  decision.outcome = ShipOutcome::kDoNotShip;
  decision.ship_fp8 = false;
  decision.variant.clear();
  decision.reasons.insert(decision.reasons.begin(), result.warnings.begin(), result.warnings.end());
  const std::string reason = non_finite_verdict_reason(references.front());
  for (VariantVerdict& verdict : decision.verdicts) {
    verdict.outcome = ShipOutcome::kDoNotShip;
    verdict.reasons.insert(verdict.reasons.begin(), reason);
  }
}

}  // namespace

StudyResult run_study(const StudyInputs& inputs) {
  const auto start = Clock::now();
  const StudySpec& spec = inputs.spec;
  check_backend_runs(inputs.backend, spec);
  StudyResult result;
  result.environment = capture_environment();
  result.inputs = inputs;
  result.family = inputs.model.family;
  result.checkpoint_sha256 = inputs.model.checkpoint_sha256;

  const Dataset dataset = open_dataset(inputs.data);
  const StudySample sample = sample_images(inputs, dataset);
  result.data = data_summary(inputs, dataset, sample);

  CompileOptions compile;
  compile.batch = spec.batch;
  compile.strict_backend = inputs.strict_backend;
  const VariantEngines built = build_and_evaluate(inputs, dataset, sample, compile, result);
  result.environment.backend_options = built.plans.front()->info.backend_options;

  const Tensor batch = timing_batch(dataset, sample, inputs.model.config.preprocess, spec.batch);
  const std::optional<ChildTiming> child = child_timing_for(inputs, *built.engines.front());
  result.timed_region = study_timed_region(*built.engines.front(), child);
  result.timing_image = dataset.sample(sample.split.held_out.front()).name;
  std::vector<Engine*> engines;
  for (const auto& engine : built.engines) engines.push_back(engine.get());
  std::vector<LoadSample> load = {sample_load()};
  time_in_rounds(spec, engines, batch, result.variants, child);
  summarize_rounds(spec, result.variants);
  profile_variants(spec, inputs.backend, compile, built.plans, batch, result.variants);
  result.matrix = time_speed_matrix(
      inputs, sample.calibration, built.plans, result.variants,
      [&](std::int64_t size) { return timing_batch(dataset, sample, inputs.model.config.preprocess, size); },
      child);
  load.push_back(sample_load());
  result.timing = check_study_timing(load, result.environment, result.variants);
  result.fake_quant = fake_quant_check(inputs, dataset, sample, built, result.variants);
  attach_statistics(spec, result.variants);
  result.decision = decide(spec, result.variants, !result.timing.loaded());
  flag_non_finite_references(result);
  result.seconds = seconds_since(start);
  return result;
}

const VariantResult* find_variant(const StudyResult& result, const std::string& name) {
  for (const VariantResult& r : result.variants) {
    if (r.variant.name == name) return &r;
  }
  return nullptr;
}

std::filesystem::path variant_plan_path(const std::filesystem::path& out_dir, const std::string& variant) {
  // A pattern recipe can name dozens of layers; file systems take 255 bytes per name. A long name keeps
  // its start and gets a digest of the whole, so two variants never share a file.
  constexpr std::size_t kMaxStem = 96, kKeep = 80;
  std::string stem = slug(variant);
  if (stem.size() > kMaxStem) {
    const std::string digest = sha256_hex(std::as_bytes(std::span(variant.data(), variant.size())));
    stem = stem.substr(0, kKeep) + "_" + digest.substr(0, 12);
  }
  return out_dir / "plans" / (stem + ".kplan");
}

}  // namespace kiln
