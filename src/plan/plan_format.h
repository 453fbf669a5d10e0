// The kiln plan file (.kplan): one file holding an optimized graph, its weights and everything the
// runtime needs to serve it without the checkpoint or config.json. docs/PLAN_FORMAT.md is the user
// guide; this comment is the definition the reader and writer follow.
//
// Layout. Integers are little-endian; every offset is in bytes.
//
//   offset 0    8 bytes   magic "KILNPLAN"
//   offset 8    u32       format version (kPlanFormatVersion). A reader refuses larger numbers.
//   offset 12   u32       flags. A reader refuses any bit it does not know, so a later version can mark
//                         a change old readers must not ignore. Bit 0 (kDetectorFlag): a detector
//                         plan; the header then has a "detector" section, which no other plan has.
//   offset 16   u64       header length H
//   offset 24   H bytes   header: one UTF-8 JSON object, described below
//               ...       zero bytes up to B = the first multiple of 64 at or after 24 + H
//   offset B    S bytes   weight blob, S = header["blob"]["size"]. Each constant is stored at B + its
//                         offset, the offset a multiple of 64, as the raw little-endian bytes of its
//                         dtype in row-major order; the gaps between constants are zero bytes.
//   offset B+S  32 bytes  SHA-256 of bytes [0, B + S): everything before the trailer
//               8 bytes   end marker "KPLANEND"; the file ends here, so its size is B + S + 40
//
// Header. Objects have their keys sorted and no whitespace, so equal plans give equal bytes.
//
//   build:        {kiln_version, backend, precision ("fp32" | "fp16" | "fp8" | "bf16" | "int8"), opt_level,
//   batch,
//                  passes: [pass names in the order they ran], precision_reason (optional: why the
//                  build chose its precision when none was asked for), backend_options (optional:
//                  {NAME: VALUE} strings, every option of the backend as the build resolved them,
//                  e.g. the cuda backend's {"fp8-gemm": "race", ...}; absent: the backend's defaults)}
//   bundle:       {family, checkpoint: {name, sha256 (64 hex digits, or "")},
//                  config: {architecture, num_classes, label_names: [...],
//                           preprocess: {input_size, interpolation ("bilinear" | "bicubic" |
//                                        "nearest"), crop_pct, crop_mode, mean: [3], std: [3]}}}
//   quantization: an object, free-form (calibration scales and the like)
//   detector:     detector plans only: {model, task, image_size, max_det, class_names: [...],
//                  strides: [finest first], letterbox: {fill}}; the graph's output is the decoded
//                  predictions [N, 4 + classes, anchors] the detector's selection reads
//   blob:         {alignment: 64, size: S}
//   graph:        {values: [...], inputs: [value ids], outputs: [value ids], layers: [...]}
//
// A value id is an index into graph.values. Each value is
//   {name, dtype (safetensors spelling: "F32", "F16", "BF16", "F8_E4M3", ...), shape: [extents],
//    data: {offset, size}}
// where data is present for constants only, and size must equal the element count times the dtype
// size. Every value is exactly one of: a graph input (listed in graph.inputs), a constant, or the
// output of one layer. A -1 extent (dimension 0 only, by convention) means "any batch".
//
// Layers are listed in execution order (each reads only inputs, constants and outputs of earlier
// layers):
//   {op (an OpKind name, e.g. "conv2d"), name (unique), inputs: [value ids], output: value id,
//    precision, attributes: {} or {STRUCT: {field: value, ...}}, backend_data (optional, any JSON)}
// STRUCT names the attribute struct ("conv", "batch_norm", "activation", "pool", "add", "radix") and
// its fields are named, never positional. Within one format version fields may be added: a reader
// ignores keys it does not know and refuses a missing or mistyped key it needs.
//
// The writer numbers values canonically: graph inputs, then constants, then layer outputs in
// execution order; dead layers and values no live layer reads are left out.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "io/file_kind.h"

namespace kiln::plan_format {

inline constexpr std::array<char, 8> kMagic = kPlanMagic;  // io/file_kind.h, which recognises plans
inline constexpr std::array<char, 8> kEndMarker = {'K', 'P', 'L', 'A', 'N', 'E', 'N', 'D'};
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint32_t kDetectorFlag = 1;
inline constexpr std::uint32_t kKnownFlags = kDetectorFlag;
inline constexpr std::size_t kPreambleSize = 24;  // magic, version, flags, header length
inline constexpr std::size_t kDigestSize = 32;
inline constexpr std::size_t kTrailerSize = kDigestSize + kEndMarker.size();
inline constexpr std::size_t kAlignment = 64;

inline constexpr std::size_t align_up(std::size_t offset) {
  return (offset + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace kiln::plan_format

namespace kiln {
inline constexpr std::uint32_t kPlanFormatVersion = plan_format::kVersion;
}  // namespace kiln
