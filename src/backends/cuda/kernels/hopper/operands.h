// The operand types of kiln's Hopper matrix kernels: fp16, or FP8 E4M3 codes whose scales the epilogue
// applies. Host and device code share it.
#pragma once

#include <cstdint>

namespace kiln::cuda::hopper {

enum class Operand : std::uint8_t { kF16, kE4m3 };

constexpr int operand_bytes(Operand o) { return o == Operand::kF16 ? 2 : 1; }

// Each tile row of shared memory holds 128 bytes of K (one 128-byte swizzle atom wide: 64 fp16 or 128
// E4M3 values), or 64 bytes (the 64-byte swizzle) for layers whose channels fill only part of a 128-byte
// row: 64 E4M3 channels would otherwise arrive with as many zeros beside them, each multiplied all the same.
constexpr int kRowBytes = 128;
constexpr int kNarrowRowBytes = 64;
template <Operand kOperand, int kKBytes = kRowBytes>
inline constexpr int kBlockK = kKBytes / (kOperand == Operand::kF16 ? 2 : 1);

}  // namespace kiln::cuda::hopper
