#include "builder/fp8_refusals.h"

namespace kiln {

namespace {

std::string reason_in(const Graph& graph, const std::string& layer, const Backend& backend) {
  const std::optional<NodeId> id = graph.find_node(layer);
  if (!id) return "not in the graph";
  return backend.unsupported_reason(graph, graph.node(*id));
}

}  // namespace

std::vector<Fp8Refusal> fp8_layers_refused(const Graph& quantized, const Graph& unquantized,
                                           const nlohmann::json& quantization, const Backend& backend) {
  std::vector<Fp8Refusal> refused;
  for (const nlohmann::json& entry : quantization.value("layers", nlohmann::json::array())) {
    const std::string layer = entry.at("layer").get<std::string>();
    std::string reason = reason_in(quantized, layer, backend);
    // A layer the backend cannot run in any precision goes to the fallback as before.
    if (!reason.empty() && reason_in(unquantized, layer, backend).empty())
      refused.push_back({layer, std::move(reason)});
  }
  return refused;
}

nlohmann::json refusals_json(const std::vector<Fp8Refusal>& refusals) {
  nlohmann::json out = nlohmann::json::array();
  for (const Fp8Refusal& r : refusals) out.push_back({{"layer", r.layer}, {"reason", r.reason}});
  return out;
}

}  // namespace kiln
