#include "study/detector_report.h"

#include <cctype>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/json_formats.h"
#include "io/utf8_text.h"
#include "study/detector_charts.h"
#include "study/markdown_table.h"
#include "study/non_finite_check.h"
#include "study/report_format.h"
#include "study/report_sections.h"
#include "study/study_charts.h"
#include "study/study_folder.h"
#include "study/study_report.h"

namespace kiln {
namespace {

using Align = MarkdownTable::Align;

std::string points(double fraction) { return fixed(100.0 * fraction, 2); }

// "0.40 (-0.12 .. 0.93)" in points.
std::string drop_cell(const std::optional<MapDrop>& drop, bool strict) {
  if (!drop) return "-";
  const Interval& d = strict ? drop->map50_95 : drop->map50;
  return cat(points(d.estimate), " (", points(d.low), " .. ", points(d.high), ")");
}

// The stress inputs with any NaN/Inf output, by name ("noise_1000"); an input counts once.
std::vector<std::string> non_finite_stress(const EvalResult& eval) {
  std::vector<std::string> names;
  for (const StressResult& s : eval.stress) {
    if (s.non_finite.total() > 0) names.push_back(s.name);
  }
  return names;
}

// "1 of 13 (noise_1000)"
std::string stress_cell(const EvalResult& eval) {
  std::string named;
  for (const std::string& name : non_finite_stress(eval)) named += (named.empty() ? "" : ", ") + name;
  return cat(stress_inputs_with_non_finite(eval), " of ", eval.stress.size(),
             named.empty() ? std::string() : " (" + named + ")");
}

std::string decision_headline(const DetectorStudyResult& result) {
  const DetectorDecision& decision = result.decision;
  if (!decision.speed_judged && decision.outcome != ShipOutcome::kDoNotShip) {
    return "**Cannot tell: the timings were taken on a loaded machine** (see the warnings above), so no "
           "speed-up is judged; re-run the study on an idle machine.";
  }
  switch (decision.outcome) {
    case ShipOutcome::kShip:
      return cat("**Ship FP8: ", decision.variant, ".** It meets every threshold below at 95% confidence.");
    case ShipOutcome::kCannotTell:
      return cat(
          "**Cannot tell with ", decision.held_out_images,
          " held-out images** whether an FP8 variant meets the thresholds: no variant is shown to meet "
          "them all, and at least one threshold lies inside an mAP drop's 95% interval; more held-out "
          "images narrow the intervals.");
    case ShipOutcome::kDoNotShip:
      break;
  }
  if (decision.verdicts.empty()) return "**Do not ship FP8.** The study has no FP8 variant.";
  return "**Do not ship FP8.** Every FP8 variant misses a threshold: too slow, NaN/Inf, boxes that fail the "
         "parity gate, or an mAP drop whose 95% interval lies above its threshold.";
}

std::string decision_rule(const DetectorStudyResult& result) {
  const DetectorStudySpec& spec = result.spec;
  const BoxParitySummary gate = result.quality.empty() ? BoxParitySummary{} : result.quality.front().parity;
  std::ostringstream md;
  md << "An FP8 variant ships when its median speed-up over " << spec.study.baseline << " is at least "
     << fixed(spec.study.min_speedup, 2) << "x, no output is NaN/Inf, its boxes pass the parity gate against "
     << "the fp32 build (every fp32 box scoring " << fixed(spec.parity_min_score, 3)
     << " or more matched with IoU >= " << fixed(gate.gate_min_iou, 2)
     << " and |score difference| <= " << fixed(gate.gate_max_score_diff, 3)
     << ", none missing or extra), and the upper end of the 95% "
     << "interval of each mAP drop against " << spec.study.baseline << " on the same "
     << result.decision.held_out_images
     << " held-out images is within its threshold: " << points(spec.max_map_drop)
     << " points of mAP@0.5:0.95 and " << points(spec.max_map50_drop)
     << " points of mAP@0.5. It does not ship when it is slower than that, gives NaN/Inf, fails the gate, "
        "or a drop's interval lies wholly above its threshold; otherwise the images cannot tell. The drop's "
        "interval: a paired bootstrap over the held-out images ("
     << spec.bootstrap_resamples << " resamples, seed " << spec.bootstrap_seed
     << "), both engines' mAP on each resample, the 2.5th and 97.5th percentiles of the differences.\n\n";
  return md.str();
}

std::string summary_section(const DetectorStudyResult& result) {
  std::ostringstream md;
  md << "## Summary and decision\n\n" << decision_headline(result) << "\n\n" << decision_rule(result);
  for (const DetectorVerdict& verdict : result.decision.verdicts) {
    md << "- **" << verdict.variant << ": " << ship_outcome_name(verdict.outcome) << "**\n";
    for (const std::string& reason : verdict.reasons) md << "  - " << reason << "\n";
  }
  const StudySpec& spec = result.spec.study;
  if (const VariantResult* baseline = find_variant(result.study, spec.baseline)) {
    md << "\n"
       << spec.baseline << " runs in " << fixed(baseline->latency_ms.median, 3) << " ms per batch of "
       << spec.batch << " on the `" << result.study.inputs.backend << "` backend"
       << (result.study.timing.loaded() ? " (on a loaded machine: the load's figure, not its speed)." : ".");
  }
  if (result.study.inputs.backend.rfind("cpu", 0) == 0) {
    md << " The CPU backends simulate FP8 exactly but have no FP8 arithmetic, so FP8 cannot be faster here: "
          "this study's speed figures only say what the simulation costs; its box and mAP figures are the "
          "ones an FP8 engine with these scales gives.";
  }
  return md.str() + "\n\n";
}

std::string demo_note(const DetectorStudyResult& result) {
  const std::string& description = result.spec.study.demo_description;
  const std::string& hub = result.study.inputs.hub_id;
  std::ostringstream md;
  md << "> **Demo run.** "
     << (description.empty()
             ? std::string("A checkpoint and labelled images from the repository's test data")
             : cat(static_cast<char>(std::toupper(static_cast<unsigned char>(description[0]))),
                   description.substr(1)))
     << " (`" << result.study.inputs.model.checkpoint_name
     << "`). The figures are real for this model on these images, but a demo's few images are no ground "
        "for judging a detector's FP8 behaviour. For that, run the study on a trained checkpoint"
     << (hub.empty() ? "" : cat(" (such as `", hub, "`)"))
     << " and a labelled detection set in the YOLO layout, on a GPU for FP8's speed:\n>\n> `kiln study "
        "families/"
     << result.study.family
     << " --checkpoint model.safetensors --data DETECTION_SET --backend cuda -o study`\n\n";
  return md.str();
}

std::string method_section(const DetectorStudyResult& result) {
  const DetectorStudySpec& spec = result.spec;
  const StudyResult& study = result.study;
  const nlohmann::json& data = study.data;
  std::ostringstream md;
  md << "## Method\n\n"
     << model_line(study, spec.study.text.parts) << ", at " << data.value("imgsz", 0) << " x "
     << data.value("imgsz", 0) << " pixels, letterboxed.\n- Data: `" << data.value("source", "") << "` ("
     << data.value("dataset_images", 0) << " images, labels in `" << result.labels
     << "`): a fixed-stride sample of " << data.value("sample", 0) << "; every " << spec.study.every
     << "th sampled image calibrates (" << data.value("calibration_images", 0) << "), the other "
     << data.value("held_out_images", 0) << " are held out and every box figure is measured on them.\n"
     << "- Box parity: against the fp32 build of the same checkpoint on the same backend; each fp32 box "
        "scoring "
     << fixed(spec.parity_min_score, 3)
     << " or more is paired with the variant's box of its class that overlaps it most (`kiln eval`'s "
        "rule).\n"
     << "- mAP: COCO's box mAP@0.5 and mAP@0.5:0.95 (101-point interpolation, mean over classes with ground "
        "truth) of every detection scoring "
     << fixed(spec.map_min_score, 3) << " or more, against the labels.\n"
     << "- NaN/Inf: counted per input, an input counting once however many of its outputs are NaN or Inf: "
        "every held-out image and "
     << (study.variants.empty() ? 0 : study.variants[0].eval.stress.size())
     << " stress inputs (zeros, constant colours, saturated values, checkerboards, large noise).\n"
     << "- Timed region, as `kiln bench` times the same plan: " << study.timed_region << ", on a batch of "
     << spec.study.batch << " (the held-out image `" << study.timing_image
     << "` letterboxed, repeated) at optimization level " << spec.study.opt_level
     << ", the network with its top-k selection. Each variant gets " << spec.study.warmup_seconds
     << " s of warm-up then " << spec.study.seconds_per_round << " s of timed runs per round; "
     << spec.study.rounds
     << " rounds, the variants interleaved with the first one rotating. Latency is the median of the round "
        "medians; the spread is their min..max; a speed-up is the median of per-round ratios against "
     << spec.study.baseline << ".\n"
     << "- Kernel time per group: " << spec.study.profile_iterations
     << " profiled runs per variant (each layer timed on its own), mean per run.\n";
  for (const std::string& note : result.notes) md << "- Note: " << note << "\n";
  return md.str() + "\n";
}

std::string quality_table(const DetectorStudyResult& result) {
  const std::string& baseline = result.spec.study.baseline;
  MarkdownTable table({{"variant"},
                       {"fp32 boxes compared", Align::kRight},
                       {"matched", Align::kRight},
                       {"missing", Align::kRight},
                       {"extra", Align::kRight},
                       {"worst IoU", Align::kRight},
                       {"worst score diff", Align::kRight},
                       {"parity gate"},
                       {"mAP@0.5:0.95", Align::kRight},
                       {"drop vs " + baseline + ", points (95% CI)", Align::kRight},
                       {"mAP@0.5", Align::kRight},
                       {"mAP@0.5 drop vs " + baseline + ", points (95% CI)", Align::kRight},
                       {"NaN/Inf images", Align::kRight},
                       {"NaN/Inf in stress inputs", Align::kRight}});
  for (std::size_t i = 0; i < result.study.variants.size(); ++i) {
    const VariantResult& r = result.study.variants[i];
    const DetectorQuality& q = result.quality[i];
    const bool is_baseline = r.variant.name == baseline;
    const bool matched = q.parity.matched > 0;
    table.add_row({r.variant.name, cat(q.parity.reference_boxes), cat(q.parity.matched),
                   cat(q.parity.missing), cat(q.parity.extra), matched ? fixed(q.parity.worst_iou, 3) : "-",
                   matched ? fixed(q.parity.worst_score_diff, 4) : "-", q.parity.passes() ? "pass" : "fail",
                   points(q.map.map50_95), is_baseline ? "baseline" : drop_cell(q.drop, true),
                   points(q.map.map50), is_baseline ? "baseline" : drop_cell(q.drop, false),
                   cat(r.eval.images_with_non_finite, " of ", r.eval.images_evaluated), stress_cell(r.eval)});
  }
  return table.str();
}

std::string results_section(const DetectorStudyResult& result) {
  std::ostringstream md;
  md << "## Results\n\n### Speed and size\n\n"
     << speed_table(result.study) << "\n![latency per variant](latency.svg)\n\n### Boxes and mAP\n\n"
     << "Box parity against fp32 (boxes scoring " << fixed(result.spec.parity_min_score, 3)
     << " or more), mAP against the labels (detections scoring " << fixed(result.spec.map_min_score, 3)
     << " or more), and NaN/Inf per input:\n\n"
     << quality_table(result)
     << "\n![mAP against speed](accuracy_vs_speed.svg)\n\n### Kernel time per group\n\n"
     << kernel_time_table(result.study) << "\n"
     << speed_matrix_section(result.study);
  return md.str();
}

// Each class with ground truth: its AP on every held-out image (no interval: the decision judges the mean).
nlohmann::json per_class_json(const MapResult& map, const std::vector<std::string>& names) {
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t i = 0; i < map.classes.size(); ++i) {
    const ClassAp& ap = map.classes[i];
    if (ap.ground_truth == 0) continue;
    classes.push_back({{"class", i},
                       {"name", i < names.size() ? names[i] : std::string()},
                       {"ground_truth", ap.ground_truth},
                       {"detections", ap.detections},
                       {"ap50", ap.ap50()},
                       {"ap50_95", ap.ap50_95()}});
  }
  return classes;
}

}  // namespace

std::string detector_study_markdown(const DetectorStudyResult& result) {
  const StudyResult& study = result.study;
  std::ostringstream md;
  md << "# " << study.family << " FP8 study\n\n" << warnings_block(study);
  if (study.inputs.demo) md << demo_note(result);
  md << summary_section(result) << recipe_section(study) << method_section(result)
     << environment_section(study) << results_section(result) << not_tried_section(study)
     << revisit_section(study) << "## Re-run\n\n```sh\n"
     << study.inputs.command
     << "\n```\n\nEvery number above is in `study.json`; the plans are in `plans/`.\n";
  return md.str();
}

nlohmann::json DetectorStudyResult::to_json() const {
  nlohmann::json json = study.to_json();
  json["format"] = json_format::kDetectorStudy;
  json["spec"] = spec.to_json();
  json["decision"] = kiln::to_json(decision);
  json["labels"] = labels;
  json["class_names"] = names;
  json["notes"] = notes;
  for (std::size_t i = 0; i < quality.size(); ++i) {
    nlohmann::json& variant = json["variants"][i];
    // A classifier's per-image evaluation says nothing here; its NaN/Inf counts stay.
    variant.erase("eval");
    variant.erase("statistics");
    const DetectorQuality& q = quality[i];
    variant["box_parity_vs_fp32"] = kiln::to_json(q.parity);
    variant["map"] = {{"map50", q.map.map50},
                      {"map50_95", q.map.map50_95},
                      {"min_score", spec.map_min_score},
                      {"images", q.map.images},
                      {"ground_truth", q.map.ground_truth},
                      {"detections", q.map.detections},
                      {"classes_with_ground_truth", q.map.classes_with_ground_truth},
                      {"per_class", per_class_json(q.map, names)}};
    variant["non_finite_inputs"]["stress_input_names"] = non_finite_stress(study.variants[i].eval);
    variant["map_drop_vs_baseline"] = q.drop ? kiln::to_json(*q.drop) : nlohmann::json(nullptr);
  }
  return json;
}

void write_detector_study(const std::filesystem::path& dir, const DetectorStudyResult& result) {
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const std::string& text) {
    // Names of files, variants and layers are the user's bytes; the report is text.
    write_file_atomically(dir / name, [&](std::ostream& out) { out << valid_utf8(text); });
  };
  write("latency.svg", latency_chart(result.study));
  write("accuracy_vs_speed.svg", map_chart(result));
  write("study.json", json_text(result.to_json()));
  write("STUDY.md", detector_study_markdown(result));
  finish_study_folder(dir);
}

}  // namespace kiln
