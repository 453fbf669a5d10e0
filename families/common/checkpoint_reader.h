// Read access to a checkpoint's tensors for a family builder. Builders infer the architecture from key
// names and shapes, then take every tensor they use with the shape they expect; finish() then fails on
// keys nothing took, so a checkpoint of a different architecture never builds silently.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace kiln {

class CheckpointReader {
 public:
  // Keeps a reference: `weights` must outlive the reader.
  explicit CheckpointReader(const std::map<std::string, Tensor>& weights);

  bool has(const std::string& key) const;
  // True when some key starts with `prefix` ("layer1.0.downsample.").
  bool has_prefix(std::string_view prefix) const;

  // The key's shape; fails "checkpoint key 'K': missing (needed for layer L)".
  const Shape& shape(const std::string& key) const;
  // The key's shape, required to have `rank` dimensions.
  const Shape& shape(const std::string& key, std::size_t rank) const;

  // The tensor as f32 (converted from f16/bf16), checked against `expected`; marks the key used.
  Tensor take(const std::string& key, const Shape& expected);

  // The sorted indices i for which some key starts with `prefix` + i + "." (e.g. the blocks of
  // "layer2."). Fails naming the first gap when they are not 0..n-1.
  std::vector<std::int64_t> child_indices(const std::string& prefix) const;

  // Marks every key starting with `prefix` as used without reading it (parts of a checkpoint that
  // inference does not run, such as a training-only head); returns those keys.
  std::vector<std::string> skip_prefix(std::string_view prefix);

  // Fails "unexpected checkpoint keys: a, b (+N more)" when keys remain that nothing took; BatchNorm's
  // '*.num_batches_tracked' counters are training state and ignored.
  void finish() const;

 private:
  const std::map<std::string, Tensor>& weights_;
  std::set<std::string> taken_;
};

// "layer1.0.conv1.weight" -> "layer1.0.conv1": the module a parameter belongs to.
std::string_view layer_of_key(std::string_view key);

}  // namespace kiln
