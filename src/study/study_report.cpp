#include "study/study_report.h"

#include <cmath>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/json_formats.h"
#include "io/utf8_text.h"
#include "study/decision_headline.h"
#include "study/markdown_table.h"
#include "study/non_finite_check.h"
#include "study/report_format.h"
#include "study/report_sections.h"
#include "study/study_charts.h"
#include "study/study_folder.h"

namespace kiln {
namespace {

using Align = MarkdownTable::Align;

bool has_end_to_end(const StudyResult& result) {
  return !result.variants.empty() && !result.variants.front().round_end_to_end_ms.empty();
}

// Stress inputs with any NaN/Inf logit, "1 of 13": an input counts once however many logits it has.
std::string stress_non_finite(const EvalResult& eval) {
  return cat(stress_inputs_with_non_finite(eval), " of ", eval.stress.size());
}

// "97.50% (95% CI 96.71 .. 98.10)"
std::string percent_with_interval(const Interval& interval) {
  return cat(percent(interval.estimate), " (", fixed(100.0 * interval.low, 2), " .. ",
             fixed(100.0 * interval.high, 2), ")");
}

// A drop against the baseline in percentage points with its interval and McNemar p-value.
std::string drop_cell(const std::optional<PairedComparison>& comparison) {
  if (!comparison) return "-";
  const Interval& drop = comparison->drop;
  return cat(fixed(100.0 * drop.estimate, 2), " (", fixed(100.0 * drop.low, 2), " .. ",
             fixed(100.0 * drop.high, 2), "), p ", p_value_text(comparison->mcnemar_p));
}

// How the decision reads the figures: the thresholds and the statistics behind each.
std::string decision_rule(const StudyResult& result) {
  const StudySpec& spec = result.inputs.spec;
  std::ostringstream md;
  md << "A bf16, FP8 or int8 variant ships when its median speed-up over " << spec.baseline << " is at least "
     << fixed(spec.min_speedup, 2) << "x, no output is NaN/Inf, and the upper end of the 95% interval of "
     << "each accuracy drop against " << spec.baseline << " on the same " << result.decision.held_out_images
     << " held-out images is within its threshold: " << fixed(100.0 * spec.max_agreement_drop, 2)
     << " points of top-1 agreement with fp32";
  if (result.decision.labelled) {
    md << " and " << fixed(100.0 * spec.max_top1_drop, 2) << " points of top-1 against labels";
  } else {
    md << " (the data is unlabelled, so top-1 against labels is not judged)";
  }
  md << ". It does not ship when it is slower than that, gives NaN/Inf, or a drop's interval lies wholly "
        "above its threshold; otherwise the images cannot tell. Intervals: Wilson score for each rate; "
        "Newcombe's hybrid score interval for the paired difference (each image seen by both); exact "
        "McNemar test on the images where the two differ.\n\n";
  return md.str();
}

std::string summary_section(const StudyResult& result) {
  const StudySpec& spec = result.inputs.spec;
  std::ostringstream md;
  md << "## Summary and decision\n\n" << decision_headline(result) << "\n\n" << decision_rule(result);
  for (const VariantVerdict& verdict : result.decision.verdicts) {
    md << "- **" << verdict.variant << ": " << ship_outcome_name(verdict.outcome) << "**";
    if (verdict.outcome == ShipOutcome::kCannotTell && !verdict.speed_judged) {
      md << " (timed on a loaded machine)";
    } else if (verdict.outcome == ShipOutcome::kCannotTell) {
      md << " with " << result.decision.held_out_images << " images"
         << (verdict.images_needed ? cat(" (about ", *verdict.images_needed, " would settle it)")
                                   : std::string(" (no number of images would settle it at these rates)"));
    }
    md << "\n";
    for (const std::string& reason : verdict.reasons) md << "  - " << reason << "\n";
  }
  const VariantResult* baseline = find_variant(result, spec.baseline);
  if (baseline != nullptr) {
    md << "\n"
       << spec.baseline << " runs in " << fixed(baseline->latency_ms.median, 3) << " ms per batch of "
       << spec.batch << " on the `" << result.inputs.backend << "` backend"
       << (result.timing.loaded() ? " (on a loaded machine: the load's figure, not its speed)." : ".");
  }
  if (result.inputs.backend.rfind("cpu", 0) == 0) {
    md << " The CPU backends simulate FP8 exactly but have no FP8 arithmetic, so FP8 cannot be faster here: "
          "this study's speed figures only say what the simulation costs; its accuracy figures are the ones "
          "an FP8 engine with these scales gives.";
  }
  md << "\n\n";
  return md.str();
}

}  // namespace

std::string recipe_section(const StudyResult& result) {
  std::ostringstream md;
  md << "## Recipe\n\n"
     << "FP8 E4M3 weights with one scale per output channel (amax / 448 of the batch-norm-folded kernel, "
        "computed at build time); activations with one static scale per tensor from calibration on "
     << result.data.value("calibration_images", 0)
     << " images; layers outside FP8 in fp16; FP8 layers read "
        "E4M3 values, accumulate in fp32 and write fp16 (docs/QUANTIZATION.md). The recipes, in this "
        "family:\n\n"
     << recipe_list(result);
  MarkdownTable table(
      {{"variant"}, {"precision"}, {"recipe"}, {"calibrator"}, {"FP8 convolutions", Align::kRight}});
  for (const VariantResult& r : result.variants) {
    const bool fp8 = is_quantized(r.variant.precision);
    table.add_row({r.variant.name, std::string(precision_name(r.variant.precision)),
                   fp8 ? r.variant.recipe : "-",
                   fp8 ? std::string(calibration_method_name(r.variant.method)) : "-",
                   cat(r.fp8_layers, " of ", r.convolutions)});
  }
  md << table.str() << "\n";
  return md.str();
}

// Latency, throughput and plan size of every variant, each against the baseline; the end-to-end
// latency where the timed region is the device's alone.
std::string speed_table(const StudyResult& result) {
  const VariantResult* baseline = find_variant(result, result.inputs.spec.baseline);
  std::vector<MarkdownTable::Column> columns = {{"variant"},
                                                {"latency ms (median)", Align::kRight},
                                                {"spread ms", Align::kRight},
                                                {"images/s", Align::kRight},
                                                {"vs " + result.inputs.spec.baseline, Align::kRight},
                                                {"plan MiB", Align::kRight},
                                                {"size vs " + result.inputs.spec.baseline, Align::kRight}};
  if (has_end_to_end(result)) columns.push_back({"end-to-end ms (median)", Align::kRight});
  MarkdownTable speed(columns);
  for (const VariantResult& r : result.variants) {
    const double size_ratio =
        baseline != nullptr ? static_cast<double>(r.plan_bytes) / static_cast<double>(baseline->plan_bytes)
                            : NAN;
    std::vector<std::string> row = {r.variant.name,
                                    fixed(r.latency_ms.median, 3),
                                    fixed(r.latency_ms.low, 3) + " .. " + fixed(r.latency_ms.high, 3),
                                    fixed(r.images_per_second.median, 1),
                                    fixed(r.speedup.median, 3) + "x (" + fixed(r.speedup.low, 2) + " .. " +
                                        fixed(r.speedup.high, 2) + ")",
                                    fixed(static_cast<double>(r.plan_bytes) / (1024.0 * 1024.0), 2),
                                    fixed(size_ratio, 2) + "x"};
    if (has_end_to_end(result)) row.push_back(fixed(r.end_to_end_ms.median, 3));
    speed.add_row(row);
  }
  return speed.str();
}

namespace {

// Agreement and error against fp32, accuracy when the data is labelled, and NaN/Inf counts; each rate
// with its 95% interval and each drop against the baseline with its paired interval and p-value.
std::string quality_table(const StudyResult& result) {
  const bool labelled = !result.variants.empty() && result.variants[0].eval.labels.has_value();
  const std::string& baseline = result.inputs.spec.baseline;
  std::vector<MarkdownTable::Column> columns = {
      {"variant"},
      {"agreement with fp32 (95% CI)", Align::kRight},
      {"agreement drop vs " + baseline + ", points (95% CI), McNemar p", Align::kRight},
      {"logit error", Align::kRight},
      {"worst image error", Align::kRight}};
  if (labelled) {
    columns.push_back({"top-1 (95% CI)", Align::kRight});
    columns.push_back({"top-1 drop vs " + baseline + ", points (95% CI), McNemar p", Align::kRight});
    columns.push_back({"top-5", Align::kRight});
  }
  columns.push_back({"NaN/Inf images", Align::kRight});
  columns.push_back({"NaN/Inf in stress inputs", Align::kRight});
  MarkdownTable quality(columns);
  for (const VariantResult& r : result.variants) {
    const QualityStatistics& stats = r.statistics;
    const bool is_baseline = r.variant.name == baseline;
    std::vector<std::string> row = {r.variant.name};
    if (r.eval.reference && stats.agreement) {
      row.push_back(percent_with_interval(*stats.agreement));
      row.push_back(is_baseline ? "baseline" : drop_cell(stats.agreement_vs_baseline));
      row.push_back(scientific(r.eval.reference->relative_error()));
      row.push_back(scientific(r.eval.reference->max_image_relative_error()));
    } else {
      row.insert(row.end(), {"n/a", "n/a", "n/a", "n/a"});
    }
    if (labelled) {
      row.push_back(stats.top1 ? percent_with_interval(*stats.top1) : "n/a");
      row.push_back(is_baseline ? "baseline" : drop_cell(stats.top1_vs_baseline));
      row.push_back(r.eval.labels ? percent(r.eval.labels->top5()) : "n/a");
    }
    row.push_back(cat(r.eval.images_with_non_finite, " of ", r.eval.images_evaluated));
    row.push_back(cat(stress_non_finite(r.eval)));
    quality.add_row(row);
  }
  return quality.str();
}

}  // namespace

// One column per layer group any variant has, so the variants line up even where a group is missing.
std::string kernel_time_table(const StudyResult& result) {
  std::set<std::string> groups;
  for (const VariantResult& r : result.variants) {
    for (const auto& [group, ms] : r.profile.group_ms) groups.insert(group);
  }
  std::vector<MarkdownTable::Column> group_columns = {{"variant"}};
  for (const std::string& group : groups) group_columns.push_back({group + " ms", Align::kRight});
  group_columns.push_back({"total ms", Align::kRight});
  MarkdownTable kernels(group_columns);
  for (const VariantResult& r : result.variants) {
    std::vector<std::string> row = {r.variant.name};
    for (const std::string& group : groups) {
      const auto it = r.profile.group_ms.find(group);
      const double ms = it == r.profile.group_ms.end() ? 0.0 : it->second;
      row.push_back(fixed(ms, 3) + " (" +
                    fixed(r.profile.total_ms > 0 ? 100.0 * ms / r.profile.total_ms : 0.0, 0) + "%)");
    }
    row.push_back(fixed(r.profile.total_ms, 3));
    kernels.add_row(row);
  }
  return kernels.str();
}

namespace {

// The auto recipe's search: error and agreement as more sensitive layers are kept out of FP8.
std::string auto_recipe_section(const VariantResult& r) {
  const nlohmann::json& search = r.quantization["auto"];
  const int kept = search.value("kept_out_of_fp8", 0);
  std::ostringstream md;
  md << "### auto recipe: " << r.variant.name << "\n\nTarget `" << search.value("target", "") << "` on "
     << search.value("images", 0) << " calibration images; " << kept
     << (kept == 1 ? " convolution" : " convolutions")
     << " kept in fp16. Each row keeps the k most sensitive out of FP8:\n\n";
  MarkdownTable curve({{"kept in fp16", Align::kRight},
                       {"logit error", Align::kRight},
                       {"agreement", Align::kRight},
                       {"meets target"}});
  for (const auto& point : search.value("curve", nlohmann::json::array())) {
    curve.add_row({cat(point.value("kept", 0)), scientific(point.value("logit_error", 0.0)),
                   percent(point.value("agreement", 0.0)),
                   point.value("meets_target", false) ? "yes" : "no"});
  }
  md << curve.str() << "\nMost sensitive convolutions (output error when quantized alone): ";
  const auto& sensitivity = search.value("sensitivity", nlohmann::json::array());
  for (std::size_t i = 0; i < std::min<std::size_t>(5, sensitivity.size()); ++i) {
    md << (i ? ", " : "") << "`" << sensitivity[i].value("layer", "") << "` "
       << scientific(sensitivity[i].value("logit_error", 0.0));
  }
  md << ".\n\n";
  return md.str();
}

// The auto recipe searched on calibration images only: whether its target holds on the held-out ones.
std::string auto_held_out_text(const StudyResult& result, const VariantResult& r) {
  for (const VariantVerdict& verdict : result.decision.verdicts) {
    if (verdict.variant != r.variant.name || !verdict.auto_target) continue;
    const AutoTargetCheck& check = *verdict.auto_target;
    std::ostringstream md;
    md << "The search compared on " << check.search_images
       << " calibration images, none of them held out. On the " << check.held_out_images
       << " held-out images the target `" << check.target << "` is **" << auto_verdict_name(check.verdict)
       << "**: logit error " << scientific(check.held_out_logit_error)
       << " (search: " << scientific(check.search_logit_error) << "), agreement with fp32 "
       << percent_with_interval(check.held_out_agreement) << " (search: " << percent(check.search_agreement)
       << ").";
    if (check.verdict == AutoTargetCheck::Verdict::kMissed) {
      md << " The layers chosen on the search images do not generalize to the held-out ones: search on more "
            "images (`sensitivity_images`) or tighten the target.";
    }
    return md.str() + "\n\n";
  }
  return "";
}

std::string results_section(const StudyResult& result) {
  std::ostringstream md;
  md << "## Results\n\n### Speed and size\n\n"
     << speed_table(result) << "\n![latency per variant](latency.svg)\n\n### Quality\n\n"
     << quality_table(result) << "\n![accuracy against speed](accuracy_vs_speed.svg)\n\n"
     << fake_quant_section(result.fake_quant, result.inputs.spec.max_top1_drop)
     << "### Kernel time per group\n\n"
     << kernel_time_table(result) << "\n"
     << speed_matrix_section(result);
  for (const VariantResult& r : result.variants) {
    if (r.quantization.contains("auto")) md << auto_recipe_section(r) << auto_held_out_text(result, r);
  }
  return md.str();
}

}  // namespace

std::string study_markdown(const StudyResult& result) {
  std::ostringstream md;
  md << "# " << result.family << " FP8 study\n\n" << warnings_block(result);
  if (result.inputs.demo) md << demo_note(result);
  md << summary_section(result) << recipe_section(result) << method_section(result)
     << environment_section(result) << results_section(result) << not_tried_section(result)
     << revisit_section(result) << "## Re-run\n\n```sh\n"
     << result.inputs.command
     << "\n```\n\nEvery number above is in `study.json`; the plans are in `plans/`.\n";
  return md.str();
}

std::vector<std::string> StudyResult::all_warnings() const {
  std::vector<std::string> all = warnings;
  all.insert(all.end(), timing.warnings.begin(), timing.warnings.end());
  return all;
}

nlohmann::json StudyResult::to_json() const {
  nlohmann::json variants_json = nlohmann::json::array();
  for (const VariantResult& r : variants) {
    nlohmann::json profile = {{"groups_ms", r.profile.group_ms}, {"total_ms", r.profile.total_ms}};
    variants_json.push_back(
        {{"name", r.variant.name},
         {"precision", precision_name(r.variant.precision)},
         {"recipe", r.variant.recipe},
         {"plan", r.plan_file.filename().string()},
         {"plan_bytes", r.plan_bytes},
         {"convolutions", r.convolutions},
         {"fp8_convolutions", r.fp8_layers},
         {"kept_fp16_by_precision_tactic", r.quantization.value("precision_tactic", nlohmann::json::object())
                                               .value("kept_fp16", nlohmann::json::array())
                                               .size()},
         {"kept_fp16_unsupported", r.quantization.value("kept_fp16_unsupported", nlohmann::json::array())},
         {"build_seconds", r.build_seconds},
         {"latency_ms",
          {{"median", r.latency_ms.median},
           {"low", r.latency_ms.low},
           {"high", r.latency_ms.high},
           {"rounds", r.round_medians_ms}}},
         {"images_per_second",
          {{"median", r.images_per_second.median},
           {"rounds", r.round_images_per_second},
           {"definition", "per round: timed runs x batch / wall seconds of the timed runs"}}},
         {"end_to_end_ms",
          {{"median", r.end_to_end_ms.median},
           {"rounds", r.round_end_to_end_ms},
           {"definition",
            "host clock around Engine::run, input and output copies included (device backends)"}}},
         {"speedup", {{"median", r.speedup.median}, {"low", r.speedup.low}, {"high", r.speedup.high}}},
         {"eval", kiln::to_json(r.eval)},
         {"statistics", kiln::to_json(r.statistics)},
         {"kernel_time", profile},
         {"quantization", r.quantization},
         {"non_finite_inputs",
          {{"images", r.eval.images_with_non_finite},
           {"of_images", r.eval.images_evaluated},
           {"stress_inputs", stress_inputs_with_non_finite(r.eval)},
           {"of_stress_inputs", r.eval.stress.size()}}}});
  }
  return {{"format", json_format::kStudy},
          {"family", family},
          {"demo", inputs.demo},
          {"backend", inputs.backend},
          {"timed_region", timed_region},
          {"timing_image", timing_image},
          {"command", inputs.command},
          {"checkpoint", inputs.model.checkpoint_name},
          {"checkpoint_sha256", checkpoint_sha256},
          {"spec", inputs.spec.to_json()},
          {"data", data},
          {"environment", environment.to_json()},
          {"variants", variants_json},
          {"speed_matrix", matrix.to_json()},
          {"fake_quantization", fake_quant.to_json()},
          {"warnings", all_warnings()},
          {"timing_outliers", timing.outliers},
          {"decision", kiln::to_json(decision)},
          {"seconds", seconds}};
}

void write_study(const std::filesystem::path& dir, const StudyResult& result) {
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const std::string& text) {
    // Names of files, variants and layers are the user's bytes; the report is text.
    write_file_atomically(dir / name, [&](std::ostream& out) { out << valid_utf8(text); });
  };
  write("latency.svg", latency_chart(result));
  write("accuracy_vs_speed.svg", accuracy_chart(result));
  write("study.json", json_text(result.to_json()));
  write("STUDY.md", study_markdown(result));
  finish_study_folder(dir);
}

}  // namespace kiln
