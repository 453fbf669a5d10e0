// Telling what a file is from its first bytes, so that a reader handed a file of another kind names it
// ("m.jpg: this is a JPEG image, not a safetensors checkpoint") instead of reporting whatever its own
// parser makes of foreign bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace kiln {

enum class FileKind { kUnknown, kJpeg, kPng, kWebp, kPlan, kTar, kNpy, kSafetensors, kJson, kGzip, kZip };

// A kiln plan's first bytes (plan/plan_format.h builds the format on them).
inline constexpr std::array<char, 8> kPlanMagic = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};

// Bytes enough to recognise every kind (tar's "ustar" sits at 257).
inline constexpr std::size_t kFileKindHeadSize = 512;

// The kind `head` (a file's first bytes, up to kFileKindHeadSize) begins like; kUnknown when none.
FileKind sniff_file_kind(std::span<const std::uint8_t> head);

// The kind of the file at `path`; kUnknown when it is no regular file or cannot be read.
FileKind sniff_file_kind(const std::filesystem::path& path);

// "a JPEG image", "a kiln plan", ... for messages.
std::string_view file_kind_description(FileKind kind);

// Fails "<name>: this is <kind>, not <expected>" when `head` is of a known kind other than `wanted`;
// returns quietly for `wanted` and for bytes of no known kind (the reader's own checks then speak).
void reject_other_file_kind(std::span<const std::uint8_t> head, FileKind wanted, const std::string& name,
                            std::string_view expected);

}  // namespace kiln
