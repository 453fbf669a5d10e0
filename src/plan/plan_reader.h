// Loading a plan (the file is defined in plan_format.h).
//
// The file is read once into one 64-byte-aligned buffer; every constant is a read-only view into it,
// and the buffer lives as long as any of those tensors. Loading costs one read, one SHA-256 pass and
// parsing a small JSON header: no weight is copied or converted.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "plan/plan.h"

namespace kiln {

struct PlanReadOptions {
  // Hashing the whole file is most of the load time of a large plan. A caller that already trusts the
  // file (it checked it once, or wrote it itself) may skip the hash; every other check still runs, so
  // damage goes unnoticed only where it changes weight bytes.
  bool verify_checksum = true;
};

// Fails with one kiln::Error naming the file on anything that is not a well-formed plan this kiln can
// run: a wrong magic, a newer format version or unknown flags, truncation, a checksum mismatch,
// malformed JSON, an unknown operator, dtype or attribute struct, a missing or mistyped header key,
// value ids out of range, constant data that does not fit its shape and dtype or lies outside the
// blob; and finally anything graph/verifier.h rejects.
Plan read_plan(const std::filesystem::path& path, const PlanReadOptions& options = {});

// The same for a plan's bytes in memory (copied once into an aligned buffer the constants view); `name`
// stands for the file in error messages.
Plan read_plan_bytes(std::span<const std::byte> bytes, const std::string& name,
                     const PlanReadOptions& options = {});

}  // namespace kiln
