// Labels files: DIR/labels.txt or DIR/labels.csv, one "NAME,LABEL" or "NAME LABEL" per line.
//
// - NAME is an image's file name in a flat folder, or a class folder's name (e.g. an ImageNet synset
//   id) in a folder of class folders; LABEL is a non-negative integer class index.
// - The line splits at its last comma when it has one (so a name may hold spaces), else at its last
//   run of spaces or tabs. There is no quoting.
// - Blank lines and lines starting with '#' are skipped. The first line is a header, and skipped,
//   when its LABEL is not an integer ("filename,label").
// - A name listed twice is an error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace kiln {

// DIR/labels.txt or DIR/labels.csv; nullopt when neither exists, an error when both do.
std::optional<std::filesystem::path> find_labels_file(const std::filesystem::path& dir);

// Name -> label, as described above. Errors name the file and line.
std::map<std::string, std::int64_t> read_labels_file(const std::filesystem::path& path);

}  // namespace kiln
