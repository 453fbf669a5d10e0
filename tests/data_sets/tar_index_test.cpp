// index_tar: the tar dialects webdataset shards come in, and one-line errors naming the shard and
// the offset for broken archives.
#include "data/tar_index.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data_set_fixtures.h"

namespace kiln {
namespace {

using testing::ScratchDir;
using testing::TarWriter;

std::string index_error(const std::filesystem::path& path) {
  try {
    index_tar(path);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "index_tar(" << path << ") did not throw";
  return "";
}

void expect_one_line(const std::string& message, const std::string& mention, const std::string& what) {
  EXPECT_NE(message.find(mention), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TarIndex, UstarMembersWithOffsetsAndSizes) {
  ScratchDir dir;
  TarWriter tar;
  tar.add_directory("val/");
  tar.add("old_style_folder/", "");  // a regular-file type with a trailing slash is a folder
  tar.add("val/a.jpg", std::string(700, 'a'));
  tar.add("val/a.cls", "3\n");
  tar.add("empty.txt", "");
  tar.write(dir.file("s.tar"));
  const auto members = index_tar(dir.file("s.tar"));
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].path, "val/a.jpg");
  EXPECT_EQ(members[0].header_offset, 1024u);
  EXPECT_EQ(members[0].data_offset, 1536u);
  EXPECT_EQ(members[0].size, 700u);
  EXPECT_EQ(members[1].path, "val/a.cls");
  EXPECT_EQ(members[1].data_offset, 1536u + 1024u + 512u);
  EXPECT_EQ(members[2].path, "empty.txt");
  EXPECT_EQ(members[2].size, 0u);
  const std::string bytes = testing::read_text(dir.file("s.tar"));
  EXPECT_EQ(bytes.substr(members[1].data_offset, 2), "3\n");
}

TEST(TarIndex, LongNamesFromPrefixGnuAndPax) {
  ScratchDir dir;
  const std::string deep = std::string(60, 'd') + "/" + std::string(60, 'e') + "/key.jpg";
  const std::string long_name = std::string(150, 'x') + ".jpg";
  const std::string pax_name = std::string(120, 'p') + ".png";
  TarWriter tar;
  tar.add(deep, "1");
  tar.add_gnu_long_name(long_name, "22");
  tar.add_pax_path(pax_name, "short.png", "333");
  tar.add("after.cls", "4");
  tar.write(dir.file("long.tar"));
  const auto members = index_tar(dir.file("long.tar"));
  ASSERT_EQ(members.size(), 4u);
  EXPECT_EQ(members[0].path, deep);
  EXPECT_EQ(members[1].path, long_name);
  EXPECT_EQ(members[1].size, 2u);
  EXPECT_EQ(members[2].path, pax_name);
  EXPECT_EQ(members[2].size, 3u);
  EXPECT_EQ(members[3].path, "after.cls");  // the pax name applied to one entry only
}

TEST(TarIndex, Base256SizeAndMissingEndBlocks) {
  ScratchDir dir;
  TarWriter tar;
  tar.add_base256_size("big.jpg", std::string(1000, 'b'));
  tar.write(dir.file("b.tar"), /*end_blocks=*/false);
  const auto members = index_tar(dir.file("b.tar"));
  ASSERT_EQ(members.size(), 1u);
  EXPECT_EQ(members[0].size, 1000u);
}

TEST(TarIndex, EmptyArchiveHasNoMembers) {
  ScratchDir dir;
  TarWriter().write(dir.file("empty.tar"));
  EXPECT_TRUE(index_tar(dir.file("empty.tar")).empty());
}

// An archive in memory (a decompressed .tar.gz) indexes as its file does, and a cut one fails naming it.
TEST(TarIndex, InMemoryArchiveIndexesLikeItsFile) {
  ScratchDir dir;
  TarWriter tar;
  tar.add_gnu_long_name(std::string(150, 'x') + ".jpg", "22");
  tar.add_pax_path(std::string(120, 'p') + ".png", "short.png", "333");
  tar.add("after.cls", "4");
  tar.write(dir.file("m.tar"));
  const std::string text = tar.bytes();
  const std::vector<std::uint8_t> bytes(text.begin(), text.end());
  const auto from_file = index_tar(dir.file("m.tar"));
  const auto from_memory = index_tar(bytes, "m.tar.gz");
  ASSERT_EQ(from_memory.size(), from_file.size());
  for (std::size_t i = 0; i < from_file.size(); ++i) {
    EXPECT_EQ(from_memory[i].path, from_file[i].path);
    EXPECT_EQ(from_memory[i].data_offset, from_file[i].data_offset);
    EXPECT_EQ(from_memory[i].size, from_file[i].size);
  }
  const std::vector<std::uint8_t> cut(
      bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(tar.header_offset(2) + 100));
  try {
    index_tar(cut, "cut.tar.gz");
    ADD_FAILURE() << "a cut archive was indexed";
  } catch (const Error& e) {
    expect_one_line(e.what(), "cut.tar.gz", "truncated tar");
  }
}

TEST(TarIndex, BadChecksumNamesShardAndOffset) {
  ScratchDir dir;
  TarWriter tar;
  tar.add("a.jpg", "x");
  tar.add("b.jpg", "y");
  std::string bytes = tar.bytes();
  bytes[tar.header_offset(1) + 3] ^= 0x20;  // change the second member's name
  testing::write_text(dir.file("bad.tar"), bytes);
  expect_one_line(index_error(dir.file("bad.tar")), dir.file("bad.tar").string(), "checksum at offset 1024");
}

TEST(TarIndex, NotATarFile) {
  ScratchDir dir;
  testing::write_text(dir.file("photo.tar"), testing::photo_bytes());
  expect_one_line(index_error(dir.file("photo.tar")), "photo.tar", "checksum at offset 0");
}

TEST(TarIndex, TruncatedMemberNamesShardAndOffset) {
  ScratchDir dir;
  TarWriter tar;
  tar.add("a.jpg", std::string(600, 'a'));
  tar.add("b.jpg", std::string(2000, 'b'));
  const std::string bytes = tar.bytes(false);
  testing::write_text(dir.file("cut.tar"), bytes.substr(0, tar.header_offset(1) + 512 + 1000));
  const std::string message = index_error(dir.file("cut.tar"));
  expect_one_line(message, "cut.tar", "truncated");
  EXPECT_NE(message.find("offset " + std::to_string(tar.header_offset(1))), std::string::npos) << message;
}

TEST(TarIndex, TruncatedHeaderAndPadding) {
  ScratchDir dir;
  TarWriter tar;
  tar.add("a.jpg", std::string(600, 'a'));
  const std::string bytes = tar.bytes(false);
  testing::write_text(dir.file("header.tar"), bytes.substr(0, 300));
  expect_one_line(index_error(dir.file("header.tar")), "header.tar", "truncated");
  testing::write_text(dir.file("padding.tar"), bytes.substr(0, 512 + 600));
  expect_one_line(index_error(dir.file("padding.tar")), "padding.tar", "truncated");
}

TEST(TarIndex, MalformedSizeField) {
  ScratchDir dir;
  TarWriter tar;
  tar.add("a.jpg", "a");
  std::string bytes = tar.bytes();
  bytes[124 + 3] = '9';  // not octal; fix the checksum so that only the size is wrong
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i)
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(bytes[i]);
  char checksum[8];
  std::snprintf(checksum, sizeof(checksum), "%06o", sum);
  std::memcpy(bytes.data() + 148, checksum, 7);
  testing::write_text(dir.file("size.tar"), bytes);
  expect_one_line(index_error(dir.file("size.tar")), "size.tar", "size field");
}

// Damaged archives either index or fail with kiln::Error; nothing else escapes, and no member
// reaches past the end of the file.
TEST(TarIndex, DamagedArchivesFailCleanly) {
  ScratchDir dir;
  TarWriter tar;
  tar.add("a.jpg", std::string(700, 'a'));
  tar.add_gnu_long_name(std::string(130, 'g') + ".png", "gg");
  tar.add_pax_path(std::string(110, 'p') + ".cls", "x.cls", "7");
  const std::string good = tar.bytes();
  std::uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 400; ++trial) {
    std::string bytes = good;
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) bytes[next() % bytes.size()] = static_cast<char>(next() >> 24);
    if (trial % 5 == 0) bytes.resize(next() % bytes.size());
    const auto path = dir.file("damaged.tar");
    testing::write_text(path, bytes);
    try {
      for (const TarMember& member : index_tar(path)) {
        EXPECT_LE(member.data_offset + member.size, bytes.size()) << "trial " << trial;
      }
    } catch (const Error& error) {
      EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
    }
  }
}

TEST(TarIndex, MissingFile) {
  ScratchDir dir;
  expect_one_line(index_error(dir.file("none.tar")), "none.tar", "cannot open");
}

}  // namespace
}  // namespace kiln
