#include "backends/cuda/convolution/tactic_key.h"

#include <cctype>

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

namespace {

// `gpu` with its spaces made underscores (the cache file's fields are space-separated).
std::string key_field(std::string_view gpu) {
  std::string name(gpu);
  for (char& c : name) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) c = '_';
  }
  return name;
}

}  // namespace

std::string tactic_key(const TacticKey& key) { return tactic_key(key, current_device_name()); }

std::string tactic_key(const TacticKey& key, std::string_view gpu) {
  const ConvGeometry& g = key.geometry;
  return cat(key.runner, key.version.empty() ? "" : "@", key.version, ":", key_field(gpu), ":", key.precision,
             ":n", g.n, "c", g.c, "h", g.h, "w", g.w, "k", g.k, "r", g.r, "s", g.s, "p", g.pad_h, "x",
             g.pad_w, "u", g.stride_h, "x", g.stride_w, "d", g.dilation_h, "x", g.dilation_w, "g", g.groups,
             g.packed() ? std::string() : cat(":pitch", g.x_pitch, "/", g.y_pitch, "/", g.residual_pitch),
             ":act", static_cast<int>(key.act), ":res", key.residual ? 1 : 0, key.variant.empty() ? "" : ":",
             key.variant);
}

std::string key_fields(std::initializer_list<std::string> fields) {
  std::string joined;
  for (const std::string& field : fields) {
    if (field.empty()) continue;
    joined += joined.empty() ? "" : ":";
    joined += field;
  }
  return joined;
}

}  // namespace kiln::cuda
