// validate_manifest(): the rules on a parsed manifest's values and on how they fit together.
#include <algorithm>
#include <array>

#include "core/error.h"
#include "manifest/manifest.h"

namespace kiln {

namespace {

// Backend kinds a manifest may ask for, whether or not this build of kiln includes them.
constexpr std::array<std::string_view, 2> kBackendKinds = {"cpu", "cuda"};
constexpr std::int64_t kMaxOptLevel = 3;       // builder/build_plan.h: levels 0..3
constexpr std::int64_t kDetectionStride = 32;  // detection heads downsample by 32

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return is_hex_digit(c) && !(c >= 'A' && c <= 'F'); });
}
bool is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// One part of a Hub id: letters, digits, '-', '_' and '.', not starting or ending with '-' or '.'.
bool is_hub_name(std::string_view part) {
  if (part.empty() || part.size() > 96) return false;
  if (part.front() == '-' || part.front() == '.' || part.back() == '-' || part.back() == '.') return false;
  if (part.find("..") != std::string_view::npos || part.find("--") != std::string_view::npos) return false;
  return std::all_of(part.begin(), part.end(),
                     [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_hub_id(std::string_view id) {
  const std::size_t slash = id.find('/');
  if (slash == std::string_view::npos) return false;
  return is_hub_name(id.substr(0, slash)) && is_hub_name(id.substr(slash + 1));
}

// A tag or branch name as git allows them (a practical subset: no spaces, no "..", no leading '-').
bool is_ref_name(std::string_view ref) {
  if (ref.empty() || ref.size() > 255) return false;
  if (ref.front() == '-' || ref.front() == '/' || ref.front() == '.') return false;
  if (ref.back() == '/' || ref.back() == '.' || ref.ends_with(".lock")) return false;
  if (ref.find("..") != std::string_view::npos || ref.find("//") != std::string_view::npos) return false;
  return std::all_of(ref.begin(), ref.end(),
                     [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.' || c == '/'; });
}

// Fails with "<file>: key '<key>': <parts>" unless `condition` holds.
void require_key(const Manifest& manifest, bool condition, std::string_view key, auto&&... parts) {
  if (!condition) fail(manifest.path.string(), ": key '", key, "': ", parts...);
}

void check_model(const Manifest& m, const std::vector<std::string>& known_families) {
  const bool known =
      std::find(known_families.begin(), known_families.end(), m.family) != known_families.end();
  std::string names;
  for (const auto& name : known_families) names += cat(names.empty() ? "" : ", ", name);
  require_key(m, known, "model.family", "expected a known family (",
              names.empty() ? "none are registered" : cat("one of ", names), "), got '", m.family, "'");

  require_key(m, is_hub_id(m.hub_id), "model.hub_id",
              "expected a Hub id \"owner/name\" (letters, digits, '-', '_', '.'), got '", m.hub_id, "'");

  // An all-hex revision is a commit and must be complete: an abbreviated one is not resolvable on the Hub.
  const bool all_hex = !m.revision.empty() && std::all_of(m.revision.begin(), m.revision.end(), is_hex_digit);
  if (all_hex && m.revision.size() >= 7) {
    require_key(m, m.revision.size() == 40 && is_lower_hex(m.revision), "model.revision",
                "expected a full commit id of 40 lowercase hex digits, got '", m.revision, "' (",
                m.revision.size(), " characters)");
  } else {
    require_key(m, is_ref_name(m.revision), "model.revision",
                "expected a 40-hex commit id or a tag/branch name, got '", m.revision, "'");
  }

  const std::string& digest = m.checkpoint_sha256;
  require_key(m, digest.empty() || (digest.size() == 64 && is_lower_hex(digest)), "model.checkpoint_sha256",
              "expected 64 lowercase hex digits (or \"\" for none), got '", digest, "' (", digest.size(),
              " characters)");
}

void check_input(const Manifest& m) {
  require_key(m, m.input_size > 0, "input.size", "expected a positive integer, got ", m.input_size);
  if (m.task == Task::kDetection) {
    require_key(m, m.input_size % kDetectionStride == 0, "input.size", "expected a multiple of ",
                kDetectionStride, " for task detection, got ", m.input_size);
  }
  require_key(m, !m.batch_sizes.empty(), "input.batch",
              "expected at least one batch size, got an empty list");
  for (std::size_t i = 0; i < m.batch_sizes.size(); ++i) {
    const std::int64_t batch = m.batch_sizes[i];
    require_key(m, batch > 0, "input.batch", "expected positive batch sizes, got ", batch);
    const bool repeated =
        std::find(m.batch_sizes.begin(), m.batch_sizes.begin() + static_cast<std::ptrdiff_t>(i), batch) !=
        m.batch_sizes.begin() + static_cast<std::ptrdiff_t>(i);
    require_key(m, !repeated, "input.batch", "expected distinct batch sizes, got ", batch, " twice");
  }
}

void check_build(const Manifest& m) {
  require_key(m, m.opt_level >= 0 && m.opt_level <= kMaxOptLevel, "build.opt_level", "expected 0 to ",
              kMaxOptLevel, ", got ", m.opt_level);
  require_key(m, !m.backends.empty(), "build.backends", "expected at least one backend, got an empty list");
  for (std::size_t i = 0; i < m.backends.size(); ++i) {
    const std::string& backend = m.backends[i];
    const bool known = std::find(kBackendKinds.begin(), kBackendKinds.end(), backend) != kBackendKinds.end();
    require_key(m, known, "build.backends", "expected each of cpu, cuda, got '", backend, "'");
    const auto end = m.backends.begin() + static_cast<std::ptrdiff_t>(i);
    require_key(m, std::find(m.backends.begin(), end, backend) == end, "build.backends",
                "expected distinct backends, got '", backend, "' twice");
  }
}

void check_quantization(const Manifest& m) {
  // FP8 and int8 engines need scales, and the scales come from this section's calibration.
  require_key(m, !is_quantized(m.precision) || m.quantization.has_value(), "quantization",
              "expected a [quantization] section (weights, activations, calibration, calibration_images, ",
              "recipe) because build.precision is ", precision_name(m.precision));
  if (!m.quantization) return;
  const QuantizationSettings& q = *m.quantization;
  require_key(m, q.calibration_images > 0, "quantization.calibration_images",
              "expected a positive integer, got ", q.calibration_images);
  const bool blank =
      std::all_of(q.recipe.begin(), q.recipe.end(), [](char c) { return c == ' ' || c == '\t'; });
  require_key(m, !blank, "quantization.recipe",
              "expected all, nose, nose-L1, auto or a layer-name pattern, got an empty recipe");
}

}  // namespace

void validate_manifest(const Manifest& manifest, const std::vector<std::string>& known_families) {
  check_model(manifest, known_families);
  check_input(manifest);
  check_build(manifest);
  check_quantization(manifest);
}

}  // namespace kiln
