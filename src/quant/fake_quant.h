// FP8 E4M3 quantization as a simulation in f32, and the weight scales it and int8 use. A value x is
// stored as round_to_e4m3(x / scale) and read back as that times scale, so a clipping threshold (amax) T
// maps to scale T / 448 (kE4M3Max); on the int8 grid to T / 127 (quant/quant_format.h). Weights get one
// scale per output channel (or per tensor) from their exact amax; activations get one per tensor from a
// calibrator (quant/calibrator.h).
//
// Scales are never zero: amax 0 (an all-zero tensor or weight channel) gets scale 1/448 (1/127), as if its
// amax were 1. That quantizes zeros to zeros like any other scale would and keeps x / scale finite.
#pragma once

#include <span>
#include <vector>

#include "core/tensor.h"
#include "quant/quant_format.h"

namespace kiln {

// amax / 448 (at least the smallest normal float, so that the reciprocal int8 quantizers multiply by is
// finite and flush-to-zero leaves the scale alone), or 1 / 448 for amax 0; amax must be finite, >= 0.
float scale_for_amax(float amax, QuantFormat format = QuantFormat::kE4M3);

// From the exact amax; the weight must be a float tensor (converted to f32) of finite values.
// Per channel: axis 0 is the output channel, the amax is over the rest of each channel.
std::vector<float> per_channel_weight_scales(const Tensor& weight, QuantFormat format = QuantFormat::kE4M3);
float per_tensor_weight_scale(const Tensor& weight, QuantFormat format = QuantFormat::kE4M3);

// x -> round_to_e4m3(x / scale) * scale in f32, as PyTorch's fake quantization computes it. Beyond
// 448 * scale (infinities too) values saturate to +-448 * scale; NaN stays NaN. Scales must be positive
// and finite; fake_quantize, the inner loop, leaves that check to its callers.
float fake_quantize(float value, float scale);
void fake_quantize_inplace(std::span<float> values, float scale);
// One scale per output channel (axis 0); returns new f32 weights.
Tensor fake_quantize_per_channel(const Tensor& weight, const std::vector<float>& scales);

}  // namespace kiln
