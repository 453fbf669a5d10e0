#include "pipeline/detector_plan.h"

#include "core/error.h"
#include "pipeline/model_loading.h"

namespace kiln::pipeline {

DetectorSection detector_section(const YoloConfig& config, const Graph& graph) {
  DetectorSection section;
  section.model = config.model;
  section.task = config.task;
  section.image_size = config.imgsz;
  section.max_det = config.max_det;
  section.class_names = config.names;
  for (const NodeId id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kDetectDecode) section.strides.push_back(node.attr<DetectAttrs>().stride);
  }
  section.letterbox_fill = kLetterboxGrey;
  return section;
}

ModelConfig detector_bundle_config(const YoloConfig& config) {
  ModelConfig bundle;
  bundle.architecture = config.model;
  bundle.num_classes = static_cast<std::int64_t>(config.names.size());
  bundle.label_names = config.names;
  bundle.preprocess.input_size = config.imgsz;
  bundle.preprocess.crop_pct = 1.0;
  bundle.preprocess.mean = {0.0f, 0.0f, 0.0f};
  bundle.preprocess.std = {1.0f, 1.0f, 1.0f};
  return bundle;
}

YoloConfig yolo_config(const DetectorSection& section) {
  YoloConfig config;
  config.model = section.model;
  config.task = section.task;
  config.imgsz = section.image_size;
  config.max_det = section.max_det;
  config.names = section.class_names;
  return config;
}

ModelSource load_detector_source(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                                 const std::optional<std::filesystem::path>& config_path,
                                 const std::string& digest) {
  DetectorModel model = load_detector(detector, checkpoint, config_path, -1);
  ModelSource source;
  source.detector = detector_section(model.config, model.graph);
  source.input = BuildInput{std::move(model.graph), detector_bundle_config(model.config),
                            std::string(detector.name), checkpoint.filename().string(), digest};
  const std::int64_t size = model.config.imgsz;
  const auto prepare = detector.prepare;
  source.to_input = [prepare, size](const Image& image) { return letterbox_tensor(prepare(image, size)); };
  return source;
}

Plan build_detector_in_memory(const DetectorInfo& detector, DetectorModel model,
                              const std::string& checkpoint_name, const BuildOptions& options) {
  DetectorSection section = detector_section(model.config, model.graph);
  BuildInput input{std::move(model.graph), detector_bundle_config(model.config), std::string(detector.name),
                   checkpoint_name, ""};
  Plan plan = build_plan(std::move(input), options).plan;
  plan.detector = std::move(section);
  return plan;
}

std::string plan_kind(const Plan& plan) {
  return cat("a ", plan.info.family, plan.detector ? " detector plan" : " classifier plan");
}

const DetectorInfo& plan_detector(const Plan& plan, const std::string& name) {
  require(plan.detector.has_value(), name, ": ", plan_kind(plan), ", not a detector plan");
  const DetectorInfo* detector = find_detector(plan.info.family);
  require(detector != nullptr, name, ": a detector plan of family '", plan.info.family,
          "', which this kiln does not know");
  const DetectorSection& section = *plan.detector;
  const Shape& input = plan.graph.value(plan.graph.inputs().at(0)).shape;
  const Shape& output = plan.graph.value(plan.graph.outputs().at(0)).shape;
  require(input.size() == 4 && input[2] == section.image_size && input[3] == section.image_size, name,
          ": the detector section's image_size ", section.image_size, " differs from the graph's input ",
          shape_str(input));
  const auto classes = static_cast<std::int64_t>(section.class_names.size());
  require(output.size() == 3 && output[1] == 4 + classes, name, ": the detector section names ", classes,
          " classes, but the graph's output is ", shape_str(output));
  require(section.letterbox_fill == kLetterboxGrey, name, ": letterbox fill ", section.letterbox_fill,
          " (this kiln letterboxes with ", static_cast<int>(kLetterboxGrey), ")");
  return *detector;
}

void require_classifier_plan(const Plan& plan, const std::string& name, std::string_view use) {
  require(!plan.detector.has_value(), name, ": ", plan_kind(plan), "; ", use, " needs a classifier plan");
}

}  // namespace kiln::pipeline
