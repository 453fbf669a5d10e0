// Plans, graphs and file surgery shared by the plan tests.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace kiln::plan_test {

// A fresh folder under the system temp folder, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  // Names of the files inside, sorted.
  std::vector<std::string> entries() const;

 private:
  std::filesystem::path path_;
};

// A runnable f32 graph that uses every OpKind and every attribute struct with non-default values,
// with mixed per-layer precisions, two outputs and a dynamic batch; built with constants interleaved
// between layers, as a family builder would. Every PlanInfo and ModelConfig field is non-default.
Plan every_op_plan();
// A small graph whose constants are f32, f16, bf16 and e4m3 (verifies; not runnable on the
// reference kernels, which are f32 only).
Plan mixed_dtype_plan();

// Same inputs, layers (in execution order), attributes, precisions, value names, shapes, dtypes,
// constant bytes, wiring and outputs. Value ids may differ.
void expect_same_graph(const Graph& expected, const Graph& actual);
void expect_same_info(const PlanInfo& expected, const PlanInfo& actual);
void expect_same_config(const ModelConfig& expected, const ModelConfig& actual);

std::vector<std::byte> read_bytes(const std::filesystem::path& path);
void write_bytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes);

// File surgery: the parts of a well-formed plan file, and rebuilding one with a changed header and a
// fresh, valid checksum (so the reader gets past the checksum to the header checks).
nlohmann::json header_of(const std::vector<std::byte>& file);
std::size_t blob_offset_of(const std::vector<std::byte>& file);
std::vector<std::byte> with_header(const std::vector<std::byte>& file, const std::string& header_text);
std::vector<std::byte> with_header(const std::vector<std::byte>& file,
                                   const std::function<void(nlohmann::json&)>& edit);
// Recomputes the digest of a file whose bytes were edited in place.
void reseal(std::vector<std::byte>& file);

}  // namespace kiln::plan_test
