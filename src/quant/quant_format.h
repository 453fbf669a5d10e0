// The two grids kiln quantizes to. FP8 E4M3 is a float format (levels dense near zero, 448 at the top);
// int8 is uniform (integer codes, 127 at the top of a symmetric scale). A scale maps a clipping threshold
// (amax) to the grid's top, so everything that chooses or applies a scale asks the format for both.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace kiln {

enum class QuantFormat : std::uint8_t { kE4M3, kInt8 };

// "fp8-e4m3" or "int8", as quantization reports and calibration caches record it.
std::string_view quant_format_name(QuantFormat format);
std::optional<QuantFormat> quant_format_from_name(std::string_view name);

// The format of a quantized precision (fp8 or int8); throws for others.
QuantFormat quant_format_of(Precision precision);
Precision precision_of(QuantFormat format);

// The largest magnitude a symmetric scale maps amax to: 448 or 127.
float grid_max(QuantFormat format);

// `scaled` (a value already divided by its scale) on the grid: the E4M3 value or the int8 code it rounds
// to, saturating, as a float. Rises with `scaled`, so equal results mean one level.
float round_to_grid(QuantFormat format, float scaled);

// The grid's non-negative levels in ascending order: 0 .. 448 in E4M3, 0 .. 127 in int8.
std::vector<float> grid_levels(QuantFormat format);

// value fake-quantized with `scale` on the grid (core/dtype.h's fake_quantize_e4m3 or fake_quantize_int8).
float fake_quantize_on(QuantFormat format, float value, float scale);

}  // namespace kiln
