#include "data/webdataset.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "data/brace_pattern.h"
#include "data/gzip_reader.h"
#include "data/tar_index.h"

namespace kiln {

namespace {

// A class index is a few digits; anything longer is not a .cls file.
constexpr std::uint64_t kMaxClsSize = 64;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with(std::string_view text, std::string_view end) {
  return text.size() >= end.size() && text.substr(text.size() - end.size()) == end;
}

bool is_gzip_shard(const std::filesystem::path& path) {
  const std::string name = lower(path.filename().string());
  return ends_with(name, ".tar.gz") || ends_with(name, ".tgz");
}

// A gzip shard is decompressed whole: members are read in any order later, and gzip cannot seek.
constexpr std::uint64_t kMaxDecompressedShard = std::uint64_t{4} << 30;

std::shared_ptr<const std::vector<std::uint8_t>> decompress_shard(const std::filesystem::path& shard) {
  MaybeGzipReader reader(shard);
  if (!reader.compressed()) fail(shard.string(), ": named .tar.gz or .tgz but holds no gzip data");
  auto bytes = std::make_shared<std::vector<std::uint8_t>>();
  constexpr std::size_t kStep = std::size_t{1} << 20;
  for (;;) {
    const std::size_t have = bytes->size();
    if (have >= kMaxDecompressedShard) {
      fail(shard.string(), ": decompresses to more than 4 GiB; decompress it to a .tar shard first");
    }
    bytes->resize(have + kStep);
    const std::size_t got = reader.read(bytes->data() + have, kStep);
    bytes->resize(have + got);
    if (got < kStep) break;
  }
  return bytes;
}

struct Group {
  std::string key;
  const TarMember* image = nullptr;
  const TarMember* cls = nullptr;
};

// A shard's member bytes: from the decompressed archive when there is one, else from the file (`in`,
// opened once for all its .cls members).
class ShardBytes {
 public:
  ShardBytes(const std::filesystem::path& shard, std::shared_ptr<const std::vector<std::uint8_t>> archive)
      : archive_(std::move(archive)) {
    if (archive_) return;
    in_.open(shard, std::ios::binary);
    if (!in_) fail(shard.string(), ": cannot open for reading");
  }

  std::string read(const TarMember& member, const std::string& name) {
    std::string bytes(member.size, '\0');
    if (archive_) {
      std::copy_n(archive_->data() + member.data_offset, member.size, bytes.data());
      return bytes;
    }
    in_.seekg(static_cast<std::streamoff>(member.data_offset));
    in_.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (static_cast<std::uint64_t>(in_.gcount()) != member.size) {
      fail(name, ": cannot read ", member.path, " at offset ", member.data_offset);
    }
    return bytes;
  }

 private:
  std::shared_ptr<const std::vector<std::uint8_t>> archive_;
  std::ifstream in_;
};

std::int64_t read_cls(ShardBytes& shard, const TarMember& member, const std::string& name) {
  if (member.size > kMaxClsSize) {
    fail(name, ": ", member.path, " has ", member.size, " bytes, expected a class index as text");
  }
  const std::string bytes = shard.read(member, name);
  std::string_view text = bytes;
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  text = first == std::string_view::npos ? std::string_view() : text.substr(first, last - first + 1);
  std::int64_t label = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), label);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || label < 0) {
    std::string shown(text);  // the message stays one line whatever the member holds
    std::replace_if(
        shown.begin(), shown.end(), [](unsigned char c) { return c < 0x20 || c >= 0x7F; }, '?');
    fail(name, ": ", member.path, " holds \"", shown, "\", expected a non-negative class index");
  }
  return label;
}

void add_shard_samples(const std::filesystem::path& shard, std::vector<Sample>& samples) {
  const std::string shard_name = shard.string();
  const auto archive = is_gzip_shard(shard) ? decompress_shard(shard) : nullptr;
  const std::vector<TarMember> members = archive ? index_tar(*archive, shard_name) : index_tar(shard);
  std::vector<Group> groups;
  std::unordered_map<std::string, std::size_t> group_of_key;
  for (const TarMember& member : members) {
    const std::size_t slash = member.path.rfind('/');
    const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
    // Hidden files (".DS_Store", "._x.jpg") are no samples.
    if (base >= member.path.size() || member.path[base] == '.') continue;
    const std::size_t dot = member.path.find('.', base);
    if (dot == std::string::npos) continue;
    const std::string key = member.path.substr(0, dot);
    const std::string extension = lower(std::string_view(member.path).substr(dot + 1));
    const bool image = is_image_extension(extension);
    if (!image && extension != "cls") continue;
    const auto [it, inserted] = group_of_key.emplace(key, groups.size());
    if (inserted) groups.push_back({key, nullptr, nullptr});
    Group& group = groups[it->second];
    const TarMember*& slot = image ? group.image : group.cls;
    if (slot != nullptr) {
      fail(shard_name, ": sample \"", key, "\" has two ", image ? "images" : ".cls members", " (", slot->path,
           " and ", member.path, ")");
    }
    slot = &member;
  }
  ShardBytes bytes(shard, archive);
  for (const Group& group : groups) {
    const std::string name = shard_name + ":" + group.key;
    if (group.image == nullptr) {
      fail(shard_name, ": sample \"", group.key,
           "\" has a .cls member but no image (.jpg, .jpeg, .png or .webp)");
    }
    Sample sample{name, kNoLabel, shard, group.image->data_offset, group.image->size, archive};
    if (group.cls != nullptr) sample.label = read_cls(bytes, *group.cls, name);
    samples.push_back(std::move(sample));
  }
}

}  // namespace

bool is_shard_name(const std::filesystem::path& path) {
  return lower(path.extension().string()) == ".tar" || is_gzip_shard(path);
}

std::vector<std::filesystem::path> find_shards(const std::string& spec) {
  std::vector<std::filesystem::path> shards;
  std::error_code ec;
  if (is_brace_pattern(spec)) {
    for (const std::string& name : expand_braces(spec)) {
      if (!std::filesystem::is_regular_file(name, ec)) fail(spec, ": shard ", name, " does not exist");
      shards.emplace_back(name);
    }
    return shards;
  }
  const std::filesystem::path path(spec);
  if (std::filesystem::is_regular_file(path, ec)) {
    if (!is_shard_name(path)) fail(spec, ": expected a .tar, .tar.gz or .tgz shard");
    return {path};
  }
  if (!std::filesystem::is_directory(path, ec)) fail(spec, ": does not exist");
  std::filesystem::directory_iterator it(path, ec);
  if (ec) fail(spec, ": cannot list the folder (", ec.message(), ")");
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::filesystem::path& entry = it->path();
    if (is_shard_name(entry) && entry.filename().string().front() != '.' &&
        std::filesystem::is_regular_file(entry, ec)) {
      shards.push_back(entry);
    }
  }
  if (ec) fail(spec, ": cannot list the folder (", ec.message(), ")");
  if (shards.empty()) fail(spec, ": no .tar, .tar.gz or .tgz shards found");
  std::sort(shards.begin(), shards.end());
  return shards;
}

Dataset open_webdataset(const std::string& source, const std::vector<std::filesystem::path>& shards) {
  std::vector<Sample> samples;
  for (const auto& shard : shards) add_shard_samples(shard, samples);
  if (samples.empty()) fail(source, ": no images (.jpg, .jpeg, .png, .webp) in the shards");
  return Dataset(DatasetKind::kWebDataset, source, std::move(samples), shards);
}

}  // namespace kiln
