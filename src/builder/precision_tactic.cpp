#include "builder/precision_tactic.h"

namespace kiln {

namespace {

std::optional<double> timed_in(const std::map<std::string, nlohmann::json>& data, const std::string& layer) {
  const auto entry = data.find(layer);
  return entry == data.end() ? std::nullopt : timed_microseconds(entry->second);
}

nlohmann::json times_json(const std::vector<LayerPrecisionTime>& times) {
  nlohmann::json out = nlohmann::json::array();
  for (const LayerPrecisionTime& t : times)
    out.push_back({{"layer", t.layer}, {"fp8_us", t.fp8_us}, {"fp16_us", t.fp16_us}});
  return out;
}

}  // namespace

std::optional<double> timed_microseconds(const nlohmann::json& layer_data) {
  if (!layer_data.is_object() || !layer_data.contains("tactic")) return std::nullopt;
  const nlohmann::json& tactic = layer_data.at("tactic");
  if (!tactic.is_object() || !tactic.contains("us") || !tactic.at("us").is_number()) return std::nullopt;
  const double us = tactic.at("us").get<double>();
  return us > 0.0 ? std::optional<double>(us) : std::nullopt;  // 0: chosen without timing
}

PrecisionChoice choose_layer_precisions(const std::vector<std::string>& fp8_layers,
                                        const std::map<std::string, nlohmann::json>& fp8_data,
                                        const std::map<std::string, nlohmann::json>& fp16_data) {
  PrecisionChoice choice;
  for (const std::string& layer : fp8_layers) {
    const std::optional<double> fp8 = timed_in(fp8_data, layer), fp16 = timed_in(fp16_data, layer);
    if (!fp8 || !fp16) {
      choice.untimed.push_back(layer);
      choice.fp8_layers.push_back(layer);
      continue;
    }
    const LayerPrecisionTime time{layer, *fp8, *fp16};
    // A tie stays FP8: the recipe asked for it, and it is no slower.
    if (*fp16 < *fp8) {
      choice.kept_fp16.push_back(time);
    } else {
      choice.kept_fp8.push_back(time);
      choice.fp8_layers.push_back(layer);
    }
  }
  return choice;
}

std::vector<CodesCharge> unpaid_codes(const std::vector<std::string>& fp8_layers,
                                      const std::map<std::string, std::string>& producer_of,
                                      const std::map<std::string, nlohmann::json>& mixed_data,
                                      const std::map<std::string, nlohmann::json>& fp16_data) {
  const auto is_fp8 = [&](const std::string& layer) {
    return std::find(fp8_layers.begin(), fp8_layers.end(), layer) != fp8_layers.end();
  };
  std::map<std::string, CodesCharge> by_producer;
  for (const std::string& reader : fp8_layers) {
    const auto producer = producer_of.find(reader);
    if (producer == producer_of.end() || is_fp8(producer->second)) continue;
    const std::optional<double> read_fp8 = timed_in(mixed_data, reader), read_fp16 = timed_in(fp16_data, reader);
    if (!read_fp8 || !read_fp16) continue;
    CodesCharge& charge = by_producer[producer->second];
    charge.producer = producer->second;
    charge.readers.push_back(reader);
    charge.saved_us += *read_fp16 - *read_fp8;
  }
  std::vector<CodesCharge> unpaid;
  for (auto& [producer, charge] : by_producer) {
    const std::optional<double> mixed = timed_in(mixed_data, producer), fp16 = timed_in(fp16_data, producer);
    if (!mixed || !fp16) continue;
    charge.extra_us = *mixed - *fp16;
    if (charge.extra_us > charge.saved_us) unpaid.push_back(std::move(charge));
  }
  return unpaid;
}

nlohmann::json codes_charges_json(const std::vector<CodesCharge>& charges) {
  nlohmann::json out = nlohmann::json::array();
  for (const CodesCharge& c : charges) {
    out.push_back({{"producer", c.producer}, {"readers", c.readers}, {"producer_extra_us", c.extra_us},
                   {"readers_save_us", c.saved_us}});
  }
  return out;
}

nlohmann::json PrecisionChoice::to_json() const {
  return {{"rule", "a layer stays fp16 where its fp16 convolution timed faster than its FP8 one, or where "
                   "the E4M3 codes its fp16 producer writes for it cost more than its producer's FP8 readers save"},
          {"compared", kept_fp16.size() + kept_fp8.size()},
          {"kept_fp16", times_json(kept_fp16)},
          {"kept_fp8", times_json(kept_fp8)},
          {"untimed", untimed},
          {"codes_charged", codes_charges_json(codes_charges)}};
}

}  // namespace kiln
