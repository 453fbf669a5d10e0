#include "backends/cuda/tactics/stored_tactic.h"

#include "core/error.h"

namespace kiln::cuda {

std::optional<StoredTactic> stored_tactic(const std::map<std::string, nlohmann::json>& layer_data,
                                          const std::string& layer, const std::string& device) {
  const auto entry = layer_data.find(layer);
  if (entry == layer_data.end() || !entry->second.contains("tactic")) return std::nullopt;
  try {
    const nlohmann::json& t = entry->second.at("tactic");
    if (t.at("device").get<std::string>() != device) return std::nullopt;  // timed on another GPU
    return StoredTactic{t.at("api").get<std::string>(), t.at("key").get<std::string>(),
                        TacticRecord{t.at("fused").get<bool>(), t.at("algorithm").get<int>(),
                                     t.at("workspace").get<std::size_t>(), t.at("us").get<double>() / 1000.0,
                                     t.value("compiled", std::string())}};
  } catch (const nlohmann::json::exception& e) {
    fail("plan: layer '", layer,
         "': malformed tactic (expected api, key, device, fused, algorithm, workspace, us): ", e.what());
  }
}

nlohmann::json tactic_entry(const StoredTactic& chosen, const std::string& device) {
  const TacticRecord& t = chosen.tactic;
  nlohmann::json entry = {{"tactic",
                           {{"api", chosen.api},
                            {"key", chosen.key},
                            {"device", device},
                            {"fused", t.fused},
                            {"algorithm", t.algorithm},
                            {"workspace", t.workspace},
                            {"us", t.milliseconds * 1000.0}}}};
  if (!t.compiled.empty()) entry["tactic"]["compiled"] = t.compiled;
  return entry;
}

}  // namespace kiln::cuda
