#include "study/study_runner.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/progress.h"
#include "data/image_loop.h"
#include "data/open_dataset.h"
#include "data/sampling.h"
#include "plan/plan_writer.h"
#include "quant/calibration_images.h"
#include "quant/fp8_build.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Spread spread_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  return {median, values.front(), values.back()};
}

std::string two_digits(double value) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << value;
  return text.str();
}

std::string slug(const std::string& name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out;
}

Plan build_variant(const StudyInputs& inputs, const StudyVariant& variant,
                   const CalibrationImages& calibration) {
  BuildOptions options;
  options.precision = variant.precision;
  options.opt_level = inputs.spec.opt_level;
  options.batch = inputs.spec.batch;
  options.backend = inputs.backend;
  options.strict_backend = inputs.strict_backend;
  // Variants share convolution shapes: a backend that times kernels (cuda) times each shape once.
  options.tactic_cache = (inputs.out_dir / "plans" / "tactics.txt").string();
  if (variant.precision == Precision::kF8) {
    Fp8Settings settings;
    settings.recipe = variant.recipe;
    settings.method = variant.method;
    settings.auto_target = inputs.spec.auto_target;
    settings.sensitivity_images = inputs.spec.sensitivity_images;
    settings.fallback = Precision::kF16;
    options.fp8_fallback = Precision::kF16;
    options.quantizer = [settings, &calibration](Graph& graph) {
      return quantize_fp8(graph, settings, calibration);
    };
  }
  return build_plan(inputs.model, options).plan;
}

// An FP8 variant ships when it is fast enough against the baseline and loses little accuracy.
StudyDecision decide(const StudySpec& spec, const std::vector<VariantResult>& results) {
  StudyDecision decision;
  const auto baseline = std::find_if(results.begin(), results.end(),
                                     [&](const VariantResult& r) { return r.variant.name == spec.baseline; });
  double best_speedup = 0.0;
  for (const VariantResult& r : results) {
    if (r.variant.precision != Precision::kF8) continue;
    std::vector<std::string> failures;
    if (r.speedup.median < spec.min_speedup) {
      failures.push_back(
          cat("speed-up ", two_digits(r.speedup.median), "x < ", two_digits(spec.min_speedup), "x"));
    }
    if (r.eval.reference && baseline != results.end() && baseline->eval.reference) {
      const double drop = baseline->eval.reference->agreement() - r.eval.reference->agreement();
      if (drop > spec.max_agreement_drop) {
        failures.push_back(cat("top-1 agreement with fp32 drops by ", two_digits(100 * drop), " points > ",
                               two_digits(100 * spec.max_agreement_drop)));
      }
    }
    if (r.eval.labels && baseline != results.end() && baseline->eval.labels) {
      const double drop = baseline->eval.labels->top1() - r.eval.labels->top1();
      if (drop > spec.max_top1_drop) {
        failures.push_back(cat("top-1 drops by ", two_digits(100 * drop), " points > ",
                               two_digits(100 * spec.max_top1_drop)));
      }
    }
    std::int64_t stress_non_finite = 0;
    for (const StressResult& s : r.eval.stress) stress_non_finite += s.non_finite.total();
    if (r.eval.non_finite.total() + stress_non_finite > 0) failures.push_back("NaN/Inf in its outputs");
    if (failures.empty()) {
      decision.reasons.push_back(r.variant.name + ": passes");
      if (r.speedup.median > best_speedup) {
        best_speedup = r.speedup.median;
        decision.ship_fp8 = true;
        decision.variant = r.variant.name;
      }
    } else {
      std::string text = r.variant.name + ": ";
      for (std::size_t i = 0; i < failures.size(); ++i) text += (i ? "; " : "") + failures[i];
      decision.reasons.push_back(text);
    }
  }
  return decision;
}

// Fails before any work when the backend cannot run a variant's precision.
void check_backend_runs(const std::string& backend, const StudySpec& spec) {
  const auto be = make_backend(backend);
  for (const StudyVariant& variant : spec.variants) {
    // A one-convolution graph in the variant's precision, as the builder would make it.
    Graph probe;
    ValueId x = probe.add_input("x", {1, 16, 8, 8});
    ValueId w = probe.add_constant("w", Tensor(DType::kF32, {16, 16, 1, 1}));
    if (variant.precision == Precision::kF8) {
      x = probe.add_node(OpKind::kQuantize, "x.quantize", {x}, QuantizeAttrs{1.0f});
      const ValueId codes = probe.add_constant("w.fp8", Tensor(DType::kF8E4M3, {16, 16, 1, 1}));
      const ValueId scales =
          probe.add_constant("w.scale", Tensor::from_f32({16}, std::vector<float>(16, 1.0f)));
      w = probe.add_node(OpKind::kDequantize, "w.dequantize", {codes, scales});
    }
    const ValueId y = probe.add_node(OpKind::kConv2d, "conv", {x, w}, ConvAttrs{});
    probe.node(probe.value(y).producer).precision = variant.precision;
    require(be->supports(probe, probe.node(probe.value(y).producer)), "the ", backend, " backend cannot run ",
            precision_name(variant.precision), " layers (variant '", variant.name,
            "'): leave the variant out with --variants, or study it on a CPU backend");
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

  // Data: a fixed-stride sample, every k-th image calibrates, the rest are held out.
  const Dataset dataset = open_dataset(inputs.data);
  const std::size_t sample_size = std::min(dataset.size(), spec.images);
  const std::vector<std::size_t> sample = stride_sample(dataset.size(), sample_size);
  CalibrationSplit split = split_every(sample, spec.every);
  if (split.calibration.size() > spec.calibration_images) split.calibration.resize(spec.calibration_images);
  require(!split.held_out.empty(), inputs.data, ": the sample of ", sample_size,
          " images leaves none held out");
  const PreprocessConfig& preprocess = inputs.model.config.preprocess;
  const bool any_fp8 = std::any_of(spec.variants.begin(), spec.variants.end(),
                                   [](const StudyVariant& v) { return v.precision == Precision::kF8; });
  CalibrationImages calibration;
  if (any_fp8) calibration = load_calibration_images(dataset, split.calibration, preprocess, false);
  require(!any_fp8 || !calibration.images.empty(), inputs.data, ": no calibration image could be read");
  calibration.source = {{"data", inputs.data},
                        {"sample", sample_size},
                        {"every", spec.every},
                        {"calibration_images", calibration.images.size()}};
  result.data = {{"source", inputs.data},
                 {"kind", dataset_kind_name(dataset.kind())},
                 {"dataset_images", dataset.size()},
                 {"labelled", dataset.labelled()},
                 {"sample", sample_size},
                 {"every", spec.every},
                 {"calibration_images", calibration.images.size()},
                 {"held_out_images", split.held_out.size()}};

  // The fp32 reference every variant is compared with.
  CompileOptions compile;
  compile.batch = spec.batch;
  compile.strict_backend = inputs.strict_backend;
  std::set<std::string> warned;  // each distinct fallback warning once
  const auto warn_fallback = [&](const Engine& engine) {
    const std::string warning = fallback_warning(engine);
    if (!warning.empty() && warned.insert(warning).second) std::cerr << warning << "\n";
  };
  StudyVariant fp32{"fp32", Precision::kF32, "", CalibrationMethod::kMax};
  auto reference_plan = std::make_shared<const Plan>(build_variant(inputs, fp32, calibration));
  Engine reference(reference_plan, inputs.backend, compile);
  warn_fallback(reference);
  ReferenceLogitsCache reference_cache;

  std::filesystem::create_directories(inputs.out_dir / "plans");
  std::vector<std::shared_ptr<const Plan>> plans;
  std::vector<std::unique_ptr<Engine>> engines;
  for (const StudyVariant& variant : spec.variants) {
    std::cerr << "study: " << variant.name << "\n";
    VariantResult r;
    r.variant = variant;
    const auto build_start = Clock::now();
    auto plan = std::make_shared<const Plan>(build_variant(inputs, variant, calibration));
    r.build_seconds = seconds_since(build_start);
    r.plan_file = inputs.out_dir / "plans" / (slug(variant.name) + ".kplan");
    write_plan(r.plan_file, *plan);
    r.plan_bytes = std::filesystem::file_size(r.plan_file);
    for (const Node& node : plan->graph.nodes()) {
      if (node.dead || node.op != OpKind::kConv2d) continue;
      ++r.convolutions;
      r.fp8_layers += node.precision == Precision::kF8 ? 1 : 0;
    }
    r.quantization = plan->info.quantization;
    plans.push_back(plan);
    engines.push_back(std::make_unique<Engine>(plan, inputs.backend, compile));
    warn_fallback(*engines.back());
    EvalOptions eval;
    eval.progress = true;
    eval.reference_cache = &reference_cache;
    r.eval = evaluate(*engines.back(), &reference, dataset, split.held_out, eval);
    result.variants.push_back(std::move(r));
  }

  // Timing: rounds over every variant, the starting variant rotating, so drift and order hit all alike.
  Tensor input;
  std::ostringstream quiet;  // the image was read fine during evaluation; no summary line needed
  for_each_image(
      dataset, std::span<const std::size_t>(split.held_out).first(1), preprocess,
      [&](std::size_t, const Tensor& image) { input = image; }, true, nullptr, quiet);
  Tensor batch(DType::kF32, {spec.batch, input.dim(0), input.dim(1), input.dim(2)});
  for (std::int64_t b = 0; b < spec.batch; ++b) {
    std::copy(input.f32().begin(), input.f32().end(), batch.mutable_f32().begin() + b * input.numel());
  }
  BenchSettings bench;
  bench.warmup_seconds = spec.warmup_seconds;
  bench.duration_seconds = spec.seconds_per_round;
  bench.min_iterations = 5;
  const std::size_t n = engines.size();
  {
    Progress progress("timing rounds", static_cast<std::size_t>(spec.rounds) * n);
    for (int round = 0; round < spec.rounds; ++round) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = (k + static_cast<std::size_t>(round)) % n;
        const LatencyStats stats = summarize(time_engine(*engines[i], batch, bench), spec.batch);
        result.variants[i].round_medians_ms.push_back(stats.median_ms);
        progress.advance();
      }
    }
    progress.finish();
  }
  const auto baseline = std::find_if(result.variants.begin(), result.variants.end(),
                                     [&](const VariantResult& r) { return r.variant.name == spec.baseline; });
  for (VariantResult& r : result.variants) {
    r.latency_ms = spread_of(r.round_medians_ms);
    std::vector<double> ratios;
    for (int round = 0; round < spec.rounds; ++round) {
      ratios.push_back(baseline->round_medians_ms[static_cast<std::size_t>(round)] /
                       r.round_medians_ms[static_cast<std::size_t>(round)]);
    }
    r.speedup = spread_of(ratios);
  }

  // Kernel time per layer group, from separately compiled profiling engines.
  CompileOptions profiled = compile;
  profiled.profile = true;
  for (std::size_t i = 0; i < n; ++i) {
    Engine engine(plans[i], inputs.backend, profiled);
    result.variants[i].profile = profile_engine(engine, batch, spec.profile_iterations);
  }
  result.decision = decide(spec, result.variants);
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace kiln
