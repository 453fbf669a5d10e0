#include "families/registry.h"

#include "core/error.h"
#include "families/timm_efficientnet/builder.h"
#include "families/timm_resnest/builder.h"
#include "families/timm_resnet/builder.h"
#include "families/yolov10/builder.h"

namespace kiln {

namespace {

// The eval settings of the reference checkpoints' pretrained_cfg in timm: resnest.py's _cfg for
// resnest50d.in1k, resnet.py's _rcfg for resnet50.a1_in1k, efficientnet.py's _cfg for
// efficientnet_b0.ra_in1k. All use ImageNet's mean and std, which are PreprocessConfig's defaults.
ModelConfig resnest50d_config() {
  ModelConfig config;
  config.architecture = "resnest50d";
  config.num_classes = 1000;
  config.preprocess.input_size = 224;
  config.preprocess.interpolation = Interpolation::kBilinear;
  config.preprocess.crop_pct = 0.875;
  return config;
}

ModelConfig resnet50_config() {
  ModelConfig config;
  config.architecture = "resnet50";
  config.num_classes = 1000;
  config.preprocess.input_size = 224;
  config.preprocess.interpolation = Interpolation::kBicubic;
  config.preprocess.crop_pct = 0.95;
  return config;
}

ModelConfig efficientnet_b0_config() {
  ModelConfig config;
  config.architecture = "efficientnet_b0";
  config.num_classes = 1000;
  config.preprocess.input_size = 224;
  config.preprocess.interpolation = Interpolation::kBicubic;
  config.preprocess.crop_pct = 0.875;
  return config;
}

}  // namespace

const std::vector<FamilyInfo>& families() {
  static const std::vector<FamilyInfo> kFamilies = {
      {"timm_resnest",
       "timm ResNeSt (split-attention ResNet, e.g. resnest50d)",
       resnest50d_config(),
       &build_timm_resnest,
       "resnest50d.in1k",
       "fc.weight",
       {"resnest"}},
      {"timm_resnet",
       "timm ResNet / ResNeXt with BasicBlock or Bottleneck (e.g. resnet50, resnet50d)",
       resnet50_config(),
       &build_timm_resnet,
       "resnet50.a1_in1k",
       "fc.weight",
       {"resnet", "resnext", "wide_resnet"}},
      {"timm_efficientnet",
       "timm EfficientNet (inverted residual blocks with squeeze-excite, e.g. efficientnet_b0)",
       efficientnet_b0_config(),
       &build_timm_efficientnet,
       "efficientnet_b0.ra_in1k",
       "classifier.weight",
       {"efficientnet", "tf_efficientnet"}},
  };
  return kFamilies;
}

const FamilyInfo& find_family(std::string_view name) {
  std::string known;
  for (const auto& family : families()) {
    if (family.name == name) return family;
    known += known.empty() ? "" : ", ";
    known += family.name;
  }
  for (const auto& detector : detectors()) {
    require(detector.name != name, "family '", name, "' is a detector: run it with `kiln run --family ", name,
            " --checkpoint ...`; it has no classifier plan");
    known += cat(", ", detector.name);
  }
  fail("unknown family '", name, "' (known: ", known, ")");
}

namespace {

DetectorModel load_yolov10(const std::map<std::string, Tensor>& weights,
                           const std::filesystem::path& config_json, std::int64_t batch) {
  DetectorModel model;
  model.config = read_yolo_config(config_json);
  Yolov10Build build = build_yolov10(weights, model.config, batch);
  model.graph = std::move(build.graph);
  model.unused_keys = std::move(build.unused_keys);
  return model;
}

}  // namespace

const std::vector<DetectorInfo>& detectors() {
  static const std::vector<DetectorInfo> kDetectors = {
      {"yolov10", "YOLOv10 detectors (yolov10n..x, e.g. jameslahm/yolov10n), NMS-free one-to-one head",
       &load_yolov10, &letterbox, &letterbox_placement, &select_detections, &detections_from_rows,
       &to_original},
  };
  return kDetectors;
}

const DetectorInfo* find_detector(std::string_view name) {
  for (const auto& detector : detectors()) {
    if (detector.name == name) return &detector;
  }
  return nullptr;
}

}  // namespace kiln
