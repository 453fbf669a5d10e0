// NumPy .npy files (format versions 1.0-3.0, little-endian, C order) for f64, f32, f16, i64, i32, u8, bool.
#pragma once

#include <filesystem>

#include "core/tensor.h"

namespace kiln {

// Fails with "<path>: <what is wrong>" on a bad magic, header, dtype, Fortran order or truncated data.
Tensor read_npy(const std::filesystem::path& path);
// Writes version 1.0 through a temp file and a rename.
void write_npy(const std::filesystem::path& path, const Tensor& tensor);

}  // namespace kiln
