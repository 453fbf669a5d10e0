// Webdataset shards: tar files, uncompressed (.tar) or gzip-compressed (.tar.gz, .tgz: decompressed
// into memory once, at most 4 GiB), whose members are grouped into samples by key. A member
// "DIR/KEY.EXT" belongs to sample "DIR/KEY", KEY being its file name up to the first dot. A sample's
// image is its .jpg, .jpeg, .png or .webp member (extensions in any case); its label, when there is
// one, is its .cls member: a class index as ASCII text. Other members (.json, .txt, ...) are ignored.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace kiln {

// True for a shard's file name: .tar, .tar.gz or .tgz, in any case.
bool is_shard_name(const std::filesystem::path& path);

// The shards `spec` names: one shard file, a folder's shards (sorted by name), or a brace pattern
// ("shard-{000000..000009}.tar") whose every shard must exist.
std::vector<std::filesystem::path> find_shards(const std::string& spec);

// Indexes each shard once. Samples come shard by shard in the order given, and within a shard in
// the order their first member appears (the order webdataset reads them). Fails naming the shard on
// a broken archive, a sample with two images, a .cls without an image, or a .cls that is not a
// non-negative integer.
Dataset open_webdataset(const std::string& source, const std::vector<std::filesystem::path>& shards);

}  // namespace kiln
