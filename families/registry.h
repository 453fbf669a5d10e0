// The families kiln can build, listed in one place (registry.cpp).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "families/yolov10/config.h"
#include "families/yolov10/letterbox.h"
#include "families/yolov10/postprocess.h"
#include "graph/graph.h"
#include "io/image.h"
#include "io/timm_config.h"

namespace kiln {

struct FamilyInfo {
  std::string_view name;         // "timm_resnest"
  std::string_view description;  // one line
  ModelConfig default_config;    // used for keys config.json does not give
  // Builds the graph for a batch of `batch` (-1: any) from the checkpoint's tensors (name -> tensor,
  // any float dtype), inferring the architecture from key names and shapes.
  Graph (*build)(const std::map<std::string, Tensor>& weights, const ModelConfig& config, std::int64_t batch);
  std::string_view defaults_from;      // the checkpoint default_config comes from ("resnest50d.in1k")
  std::string_view classifier_weight;  // the key whose rows are the classes, read without a config.json
  std::vector<std::string_view> architectures;  // timm architecture name prefixes this family builds
};

const std::vector<FamilyInfo>& families();
// Fails listing the known families when `name` is not one.
const FamilyInfo& find_family(std::string_view name);

// Families of object detectors: their own config.json, letterboxed input, boxes out.
struct DetectorModel {
  Graph graph;  // output: decoded predictions [N, 4 + classes, anchors]
  YoloConfig config;
  std::vector<std::string> unused_keys;  // checkpoint tensors inference does not use
};

struct DetectorInfo {
  std::string_view name;         // "yolov10"
  std::string_view description;  // one line
  // Reads config.json and builds the graph for a batch of `batch` images (-1: any).
  DetectorModel (*load)(const std::map<std::string, Tensor>& weights,
                        const std::filesystem::path& config_json, std::int64_t batch);
  Letterbox (*prepare)(const Image& image, std::int64_t size);
  // The letterbox's geometry for an image of width x height, without its pixels (`image` left empty).
  Letterbox (*place)(std::int64_t width, std::int64_t height, std::int64_t size);
  std::vector<std::vector<Detection>> (*select)(const Tensor& decoded, std::int64_t max_det);
  // The graph's own selection (its second output, [N, max_det, 6] rows) read back as detections.
  std::vector<std::vector<Detection>> (*read_selected)(const Tensor& rows);
  Detection (*to_original)(const Detection& detection, const Letterbox& box);
};

const std::vector<DetectorInfo>& detectors();
// nullptr when `name` is no detector family.
const DetectorInfo* find_detector(std::string_view name);

}  // namespace kiln
