// The operand types of kiln's Hopper matrix kernels: fp16, or 8-bit codes whose scales the epilogue
// applies (FP8 E4M3, or symmetric int8). Host and device code share it.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda::hopper {

enum class Operand : std::uint8_t { kF16, kE4m3, kS8 };

constexpr int operand_bytes(Operand o) { return o == Operand::kF16 ? 2 : 1; }

// Whether products of the operand's codes are scaled in the epilogue (by the input's scale times the
// output channel's weight scale).
constexpr bool operand_scaled(Operand o) { return o != Operand::kF16; }

using cuda::CodeGrid;  // of the codes an epilogue writes or reads

// Each tile row of shared memory holds 128 bytes of K (one 128-byte swizzle atom wide: 64 fp16 or 128
// E4M3 values), or 64 bytes (the 64-byte swizzle) for layers whose channels fill only part of a 128-byte
// row: 64 E4M3 channels would otherwise arrive with as many zeros beside them, each multiplied all the same.
constexpr int kRowBytes = 128;
constexpr int kNarrowRowBytes = 64;
template <Operand kOperand, int kKBytes = kRowBytes>
inline constexpr int kBlockK = kKBytes / operand_bytes(kOperand);

}  // namespace kiln::cuda::hopper
