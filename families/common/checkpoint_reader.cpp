#include "families/common/checkpoint_reader.h"

#include <charconv>

#include "core/error.h"

namespace kiln {

namespace {

constexpr std::size_t kListedUnexpectedKeys = 8;
constexpr std::string_view kBatchCounterSuffix = ".num_batches_tracked";

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view layer_of_key(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(0, dot);
}

CheckpointReader::CheckpointReader(const std::map<std::string, Tensor>& weights) : weights_(weights) {}

bool CheckpointReader::has(const std::string& key) const { return weights_.contains(key); }

bool CheckpointReader::has_prefix(std::string_view prefix) const {
  const auto it = weights_.lower_bound(std::string(prefix));
  return it != weights_.end() && it->first.starts_with(prefix);
}

std::vector<std::string> CheckpointReader::skip_prefix(std::string_view prefix) {
  std::vector<std::string> skipped;
  for (auto it = weights_.lower_bound(std::string(prefix));
       it != weights_.end() && it->first.starts_with(prefix); ++it) {
    taken_.insert(it->first);
    skipped.push_back(it->first);
  }
  return skipped;
}

const Shape& CheckpointReader::shape(const std::string& key) const {
  const auto it = weights_.find(key);
  if (it == weights_.end())
    fail("checkpoint key '", key, "': missing (needed for layer ", layer_of_key(key), ")");
  return it->second.shape();
}

const Shape& CheckpointReader::shape(const std::string& key, std::size_t rank) const {
  const Shape& found = shape(key);
  require(found.size() == rank, "checkpoint key '", key, "': expected a rank-", rank, " tensor, got shape ",
          shape_str(found));
  return found;
}

Tensor CheckpointReader::take(const std::string& key, const Shape& expected) {
  const Shape& found = shape(key);
  require(found == expected, "checkpoint key '", key, "': expected shape ", shape_str(expected), ", got ",
          shape_str(found));
  const Tensor& tensor = weights_.at(key);
  taken_.insert(key);
  switch (tensor.dtype()) {
    case DType::kF32:
      return tensor;
    case DType::kF16:
    case DType::kBF16:
      return tensor.to(DType::kF32);
    default:
      break;
  }
  fail("checkpoint key '", key, "': expected dtype F32, F16 or BF16, got ", safetensors_name(tensor.dtype()));
}

std::vector<std::int64_t> CheckpointReader::child_indices(const std::string& prefix) const {
  std::set<std::int64_t> found;
  for (auto it = weights_.lower_bound(prefix); it != weights_.end() && it->first.starts_with(prefix); ++it) {
    const std::string_view rest = std::string_view(it->first).substr(prefix.size());
    std::int64_t index = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
    // Keys like "layer1.foo" are not children; finish() reports them if nothing else takes them.
    if (error == std::errc() && end != rest.data() && end < rest.data() + rest.size() && *end == '.') {
      found.insert(index);
    }
  }
  std::vector<std::int64_t> indices(found.begin(), found.end());
  for (std::size_t i = 0; i < indices.size(); ++i) {
    require(indices[i] == static_cast<std::int64_t>(i), "checkpoint keys '", prefix,
            "*': indices are not 0..", indices.size() - 1, " (no '", prefix, i, ".*' keys)");
  }
  return indices;
}

void CheckpointReader::finish() const {
  std::vector<std::string_view> unexpected;
  for (const auto& [key, tensor] : weights_) {
    if (!taken_.contains(key) && !ends_with(key, kBatchCounterSuffix)) unexpected.push_back(key);
  }
  if (unexpected.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < unexpected.size() && i < kListedUnexpectedKeys; ++i) {
    if (i != 0) list += ", ";
    list += unexpected[i];
  }
  if (unexpected.size() > kListedUnexpectedKeys) {
    list += cat(" (+", unexpected.size() - kListedUnexpectedKeys, " more)");
  }
  fail("unexpected checkpoint keys: ", list);
}

}  // namespace kiln
