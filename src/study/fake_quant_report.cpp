// The fake-quantization check in study.json and STUDY.md (fake_quant_check.h).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "study/fake_quant_check.h"
#include "study/markdown_table.h"
#include "study/report_format.h"

namespace kiln {
namespace {

using Align = MarkdownTable::Align;

// Engine top-1 minus fake-quantization top-1, in points; NaN without labels.
double top1_gap_points(const FakeQuantVariant& v) {
  if (v.engine_labels.images() == 0) return NAN;
  return 100.0 * (v.engine_labels.top1() - v.emulation_labels.top1());
}

// The one line on what the table shows: the engine matches its simulation (the accuracy change is the
// recipe's), or which variants' kernels lose more than the tolerance beyond it.
std::string what_it_shows(const FakeQuantCheck& check, double top1_tolerance) {
  std::vector<std::string> off;
  double worst_gap = 0.0, lowest_agreement = 1.0;
  for (const FakeQuantVariant& v : check.variants) {
    const double gap = top1_gap_points(v);
    const bool agreement_off = 1.0 - v.vs_emulation.agreement() > top1_tolerance;
    const bool top1_off = std::isfinite(gap) && std::abs(gap) > 100.0 * top1_tolerance;
    if (agreement_off || top1_off) off.push_back(v.variant);
    if (std::isfinite(gap)) worst_gap = std::max(worst_gap, std::abs(gap));
    lowest_agreement = std::min(lowest_agreement, v.vs_emulation.agreement());
  }
  std::ostringstream line;
  if (off.empty()) {
    line << "Each FP8 engine agrees with the fake quantization of its own plan on at least "
         << percent(lowest_agreement) << " of these images"
         << (check.labelled ? cat(" and its top-1 is within ", fixed(worst_gap, 2), " points of it") : "")
         << ": the accuracy FP8 loses above is the recipe's (its scales and layer choice), not the kernels'.";
  } else {
    line << "The engine of ";
    for (std::size_t i = 0; i < off.size(); ++i) line << (i ? ", " : "") << off[i];
    line << " differs from the fake quantization of its own plan by more than "
         << fixed(100.0 * top1_tolerance, 2)
         << " points (top-1 or agreement): its kernels add error beyond what the recipe costs.";
  }
  return line.str();
}

}  // namespace

nlohmann::json FakeQuantCheck::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const FakeQuantVariant& v : variants) {
    nlohmann::json row = {{"variant", v.variant},
                          {"images", v.vs_emulation.images()},
                          {"top1_agreements", v.vs_emulation.top1_agreements()},
                          {"top1_agreement", v.vs_emulation.agreement()},
                          {"relative_l2", v.vs_emulation.relative_error()},
                          {"max_image_relative_l2", v.vs_emulation.max_image_relative_error()},
                          {"worst_image", v.vs_emulation.worst_image()},
                          {"emulation_fallback_layers", v.fallback_layers},
                          {"seconds", v.seconds}};
    if (labelled) {
      row["engine_top1"] = v.engine_labels.top1();
      row["engine_top1_correct"] = v.engine_labels.top1_correct();
      row["emulation_top1"] = v.emulation_labels.top1();
      row["emulation_top1_correct"] = v.emulation_labels.top1_correct();
    }
    rows.push_back(std::move(row));
  }
  return {{"definition",
           "each FP8 plan run by the engine and by a CPU backend that fake-quantizes it (E4M3 codes, fp32 "
           "arithmetic) on the same held-out images; relative_l2 is ||engine - emulation|| / ||emulation||"},
          {"backend", backend},
          {"emulation_backend", emulation_backend},
          {"held_out_images", held_out_images},
          {"cap", cap},
          {"images", images},
          {"variants", rows}};
}

std::string fake_quant_section(const FakeQuantCheck& check, double top1_tolerance) {
  if (check.variants.empty()) return "";
  std::ostringstream md;
  md << "### FP8 engine vs fake quantization of the same plan\n\n"
     << "Each FP8 plan also runs on `" << check.emulation_backend
     << "`, which fake-quantizes it: the same E4M3 codes, scales and fp16 layers, in fp32 arithmetic. On "
     << check.images << " of the " << check.held_out_images << " held-out images"
     << (check.images < check.held_out_images ? cat(" (a fixed-stride sample, capped at ", check.cap,
                                                    " by `fake_quant_images`: the simulation is slow)")
                                              : std::string())
     << ", the `" << check.backend << "` engine against it:\n\n";
  std::vector<MarkdownTable::Column> columns = {{"variant"}};
  if (check.labelled) {
    columns.push_back({"engine top-1", Align::kRight});
    columns.push_back({"fake-quant top-1", Align::kRight});
    columns.push_back({"difference, points", Align::kRight});
  }
  columns.push_back({"top-1 agreement", Align::kRight});
  columns.push_back({"‖engine − fake quant‖ / ‖fake quant‖", Align::kRight});
  MarkdownTable table(columns);
  for (const FakeQuantVariant& v : check.variants) {
    std::vector<std::string> row = {v.variant};
    if (check.labelled) {
      row.push_back(percent(v.engine_labels.top1()));
      row.push_back(percent(v.emulation_labels.top1()));
      row.push_back(fixed(top1_gap_points(v), 2));
    }
    row.push_back(cat(percent(v.vs_emulation.agreement()), " (", v.vs_emulation.top1_agreements(), "/",
                      v.vs_emulation.images(), ")"));
    row.push_back(scientific(v.vs_emulation.relative_error()));
    table.add_row(row);
  }
  md << table.str() << "\n" << what_it_shows(check, top1_tolerance) << "\n\n";
  return md.str();
}

}  // namespace kiln
