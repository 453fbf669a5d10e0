// The operand types of kiln's Hopper matrix kernels: fp16, or FP8 E4M3 codes whose scales the epilogue
// applies. Host and device code share it.
#pragma once

#include <cstdint>

namespace kiln::cuda::hopper {

enum class Operand : std::uint8_t { kF16, kE4m3 };

constexpr int operand_bytes(Operand o) { return o == Operand::kF16 ? 2 : 1; }

// Each tile row of shared memory holds 128 bytes of K (one 128-byte swizzle atom wide): 64 fp16 or 128
// E4M3 values.
constexpr int kRowBytes = 128;
template <Operand kOperand>
inline constexpr int kBlockK = kRowBytes / (kOperand == Operand::kF16 ? 2 : 1);

}  // namespace kiln::cuda::hopper
