// The instruction set oneDNN's kernels use on this CPU, as oneDNN itself reports it: what the cpu
// backend's bf16 precision and its default precision are decided on.
#pragma once

#include <string_view>

namespace kiln::onednn {

// oneDNN's name for the widest instruction set it dispatches to here ("AVX-512 BF16", "AVX2", ...).
std::string_view isa_name();
// Whether oneDNN runs bf16 convolutions and inner products natively here: AVX512-BF16 (its
// avx512_core_bf16 level) or AMX-BF16 (avx512_core_amx). Below that it would emulate bf16 in f32,
// slower than fp32 itself.
bool runs_bf16();
// Whether oneDNN's int8 kernels have int8 dot products here (AVX512-VNNI, AVX-VNNI or AMX). Without them
// they sum pairs of u8 x s8 products in saturating 16-bit registers, which loses large sums.
bool runs_int8();

}  // namespace kiln::onednn
