// The families kiln can build, listed in one place (registry.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include <map>

#include "core/tensor.h"
#include "io/timm_config.h"

namespace kiln {

struct FamilyInfo {
  std::string_view name;         // "timm_resnest"
  std::string_view description;  // one line
  ModelConfig default_config;    // used for keys config.json does not give
  // Builds the graph for a batch of `batch` (-1: any) from the checkpoint's tensors (name -> tensor,
  // any float dtype), inferring the architecture from key names and shapes.
  Graph (*build)(const std::map<std::string, Tensor>& weights, const ModelConfig& config, std::int64_t batch);
};

const std::vector<FamilyInfo>& families();
// Fails listing the known families when `name` is not one.
const FamilyInfo& find_family(std::string_view name);

}  // namespace kiln
