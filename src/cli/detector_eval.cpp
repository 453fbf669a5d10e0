// kiln eval for detector plans: box parity with a reference (another plan, a checkpoint built in memory
// at fp32, or by default the same plan on the cpu-reference backend) on a dataset's images.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/detector_commands.h"
#include "core/error.h"
#include "data/open_dataset.h"
#include "data/sampling.h"
#include "io/atomic_file.h"
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
    require(request.family.empty() && !request.config,
            "--family and --config describe a checkpoint --reference, but ", name, " is a plan");
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

nlohmann::json report_json(const DetectorEvalRequest& request, const std::string& backend, std::int64_t batch,
                           const Dataset& dataset, const Reference& reference,
                           const pipeline::DetectorParityReport& report) {
  nlohmann::json images = nlohmann::json::array();
  for (const auto& [name, parity] : report.images) {
    nlohmann::json entry = pipeline::to_json(parity);
    entry["image"] = name;
    images.push_back(std::move(entry));
  }
  nlohmann::json json = {
      {"plan", request.plan_path.string()},
      {"family", request.plan->info.family},
      {"precision", precision_name(request.plan->info.precision)},
      {"backend", backend},
      {"batch", batch},
      {"data", dataset.source()},
      {"reference_model",
       request.reference ? nlohmann::json(request.reference->string()) : nlohmann::json(nullptr)},
      {"reference_kind", reference.kind},
      {"reference_backend", reference.engine->backend()},
      {"min_score", request.min_score},
      {"gate", {{"min_iou", pipeline::kGateMinIou}, {"max_score_diff", pipeline::kGateMaxScoreDiff}}},
      {"images_evaluated", report.images.size()},
      {"images_skipped", report.skipped},
      {"boxes", pipeline::to_json(report.total)},
      {"per_image", std::move(images)}};
  return json;
}

}  // namespace

void eval_detector(const DetectorEvalRequest& request) {
  const DetectorInfo& detector = pipeline::plan_detector(*request.plan, request.plan_path.string());
  const Dataset dataset = open_dataset(request.data);
  std::vector<std::size_t> indices(dataset.size());
  std::iota(indices.begin(), indices.end(), std::size_t{0});
  if (request.images) {
    require(*request.images <= dataset.size(), dataset.source(), ": --images ", *request.images,
            " but the dataset has ", dataset.size(), " images");
    indices = stride_sample(dataset.size(), *request.images);
  }
  CompileOptions compile;
  compile.batch = request.batch.value_or(request.plan->info.batch);
  compile.strict_backend = request.strict_backend;
  const std::string backend = request.backend.empty() ? default_backend() : request.backend;
  pipeline::DetectorEngine engine(request.plan, request.plan_path.string(), backend, compile);
  Reference reference = make_reference(request, detector, backend, compile);
  if (!engine.engine().fallback_layers().empty()) std::cerr << fallback_warning(engine.engine()) << "\n";

  std::cout << "eval       " << request.plan_path.string() << " (" << detector.name << ", "
            << precision_name(request.plan->info.precision) << ") on " << backend << ", batch "
            << compile.batch << "\n"
            << "data       " << dataset.source() << " (" << dataset_kind_name(dataset.kind()) << ", "
            << dataset.size() << " images, " << indices.size() << " evaluated)\n"
            << "reference  "
            << (request.reference ? request.reference->string() + " (" + reference.kind + ")"
                                  : reference.kind)
            << "\n"
            << std::flush;
  const pipeline::DetectorParityReport report = pipeline::detector_parity(
      engine, *reference.engine, dataset, indices, request.min_score, request.strict);
  print_parity(report, request.min_score);
  if (request.json) {
    const nlohmann::json json = report_json(request, backend, compile.batch, dataset, reference, report);
    write_file_atomically(*request.json, [&](std::ostream& out) { out << json.dump(2) << "\n"; });
  }
  require(report.total.passes(), request.plan_path.string(),
          ": box parity with the reference fails the gate (", report.total.missing, " missing, ",
          report.total.extra, " extra, worst IoU ", figure(report.total.worst_iou), ", worst |score diff| ",
          figure(report.total.worst_score_diff), ")");
}

}  // namespace kiln::cli
