// kiln eval for detector plans: on a labelled detection set (YOLO layout), mAP against the labels, and
// box parity when a --reference is given; on other images, box parity with a reference (another plan, a
// checkpoint built in memory at fp32, or by default the same plan on the cpu-reference backend).
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/detector_commands.h"
#include "cli/option_checks.h"
#include "core/error.h"
#include "data/folder_dataset.h"
#include "data/open_dataset.h"
#include "data/sampling.h"
#include "data/yolo_dataset.h"
#include "io/json_formats.h"
#include "io/utf8_text.h"
#include "pipeline/detection_pass.h"
#include "pipeline/detector_map.h"
#include "pipeline/detector_parity.h"
#include "pipeline/detector_plan.h"
#include "pipeline/model_loading.h"
#include "plan/plan_magic.h"

namespace kiln::cli {

namespace {

constexpr const char* kReferenceBackend = "cpu-reference";

struct Reference {
  std::optional<pipeline::DetectorEngine> engine;
  std::string kind;  // how it was made, for the report
};

// Mirrors the classifier's choice: --reference a plan or a checkpoint (fp32, in memory); without one,
// the plan itself on the reference backend, every operator's meaning.
Reference make_reference(const DetectorEvalRequest& request, const DetectorInfo& detector,
                         const std::string& backend, const CompileOptions& compile) {
  Reference reference;
  if (!request.reference) {
    reference.engine.emplace(request.plan, request.plan_path.string(), kReferenceBackend, compile);
    reference.kind = cat("the plan itself on ", kReferenceBackend);
    return reference;
  }
  const std::string name = request.reference->string();
  if (request.reference->extension() != ".kplan" && !looks_like_plan(*request.reference)) {
    require(request.family.empty() || request.family == detector.name, "--family ", request.family, ": ",
            request.plan_path.string(), " is ", pipeline::plan_kind(*request.plan));
    reference.engine.emplace(detector, *request.reference, request.config, compile.batch, backend, compile);
    reference.kind = cat("checkpoint, ", detector.name, ", built in memory at fp32");
  } else {
    if (!request.family.empty() || request.config)
      usage_error(cat("--family and --config describe a checkpoint --reference, but ", name, " is a plan"));
    const auto plan = pipeline::load_plan(*request.reference);
    require(plan->detector.has_value(), name, ": ", pipeline::plan_kind(*plan), "; the reference of ",
            request.plan_path.string(), " must be a detector plan or checkpoint");
    reference.engine.emplace(plan, name, backend, compile);
    reference.kind = cat("plan, ", precision_name(plan->info.precision));
  }
  const YoloConfig ours = pipeline::yolo_config(*request.plan->detector);
  const YoloConfig& theirs = reference.engine->config();
  require(theirs.names == ours.names && theirs.imgsz == ours.imgsz, name, ": a detector of ",
          theirs.names.size(), " classes at ", theirs.imgsz, " pixels, but ", request.plan_path.string(),
          " has ", ours.names.size(), " at ", ours.imgsz);
  return reference;
}

std::string figure(double value) {
  std::ostringstream out;
  out << std::setprecision(4) << value;
  return out.str();
}

void print_parity(const pipeline::DetectorParityReport& report, double min_score) {
  const pipeline::BoxParity& total = report.total;
  std::cout << "images     " << report.images.size() << " evaluated, " << report.skipped << " skipped\n"
            << "boxes      " << total.reference_boxes << " reference boxes scoring " << min_score
            << " or more: " << total.matched << " matched, " << total.missing << " missing, " << total.extra
            << " extra\n";
  if (total.reference_boxes == 0)
    std::cout << "note       no reference box scores " << min_score
              << " or more, so no box was compared (lower --min-score)\n";
  if (total.matched > 0) {
    std::cout << "worst      IoU " << figure(total.worst_iou) << " (" << total.worst_iou_image
              << "), |score diff| " << figure(total.worst_score_diff) << " (" << total.worst_score_image
              << ")\n";
  }
  std::cout << "gate       " << (total.passes() ? "pass" : "FAIL")
            << " (matched IoU >= " << pipeline::kGateMinIou
            << ", |score diff| <= " << pipeline::kGateMaxScoreDiff << ", none missing or extra)\n";
}

// What the images are: a labelled detection set (mAP) or plain images (box parity only).
struct EvalData {
  std::optional<YoloLayout> layout;
  Dataset dataset;
  std::vector<std::string> names;  // the classes mAP reports; the plan's without a data.yaml
};

EvalData open_eval_data(const DetectorEvalRequest& request, const YoloConfig& config) {
  std::optional<YoloLayout> layout = find_yolo_layout(request.data);
  if (!layout) return {std::nullopt, open_dataset(request.data), {}};
  Dataset dataset = open_folder_dataset(layout->images);
  if (layout->names.empty()) return {std::move(layout), std::move(dataset), config.names};
  require(layout->names.size() == config.names.size(), layout->data_yaml->string(), ": ",
          layout->names.size(), " class names, but ", request.plan_path.string(), " detects ",
          config.names.size(), " classes");
  std::vector<std::string> names = layout->names;
  return {std::move(layout), std::move(dataset), std::move(names)};
}

// --min-score sets what box parity compares, --map-min-score what mAP ranks: each is refused where its
// part does not run.
void refuse_ignored_scores(const DetectorEvalRequest& request, bool labelled, bool parity) {
  if (request.min_score_given && !parity)
    usage_error(cat("--min-score sets the boxes box parity compares, but ", request.data,
                    " is a labelled detection set and no --reference was given (mAP's threshold is "
                    "--map-min-score)"));
  if (request.map_min_score && !labelled)
    usage_error(cat("--map-min-score sets the detections mAP ranks, but ", request.data,
                    " is no labelled detection set (YOLO layout: data.yaml, or images/ beside labels/)"));
}

void print_map(const MapResult& map, const std::vector<std::string>& names, double min_score) {
  std::cout << "mAP        @0.5 " << figure(map.map50) << ", @0.5:0.95 " << figure(map.map50_95) << " over "
            << map.classes_with_ground_truth << " classes with ground truth (" << map.ground_truth
            << " boxes in " << map.images << " images; " << map.detections << " detections scoring "
            << min_score << " or more)\n";
  std::cout << "  " << std::left << std::setw(20) << "class" << std::right << std::setw(8) << "boxes"
            << std::setw(12) << "detections" << std::setw(10) << "AP@0.5" << std::setw(14) << "AP@0.5:0.95"
            << "\n";
  for (std::size_t i = 0; i < map.classes.size(); ++i) {
    const ClassAp& ap = map.classes[i];
    if (ap.ground_truth == 0) continue;
    std::cout << "  " << std::left << std::setw(20) << names[i] << std::right << std::setw(8)
              << ap.ground_truth << std::setw(12) << ap.detections << std::setw(10) << figure(ap.ap50())
              << std::setw(14) << figure(ap.ap50_95()) << "\n";
  }
}

nlohmann::json map_json(const MapResult& map, const std::vector<std::string>& names, double min_score,
                        const YoloLayout& layout) {
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t i = 0; i < map.classes.size(); ++i) {
    const ClassAp& ap = map.classes[i];
    const bool scored = ap.ground_truth > 0;
    classes.push_back({{"class", i},
                       {"name", names[i]},
                       {"ground_truth", ap.ground_truth},
                       {"detections", ap.detections},
                       {"ap50", scored ? nlohmann::json(ap.ap50()) : nlohmann::json(nullptr)},
                       {"ap50_95", scored ? nlohmann::json(ap.ap50_95()) : nlohmann::json(nullptr)}});
  }
  return {
      {"images", layout.images.string()},
      {"labels", layout.labels.string()},
      {"data_yaml", layout.data_yaml ? nlohmann::json(layout.data_yaml->string()) : nlohmann::json(nullptr)},
      {"min_score", min_score},
      {"map50", map.map50},
      {"map50_95", map.map50_95},
      {"classes_with_ground_truth", map.classes_with_ground_truth},
      {"ground_truth", map.ground_truth},
      {"detections", map.detections},
      {"per_class", std::move(classes)}};
}

void add_parity_json(nlohmann::json& json, const DetectorEvalRequest& request, const Reference& reference,
                     const pipeline::DetectorParityReport& report) {
  nlohmann::json images = nlohmann::json::array();
  for (const auto& [name, parity] : report.images) {
    nlohmann::json entry = pipeline::to_json(parity);
    entry["image"] = name;
    images.push_back(std::move(entry));
  }
  json.update(
      {{"reference_kind", reference.kind},
       {"reference_backend", reference.engine->backend()},
       {"min_score", request.min_score},
       {"gate", {{"min_iou", pipeline::kGateMinIou}, {"max_score_diff", pipeline::kGateMaxScoreDiff}}},
       {"boxes", pipeline::to_json(report.total)},
       {"per_image", std::move(images)}});
}

// What one evaluation found: box parity when a reference ran, mAP when the images have labels.
struct DetectorFindings {
  std::size_t evaluated = 0, skipped = 0;
  std::optional<pipeline::DetectorParityReport> parity;
  std::optional<MapResult> map;
};

nlohmann::json report_json(const DetectorEvalRequest& request, const std::string& backend, std::int64_t batch,
                           const EvalData& data, const std::optional<Reference>& reference,
                           const DetectorFindings& findings, double map_min_score) {
  nlohmann::json json = {
      {"format", json_format::kDetectorEval},
      {"plan", request.plan_path.string()},
      {"family", request.plan->info.family},
      {"precision", precision_name(request.plan->info.precision)},
      {"backend", backend},
      {"batch", batch},
      {"data", data.dataset.source()},
      {"reference_model",
       request.reference ? nlohmann::json(request.reference->string()) : nlohmann::json(nullptr)},
      {"images_evaluated", findings.evaluated},
      {"images_skipped", findings.skipped},
      {"map", findings.map ? map_json(*findings.map, data.names, map_min_score, *data.layout)
                           : nlohmann::json(nullptr)}};
  if (findings.parity) add_parity_json(json, request, *reference, *findings.parity);
  return json;
}

void print_header(const DetectorEvalRequest& request, const DetectorInfo& detector,
                  const std::string& backend, std::int64_t batch, const EvalData& data, std::size_t evaluated,
                  const std::optional<Reference>& reference) {
  std::cout << "eval       " << request.plan_path.string() << " (" << detector.name << ", "
            << precision_name(request.plan->info.precision) << ") on " << backend << ", batch " << batch
            << "\n"
            << "data       " << data.dataset.source() << " (" << dataset_kind_name(data.dataset.kind())
            << ", " << data.dataset.size() << " images, " << evaluated << " evaluated)\n";
  if (data.layout) {
    std::cout << "labels     " << data.layout->labels.string() << " (YOLO layout, " << data.names.size()
              << " classes"
              << (data.layout->data_yaml ? " from " + data.layout->data_yaml->string()
                                         : std::string(" of the plan"))
              << ")\n";
  }
  if (reference) {
    std::cout << "reference  "
              << (request.reference ? request.reference->string() + " (" + reference->kind + ")"
                                    : reference->kind)
              << "\n";
  }
  std::cout << std::flush;
}

}  // namespace

void eval_detector(const DetectorEvalRequest& request) {
  const DetectorInfo& detector = pipeline::plan_detector(*request.plan, request.plan_path.string());
  const YoloConfig config = pipeline::yolo_config(*request.plan->detector);
  const EvalData data = open_eval_data(request, config);
  const bool labelled = data.layout.has_value();
  const bool parity = !labelled || request.reference.has_value();
  refuse_ignored_scores(request, labelled, parity);
  std::vector<std::size_t> indices(data.dataset.size());
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  if (request.images) {
    require(*request.images <= data.dataset.size(), data.dataset.source(), ": --images ", *request.images,
            " but the dataset has ", data.dataset.size(), " images");
    indices = stride_sample(data.dataset.size(), *request.images);
  }
  const double map_min_score = request.map_min_score.value_or(pipeline::kMapMinScore);
  std::optional<pipeline::DetectorMapAccumulator> map;
  if (labelled) map.emplace(data.dataset, indices, data.names.size(), map_min_score);
  CompileOptions compile;
  compile.batch = request.batch.value_or(request.plan->info.batch);
  compile.strict_backend = request.strict_backend;
  const std::string backend = request.backend.empty() ? default_backend() : request.backend;
  pipeline::DetectorEngine engine(request.plan, request.plan_path.string(), backend, compile);
  std::optional<Reference> reference;
  if (parity) reference = make_reference(request, detector, backend, compile);
  if (!engine.engine().fallback_layers().empty()) std::cerr << fallback_warning(engine.engine()) << "\n";
  print_header(request, detector, backend, compile.batch, data, indices.size(), reference);

  DetectorFindings findings;
  if (parity) findings.parity.emplace();
  findings.skipped = pipeline::for_each_detection(
      engine, reference ? &*reference->engine : nullptr, data.dataset, indices, request.strict,
      parity ? "compare boxes" : "detect", [&](const pipeline::DetectedImage& image) {
        const Sample& sample = data.dataset.sample(image.index);
        ++findings.evaluated;
        if (findings.parity)
          findings.parity->add(sample.name, *image.detections, *image.reference, request.min_score);
        if (map) map->add(image.index, *image.image, *image.detections);
      });
  if (findings.parity) findings.parity->skipped = findings.skipped;
  if (map) {
    findings.map = map->result();
    print_map(*findings.map, data.names, map_min_score);
  }
  if (findings.parity) {
    print_parity(*findings.parity, request.min_score);
  } else {
    std::cout << "images     " << findings.evaluated << " evaluated, " << findings.skipped << " skipped\n";
  }
  if (request.json) {
    const nlohmann::json json =
        report_json(request, backend, compile.batch, data, reference, findings, map_min_score);
    write_json_file(*request.json, json);
  }
  if (!findings.parity) return;
  const pipeline::BoxParity& total = findings.parity->total;
  require(total.passes(), request.plan_path.string(), ": box parity with the reference fails the gate (",
          total.missing, " missing, ", total.extra, " extra, worst IoU ", figure(total.worst_iou),
          ", worst |score diff| ", figure(total.worst_score_diff), ")");
}

}  // namespace kiln::cli
