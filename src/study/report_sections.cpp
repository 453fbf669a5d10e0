#include "study/report_sections.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "core/error.h"
#include "quant/layer_selection.h"
#include "study/markdown_table.h"
#include "study/non_finite_check.h"
#include "study/report_format.h"

namespace kiln {
namespace {

using Align = MarkdownTable::Align;

bool on_cpu(const StudyResult& result) { return result.inputs.backend.rfind("cpu", 0) == 0; }

// What a recipe selects by kiln's definition (quant/layer_selection.h), for families that say nothing.
std::string generic_recipe_text(const std::string& recipe) {
  if (recipe == "all") return "every convolution but the stem (`conv1`, `conv1.*`, `conv_stem`)";
  if (recipe == "nose") return "`all` less the attention gates' convolutions (`*.fc1`, `*.fc2`, `*.se.*`)";
  if (recipe == "nose-L1") return "`nose` less the first stage (`layer1.*`)";
  if (recipe == "auto") return "the most sensitive convolutions kept in fp16 until the target is met";
  return "the convolutions the patterns select";
}

}  // namespace

std::string demo_note(const StudyResult& result) {
  const std::string& hub = result.inputs.hub_id;
  const std::string name = hub.empty() ? result.family : hub.substr(hub.find('/') + 1);
  std::ostringstream md;
  const std::string& description = result.inputs.spec.demo_description;
  md << "> **Demo run.** "
     << (description.empty()
             ? std::string("A reduced model and data from the repository's test data")
             : cat(static_cast<char>(std::toupper(static_cast<unsigned char>(description[0]))),
                   description.substr(1)))
     << " (`" << result.inputs.model.checkpoint_name
     << "`). The figures are real for this small model on these images; its speed and its FP8 behaviour "
        "are not those of the full-size model. For that, run the study on the Hub checkpoint"
     << (hub.empty() ? "" : cat(" (`", hub, "`)"))
     << " and labelled validation data, on a GPU for FP8's speed:\n>\n> `kiln study families/"
     << result.family << " --checkpoint " << name
     << "/model.safetensors --data 'validation-{000000..000063}.tar' "
     << "--backend cuda -o study`\n\n";
  return md.str();
}

std::string warnings_block(const StudyResult& result) {
  std::ostringstream md;
  for (const std::string& warning : result.warnings) md << "> **Warning: " << warning << ".**\n>\n";
  for (const std::string& warning : result.timing.warnings) {
    md << "> **Warning: " << warning
       << ": the latencies and speed-ups below are this machine's load, not the variants' speed, and the "
          "decision judges no speed.**\n>\n";
  }
  for (const std::string& outlier : result.timing.outliers) md << "> Outlying round: " << outlier << ".\n>\n";
  std::string text = md.str();
  if (!text.empty()) text.resize(text.size() - 2);  // no empty quote line at the end
  return text.empty() ? text : text + "\n";
}

// " (12 more kept fp16 by the precision tactic: their fp16 convolutions timed faster)", the same for
// recipe layers the backend has no FP8 kernel for, or nothing.
std::string kept_fp16_text(const nlohmann::json& quantization) {
  const nlohmann::json tactic = quantization.value("precision_tactic", nlohmann::json::object());
  const std::size_t faster = tactic.value("kept_fp16", nlohmann::json::array()).size();
  const std::size_t unsupported = quantization.value("kept_fp16_unsupported", nlohmann::json::array()).size();
  std::string text;
  if (unsupported > 0)
    text += cat(" (", unsupported, " more kept fp16: the backend has no FP8 kernel for their shapes)");
  if (faster > 0)
    text +=
        cat(" (", faster, " more kept fp16 by the precision tactic: their fp16 convolutions timed faster)");
  return text;
}

std::string recipe_list(const StudyResult& result) {
  const StudyFamilyText& family = result.inputs.spec.text;
  std::ostringstream md;
  std::set<std::string> listed;
  for (const VariantResult& r : result.variants) {
    if (!is_quantized(r.variant.precision) || !listed.insert(r.variant.recipe).second) continue;
    const auto text = family.recipes.find(r.variant.recipe);
    md << "- `" << r.variant.recipe
       << "`: " << (text != family.recipes.end() ? text->second : generic_recipe_text(r.variant.recipe));
    if (r.variant.recipe == "auto") md << " (`" << auto_target_str(result.inputs.spec.auto_target) << "`)";
    md << "; " << r.fp8_layers << " of " << r.convolutions << " convolutions in FP8 here"
       << kept_fp16_text(r.quantization) << ".\n";
  }
  return listed.empty() ? "" : md.str() + "\n";
}

namespace {

// Which images calibrate and which are held out: every k-th of the sample, or a separate data set.
std::string calibration_split_text(const StudyResult& result) {
  const nlohmann::json& data = result.data;
  if (!data.contains("calibration_source")) {
    return cat("every ", result.inputs.spec.every, "th sampled image calibrates (",
               data.value("calibration_images", 0), "), the other ", data.value("held_out_images", 0),
               " are held out and");
  }
  const nlohmann::json& calibration = data.at("calibration_source");
  return cat("all ", data.value("held_out_images", 0),
             " are held out (calibration: ", calibration.value("calibration_images", 0), " images of `",
             calibration.value("data", ""), "`, a fixed-stride sample of its ",
             calibration.value("dataset_images", 0), ", none of them held out) and");
}

}  // namespace

std::string model_line(const StudyResult& result, const std::string& parts) {
  const StudyInputs& inputs = result.inputs;
  const std::string manifest_checkpoint =
      inputs.hub_id.empty() ? "" : cat("; the manifest's own checkpoint is `", inputs.hub_id, "`");
  return cat("- Model: ", result.family, parts.empty() ? "" : ": " + parts, ". This run: `",
             inputs.model.checkpoint_name, "` (",
             inputs.demo ? "the demo's checkpoint" : "given by --checkpoint", manifest_checkpoint, ")");
}

std::string method_section(const StudyResult& result) {
  const StudySpec& spec = result.inputs.spec;
  const nlohmann::json& data = result.data;
  std::ostringstream md;
  md << "## Method\n\n"
     << model_line(result, spec.text.parts) << ".\n- Data: `" << data.value("source", "") << "` ("
     << data.value("kind", "") << ", " << data.value("dataset_images", 0)
     << " images): a fixed-stride sample of " << data.value("sample", 0) << "; "
     << calibration_split_text(result) << " every accuracy figure is measured on them.\n"
     << "- Reference: the fp32 build of the same checkpoint on the same backend; agreement is top-1 "
        "agreement "
        "with it, logit error is ||y - ref|| / ||ref|| over all held-out logits.\n"
     << "- NaN/Inf: counted per input, an input counting once however many of its logits are NaN or Inf: "
        "every held-out image and "
     << (result.variants.empty() ? 0 : result.variants[0].eval.stress.size())
     << " stress inputs (zeros, constant colours, saturated values, checkerboards, large noise, the ends of "
        "the preprocessing range).\n"
     << "- Timed region, as `kiln bench` times the same plan: " << result.timed_region << ", on a batch of "
     << spec.batch << " (the held-out image `" << result.timing_image
     << "` repeated; `kiln bench PLAN --input` on its `kiln preprocess` .npy times the same batch) at "
     << "optimization level " << spec.opt_level << ". Each variant gets " << spec.warmup_seconds
     << " s of warm-up then " << spec.seconds_per_round << " s of timed runs per round; " << spec.rounds
     << " rounds, the variants interleaved with the first one rotating, so drift and order hit them alike. "
        "Latency is the median of the round medians; the spread is their min..max; a speed-up is the median "
        "of per-round ratios against "
     << spec.baseline << ".\n"
     << "- Speed matrix: the baseline and one variant per FP8 recipe at every batch of `batches` and level "
        "of `opt_levels`, one round of "
     << spec.matrix_seconds << " s per variant after one warm-up run, plans at other levels built anew.\n"
     << "- Kernel time per group: " << spec.profile_iterations
     << " profiled runs per variant (each layer timed on its own), mean per run.\n\n";
  return md.str();
}

std::string environment_section(const StudyResult& result) {
  const Environment& env = result.environment;
  MarkdownTable table({{"item"}, {"value"}});
  table.add_row({"date (UTC)", env.date_utc});
  table.add_row({"CPU", cat(env.host_cpu, ", ", env.cpu_threads, " hardware threads")});
  table.add_row({"CPU ISA", env.cpu_isa});
  table.add_row(
      {"load average at start",
       env.load_average + (env.overloaded() ? cat(" (**above the ", env.cpu_threads,
                                                  " hardware threads: other work shared the CPU, so "
                                                  "host-side timings are inflated**)")
                                            : std::string())});
  table.add_row({"OS", env.os});
  for (const BackendFact& fact : env.backend_facts) table.add_row({fact.label, fact.value});
  table.add_row({"backend studied", result.inputs.backend});
  if (!env.backend_options.empty()) {
    std::string options;
    for (const auto& [name, value] : env.backend_options)
      options += cat(options.empty() ? "" : ", ", name, "=", value);
    table.add_row({"backend options", options});
  }
  table.add_row({"kiln", cat(env.kiln_version, " (commit ", env.kiln_commit, ")")});
  table.add_row({"compiler", env.compiler});
  table.add_row({"family", result.family});
  table.add_row(
      {"checkpoint", cat(result.inputs.model.checkpoint_name, ", sha256 ", result.checkpoint_sha256)});
  table.add_row({"study time", cat(fixed(result.seconds, 1),
                                   " s (speed matrix: ", fixed(result.matrix.seconds, 1), " s)")});
  return "## Environment\n\n" + table.str() + "\n";
}

namespace {

std::string level_table(const StudyResult& result) {
  MarkdownTable table({{"opt level"}, {"graph passes"}, {"tactics"}, {"plan"}});
  for (const OptLevelEffect& level : result.matrix.levels) {
    std::string passes;
    for (const std::string& pass : level.passes) passes += (passes.empty() ? "" : ", ") + pass;
    const std::string plan = level.level == result.inputs.spec.opt_level ? "the study's level"
                             : level.same_as >= 0
                                 ? cat("the same plan as level ", level.same_as,
                                       ": the levels do not differ on this backend, so not timed again")
                                 : "its own plan, built for this table";
    table.add_row({cat(level.level), passes.empty() ? "none" : passes, level.tactics, plan});
  }
  return table.str();
}

std::string cell_table(const SpeedMatrix& matrix, const std::string& baseline) {
  MarkdownTable table({{"batch", Align::kRight},
                       {"opt level", Align::kRight},
                       {"variant"},
                       {"latency ms", Align::kRight},
                       {"images/s", Align::kRight},
                       {"vs " + baseline, Align::kRight},
                       {"plan MiB", Align::kRight},
                       {"timing"}});
  for (const MatrixCell& c : matrix.cells) {
    table.add_row({cat(c.batch), cat(c.opt_level), c.variant, fixed(c.latency_ms, 3),
                   fixed(c.images_per_second, 1), fixed(c.speedup, 2) + "x",
                   fixed(static_cast<double>(c.plan_bytes) / (1024.0 * 1024.0), 2),
                   c.main_study ? "the main rounds" : "one short round"});
  }
  return table.str();
}

// The fastest FP8 or int8 variant in the matrix at `batch` and the study's level; null when there is none.
const MatrixCell* fastest_quantized(const StudyResult& result, std::int64_t batch) {
  const MatrixCell* best = nullptr;
  for (const MatrixCell& c : result.matrix.cells) {
    const VariantResult* r = find_variant(result, c.variant);
    if (c.batch != batch || c.opt_level != result.inputs.spec.opt_level || r == nullptr ||
        !is_quantized(r->variant.precision))
      continue;
    if (best == nullptr || c.speedup > best->speedup) best = &c;
  }
  return best;
}

}  // namespace

std::string speed_matrix_section(const StudyResult& result) {
  const SpeedMatrix& matrix = result.matrix;
  std::ostringstream md;
  md << "### Speed at other batches and optimization levels\n\n";
  if (matrix.cells.empty()) {
    return md.str() +
           "Only the study's own batch and level were timed (`batches` and `opt_levels` in the "
           "manifest's [study] name more).\n\n";
  }
  md << "What each optimization level does on the `" << result.inputs.backend << "` backend:\n\n"
     << level_table(result) << "\nThe baseline and one variant per FP8 recipe at every batch and level ("
     << fixed(matrix.seconds, 1) << " s in all); a ratio compares variants in the same row group:\n\n"
     << cell_table(matrix, result.inputs.spec.baseline) << "\n";
  return md.str();
}

std::string not_tried_section(const StudyResult& result) {
  const StudySpec& spec = result.inputs.spec;
  std::set<std::string> recipes, calibrators;
  for (const StudyVariant& v : spec.variants) {
    if (!is_quantized(v.precision)) continue;
    recipes.insert(v.recipe);
    calibrators.insert(std::string(calibration_method_name(v.method)));
  }
  const auto missing = [](const std::vector<std::string>& all, const std::set<std::string>& tried) {
    std::vector<std::string> names;
    for (const std::string& name : all) {
      if (tried.count(name) == 0) names.push_back(name);
    }
    return names;
  };
  std::ostringstream md;
  md << "## What was not tried\n\n";
  for (const std::string& recipe : missing({"all", "nose", "nose-L1", "auto"}, recipes)) {
    const auto text = spec.text.recipes.find(recipe);
    md << "- Recipe `" << recipe
       << "`: " << (text != spec.text.recipes.end() ? text->second : generic_recipe_text(recipe)) << ".\n";
  }
  std::string calibrator_list;
  for (const std::string& name : missing({"max", "percentile", "entropy", "mse"}, calibrators))
    calibrator_list += cat(calibrator_list.empty() ? "" : ", ", "`", name, "`");
  if (!calibrator_list.empty()) md << "- Calibrators " << calibrator_list << ".\n";
  std::string batches, levels;
  for (const std::int64_t b : result.matrix.batches) batches += cat(batches.empty() ? "" : ", ", b);
  for (const OptLevelEffect& l : result.matrix.levels) levels += cat(levels.empty() ? "" : ", ", l.level);
  md << "- Batch sizes other than " << (batches.empty() ? cat(spec.batch) : batches)
     << ", and optimization levels other than " << (levels.empty() ? cat(spec.opt_level) : levels) << ".\n";
  if (on_cpu(result)) md << "- The cuda backend, where FP8 layers run on E4M3 tensor cores.\n";
  md << "- Per-channel activation scales, E5M2, INT8 or 4-bit formats: kiln's FP8 recipe is E4M3 with one "
        "static scale per activation tensor, and kiln has no other low precision.\n"
     << "- Quantization-aware training or fine-tuning: kiln quantizes a trained checkpoint only.\n";
  for (const std::string& item : spec.text.not_tried) md << "- " << item << "\n";
  return md.str() + "\n";
}

namespace {

// The largest kernel-time share outside the convolutions in `profile`: FP8 speeds up convolutions only.
std::pair<std::string, double> largest_other_group(const LayerProfile& profile) {
  std::pair<std::string, double> largest{"", 0.0};
  for (const auto& [group, ms] : profile.group_ms) {
    if (group == "convolution" || group == "quantization" || profile.total_ms <= 0) continue;
    if (ms / profile.total_ms > largest.second) largest = {group, ms / profile.total_ms};
  }
  return largest;
}

// Measured reasons: separate quantize kernels, and the kernel time FP8 cannot touch.
void kernel_time_reasons(const StudyResult& result, std::ostringstream& md) {
  for (const VariantResult& r : result.variants) {
    const auto quantize = r.profile.group_ms.find("quantization");
    if (quantize == r.profile.group_ms.end() || r.profile.total_ms <= 0) continue;
    const double share = quantize->second / r.profile.total_ms;
    if (share < 0.03) continue;
    md << "- When input quantization is fused into the producers' epilogues: separate quantize kernels take "
       << percent(share) << " of " << r.variant.name << "'s kernel time.\n";
    break;
  }
  const VariantResult* baseline = find_variant(result, result.inputs.spec.baseline);
  if (baseline == nullptr) return;
  const auto [group, share] = largest_other_group(baseline->profile);
  if (share < 0.1) return;
  const std::string& other = result.inputs.spec.text.other_layers;
  md << "- When the layers outside the convolutions get faster"
     << (other.empty() ? "" : cat(" (in this family: ", other, ")")) << ": the `" << group
     << "` group alone takes " << percent(share) << " of " << baseline->variant.name
     << "'s kernel time, which FP8 does not speed up.\n";
}

// What the speed matrix says about larger batches, or the suggestion to time one.
void batch_reason(const StudyResult& result, std::ostringstream& md) {
  const StudySpec& spec = result.inputs.spec;
  std::int64_t largest = spec.batch;
  for (const std::int64_t b : result.matrix.batches) largest = std::max(largest, b);
  const MatrixCell* best = largest > spec.batch ? fastest_quantized(result, largest) : nullptr;
  if (best == nullptr) {
    if (spec.batch >= 32) return;  // the study's own batch is already compute-bound: nothing to add
    md << "- At larger batch sizes (`batches = [" << spec.batch << ", 32]` in [study], or `--batch 32`), "
       << "where convolutions are bound by compute rather than by launch latency.\n";
    return;
  }
  const bool fp8 = find_variant(result, best->variant)->variant.precision == Precision::kF8;
  md << "- At batch " << largest << " (speed matrix) the fastest FP8 or int8 variant, " << best->variant
     << ", ran at " << fixed(best->speedup, 2) << "x " << spec.baseline
     << (best->speedup >= spec.min_speedup ? ", above" : ", below") << " the " << fixed(spec.min_speedup, 2)
     << "x threshold: "
     << (best->speedup >= spec.min_speedup ? "revisit when the family builds that batch"
                                           : "a larger batch alone does not make quantization pay here")
     << (on_cpu(result) && fp8 ? " (on the CPU, FP8 is simulated)" : "") << ".\n";
}

}  // namespace

std::string revisit_section(const StudyResult& result) {
  std::ostringstream md;
  md << "## When to revisit\n\n";
  for (const std::string& condition : result.inputs.spec.text.revisit) md << "- " << condition << "\n";
  if (on_cpu(result)) {
    md << "- On a GPU (`--backend cuda`): the " << result.inputs.backend
       << " backend computes FP8 layers in f32 on dequantized weights, so its FP8 timings show the cost of "
          "the simulation, not FP8's speed; the cuda backend runs them on E4M3 tensor cores.\n";
  }
  if (result.timing.loaded()) {
    // Kernel shares and speed-ups timed under load are the load's; no reason is drawn from them.
    md << "- On an idle machine: this study's timings were taken under load (see the warnings above), so no "
          "reason here is drawn from them.\n";
  } else {
    kernel_time_reasons(result, md);
    batch_reason(result, md);
  }
  if (result.inputs.demo)
    md << "- With the real checkpoint and labelled validation data (this is the demo).\n";
  md << "\n";
  return md.str();
}

}  // namespace kiln
