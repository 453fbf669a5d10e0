// JPEG and PNG decoding to 8-bit RGB with the pixel values PIL gives for Image.open(f).convert("RGB"),
// which is what timm's loaders feed the eval transform. EXIF orientation is not applied (timm does not).
//
// Both libraries report fatal errors through a callback that must not return; ours longjmp back to
// the decoding function, which owns no object with a destructor between setjmp and longjmp (all such
// objects are created before setjmp), and then throws kiln::Error from ordinary C++ code.
#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

// clang-format off
#include <png.h>
#include <jpeglib.h>  // needs FILE and size_t declared first
#include <jerror.h>
// clang-format on

#include "core/error.h"
#include "core/regular_file.h"
#include "io/file_kind.h"
#include "io/image.h"
#include "io/image_decode_webp.h"

namespace kiln {
namespace {

// PIL's Image.MAX_IMAGE_PIXELS, above which Pillow warns of a decompression bomb: larger headers are
// refused before anything is allocated, so a hostile header cannot make kiln allocate more than about
// 360 MB (libwebp's lossless decoder keeps 4 bytes a pixel beside kiln's 3). A WebP of a few dozen
// bytes can claim 150 million pixels, and lossless WebP (a single-colour image codes in almost no
// bits) gives no byte count that bounds its size, as deflate's ratio does for PNG.
constexpr std::uint64_t kMaxPixels = 89478485ull;
static_assert(kMaxImageFileBytes == kMaxPixels * 8, "image.h bounds files by these pixels");

// The most deflate (PNG's compression) can shrink data: 258 bytes from a 2-bit code at best.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

constexpr std::array<std::uint8_t, 3> kJpegMagic{0xFF, 0xD8, 0xFF};
constexpr std::array<std::uint8_t, 8> kPngMagic{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

template <std::size_t N>
bool starts_with(std::span<const std::uint8_t> bytes, const std::array<std::uint8_t, N>& magic) {
  return bytes.size() >= N && std::equal(magic.begin(), magic.end(), bytes.begin());
}

void check_dimensions(const std::string& name, std::uint64_t width, std::uint64_t height) {
  require(width > 0 && height > 0, name, ": image has zero width or height");
  require(width * height <= kMaxPixels, name, ": image of ", width, "x", height,
          " pixels exceeds the limit of ", kMaxPixels, " pixels");
}

// (a * b + 127.5) / 255 rounded as PIL's MULDIV255 macro does.
std::uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}

// ---------------------------------------------------------------------------------------------- JPEG

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  bool truncated;
  char message[JMSG_LENGTH_MAX];
};

extern "C" void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings are silent, as in PIL, except running out of data: libjpeg then pads the image with grey,
// where PIL refuses a truncated file.
extern "C" void jpeg_emit_message(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->truncated = true;
}

extern "C" void jpeg_output_message(j_common_ptr) {}

class JpegDecompressGuard {
 public:
  explicit JpegDecompressGuard(jpeg_decompress_struct* cinfo) : cinfo_(cinfo) {}
  ~JpegDecompressGuard() { jpeg_destroy_decompress(cinfo_); }
  JpegDecompressGuard(const JpegDecompressGuard&) = delete;
  JpegDecompressGuard& operator=(const JpegDecompressGuard&) = delete;

 private:
  jpeg_decompress_struct* cinfo_;
};

// Huffman-coded scans spend at least one bit on every 8x8 block of a component whose DC coefficients
// they code, and every component's DC must be coded, so a file holds at least (blocks of its smallest
// component) / 8 bytes. Checked before jpeg_start_decompress, which allocates the whole image (all its
// coefficients for a progressive file). Arithmetic-coded files have no such floor and are not checked.
bool fits_compressed_size(const jpeg_decompress_struct& cinfo, std::size_t file_bytes) {
  if (cinfo.arith_code) return true;
  std::uint64_t fewest_blocks = UINT64_MAX;
  for (int c = 0; c < cinfo.num_components; ++c) {
    const jpeg_component_info& component = cinfo.comp_info[c];
    fewest_blocks = std::min<std::uint64_t>(
        fewest_blocks, static_cast<std::uint64_t>(component.width_in_blocks) * component.height_in_blocks);
  }
  return fewest_blocks / 8 <= file_bytes;
}

// Decodes into `samples` (components per pixel in *components); returns false with err.message set
// on a libjpeg error. Only trivially destructible locals live past setjmp.
bool run_libjpeg(std::span<const std::uint8_t> bytes, JpegErrorManager& err,
                 std::vector<std::uint8_t>& samples, Image& image, int* components) {
  jpeg_decompress_struct cinfo;
  std::memset(&cinfo, 0, sizeof(cinfo));
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_error_exit;
  err.pub.emit_message = jpeg_emit_message;
  err.pub.output_message = jpeg_output_message;
  err.truncated = false;
  err.message[0] = '\0';
  jpeg_create_decompress(&cinfo);
  JpegDecompressGuard guard(&cinfo);

  if (setjmp(err.jump)) return false;

  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  // Default DCT (JDCT_ISLOW) and fancy upsampling, as PIL leaves them. 4-component files are taken
  // as CMYK (libjpeg converts YCCK), to be inverted and converted like PIL below.
  switch (cinfo.num_components) {
    case 1:
      cinfo.out_color_space = JCS_GRAYSCALE;
      break;
    case 3:
      cinfo.out_color_space = JCS_RGB;
      break;
    case 4:
      cinfo.out_color_space = JCS_CMYK;
      break;
    default:
      std::snprintf(err.message, sizeof(err.message), "unsupported JPEG with %d components",
                    cinfo.num_components);
      return false;
  }
  if (static_cast<std::uint64_t>(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(err.message, sizeof(err.message), "image of %ux%u pixels exceeds the limit of %llu pixels",
                  cinfo.image_width, cinfo.image_height, static_cast<unsigned long long>(kMaxPixels));
    return false;
  }
  if (!fits_compressed_size(cinfo, bytes.size())) {
    err.truncated = true;  // the file is too short to hold the image its header claims
    return false;
  }
  jpeg_start_decompress(&cinfo);
  image.width = cinfo.output_width;
  image.height = cinfo.output_height;
  *components = cinfo.output_components;
  const std::size_t row_bytes = static_cast<std::size_t>(cinfo.output_width) * cinfo.output_components;
  samples.resize(row_bytes * cinfo.output_height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = samples.data() + row_bytes * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
    if (err.truncated) return false;
  }
  jpeg_finish_decompress(&cinfo);
  return !err.truncated;
}

Image decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& name) {
  JpegErrorManager err;
  std::vector<std::uint8_t> samples;
  Image image;
  int components = 0;
  bool ok = false;
  try {
    ok = run_libjpeg(bytes, err, samples, image, &components);
  } catch (const std::bad_alloc&) {
    fail(name, ": out of memory decoding JPEG");
  }
  if (!ok) {
    if (err.truncated) fail(name, ": truncated JPEG file");
    fail(name, ": corrupt or unsupported JPEG (", err.message, ")");
  }
  check_dimensions(name, static_cast<std::uint64_t>(image.width), static_cast<std::uint64_t>(image.height));
  const std::size_t pixels = static_cast<std::size_t>(image.width * image.height);
  if (components == 3) {
    image.rgb = std::move(samples);
    return image;
  }
  image.rgb.resize(pixels * 3);
  std::uint8_t* out = image.rgb.data();
  if (components == 1) {
    for (std::size_t i = 0; i < pixels; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = samples[i];
    return image;
  }
  // PIL reads every 4-component JPEG as inverted (Adobe) CMYK, then converts CMYK to RGB as
  // R = (255 - K) - (C * (255 - K)) / 255 with C, K the inverted samples.
  for (std::size_t i = 0; i < pixels; ++i) {
    const std::uint8_t* cmyk = &samples[4 * i];
    const int nk = cmyk[3];  // 255 - inverted K
    for (int c = 0; c < 3; ++c) {
      const int v = nk - muldiv255(255 - cmyk[c], nk);
      out[3 * i + c] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
    }
  }
  return image;
}

// ----------------------------------------------------------------------------------------------- PNG

struct PngReader {
  std::span<const std::uint8_t> bytes;
  std::size_t offset;
  bool truncated;
  char message[256];
};

extern "C" void png_read_from_memory(png_structp png, png_bytep out, png_size_t length) {
  auto* reader = static_cast<PngReader*>(png_get_io_ptr(png));
  if (length > reader->bytes.size() - reader->offset) {
    reader->truncated = true;
    png_error(png, "truncated");
  }
  std::memcpy(out, reader->bytes.data() + reader->offset, length);
  reader->offset += length;
}

extern "C" void png_error_handler(png_structp png, png_const_charp message) {
  auto* reader = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(reader->message, sizeof(reader->message), "%s", message);
  png_longjmp(png, 1);
}

extern "C" void png_warning_handler(png_structp, png_const_charp) {}

class PngReadGuard {
 public:
  PngReadGuard(png_structp png, png_infop info) : png_(png), info_(info) {}
  ~PngReadGuard() { png_destroy_read_struct(&png_, &info_, nullptr); }
  PngReadGuard(const PngReadGuard&) = delete;
  PngReadGuard& operator=(const PngReadGuard&) = delete;

 private:
  png_structp png_;
  png_infop info_;
};

struct PngLayout {
  png_uint_32 width;
  png_uint_32 height;
  int bit_depth;
  int color_type;
  std::size_t row_bytes;
};

// Reads all rows unconverted except for unpacking 1/2/4-bit samples to one byte each (values keep
// their range). 16-bit samples stay big-endian. Returns false with reader.message set on an error.
bool run_libpng(PngReader& reader, std::vector<std::uint8_t>& rows, std::vector<png_bytep>& row_pointers,
                std::array<png_color, 256>& palette, int* palette_size, PngLayout* layout) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, png_error_handler, png_warning_handler);
  if (png == nullptr) {
    std::snprintf(reader.message, sizeof(reader.message), "cannot create PNG reader");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  PngReadGuard guard(png, info);
  if (info == nullptr) {
    std::snprintf(reader.message, sizeof(reader.message), "cannot create PNG reader");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) return false;

  png_set_read_fn(png, &reader, png_read_from_memory);
  // A checksum error in any chunk is fatal: PIL refuses such files too, where libpng would only
  // warn about ancillary chunks.
  png_set_crc_action(png, PNG_CRC_DEFAULT, PNG_CRC_ERROR_QUIT);
  png_read_info(png, info);
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int bit_depth = 0;
  int color_type = 0;
  int interlace = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, nullptr, nullptr);
  if (static_cast<std::uint64_t>(width) * height > kMaxPixels) {
    std::snprintf(reader.message, sizeof(reader.message),
                  "image of %ux%u pixels exceeds the limit of %llu pixels", width, height,
                  static_cast<unsigned long long>(kMaxPixels));
    return false;
  }
  // Deflate expands at most 1032-fold, so the rows this header asks for must fit what the file holds:
  // checked before allocating them.
  const std::uint64_t packed_bytes = (static_cast<std::uint64_t>(width) * png_get_channels(png, info) *
                                          static_cast<std::uint64_t>(bit_depth) +
                                      7) /
                                     8 * height;
  if (packed_bytes / kMaxDeflateRatio > reader.bytes.size()) {
    reader.truncated = true;
    std::snprintf(reader.message, sizeof(reader.message), "too short for its %ux%u image", width, height);
    return false;
  }
  if (bit_depth < 8) png_set_packing(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);

  *palette_size = 0;
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_colorp entries = nullptr;
    int count = 0;
    if (png_get_PLTE(png, info, &entries, &count) != 0 && entries != nullptr) {
      *palette_size = std::min(count, 256);
      std::copy(entries, entries + *palette_size, palette.begin());
    }
  }
  layout->width = width;
  layout->height = height;
  layout->bit_depth = bit_depth;
  layout->color_type = color_type;
  layout->row_bytes = png_get_rowbytes(png, info);
  rows.resize(layout->row_bytes * height);
  row_pointers.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) row_pointers[y] = rows.data() + layout->row_bytes * y;
  png_read_image(png, row_pointers.data());
  // The chunks after the image data are not read: PIL does not require them either.
  return true;
}

Image decode_png(std::span<const std::uint8_t> bytes, const std::string& name) {
  PngReader reader{bytes, 0, false, {}};
  std::vector<std::uint8_t> rows;
  std::vector<png_bytep> row_pointers;
  std::array<png_color, 256> palette{};
  int palette_size = 0;
  PngLayout layout{};
  bool ok = false;
  try {
    ok = run_libpng(reader, rows, row_pointers, palette, &palette_size, &layout);
  } catch (const std::bad_alloc&) {
    fail(name, ": out of memory decoding PNG");
  }
  if (!ok) {
    if (reader.truncated) fail(name, ": truncated PNG file");
    fail(name, ": corrupt or unsupported PNG (", reader.message, ")");
  }
  check_dimensions(name, layout.width, layout.height);

  Image image;
  image.width = layout.width;
  image.height = layout.height;
  const std::size_t width = layout.width;
  image.rgb.resize(width * layout.height * 3);
  const bool wide = layout.bit_depth == 16;
  const std::size_t sample_bytes = wide ? 2 : 1;
  // PIL keeps the high byte of 16-bit colour samples, but converts 16-bit grey ("I;16"/"I") to RGB by
  // clipping the value to 255.
  auto grey = [&](const std::uint8_t* s) -> std::uint8_t {
    if (!wide) return s[0];
    return s[0] != 0 ? std::uint8_t{255} : s[1];
  };
  // Low bit depths are scaled to 0..255 (PIL's "1", "L;2", "L;4" unpackers).
  int grey_scale = 1;
  if (layout.color_type == PNG_COLOR_TYPE_GRAY && layout.bit_depth < 8) {
    grey_scale = 255 / ((1 << layout.bit_depth) - 1);
  }
  for (std::size_t y = 0; y < layout.height; ++y) {
    const std::uint8_t* in = rows.data() + layout.row_bytes * y;
    std::uint8_t* out = image.rgb.data() + width * 3 * y;
    for (std::size_t x = 0; x < width; ++x, out += 3) {
      switch (layout.color_type) {
        case PNG_COLOR_TYPE_GRAY: {
          const std::uint8_t v = wide ? grey(in + 2 * x) : static_cast<std::uint8_t>(in[x] * grey_scale);
          out[0] = out[1] = out[2] = v;
          break;
        }
        case PNG_COLOR_TYPE_GRAY_ALPHA: {
          // 16-bit grey + alpha opens as RGBA from the high bytes; alpha is dropped.
          const std::uint8_t v = in[2 * sample_bytes * x];
          out[0] = out[1] = out[2] = v;
          break;
        }
        case PNG_COLOR_TYPE_RGB:
        case PNG_COLOR_TYPE_RGB_ALPHA: {
          const std::size_t channels = layout.color_type == PNG_COLOR_TYPE_RGB ? 3 : 4;
          const std::uint8_t* px = in + channels * sample_bytes * x;
          for (std::size_t c = 0; c < 3; ++c) out[c] = px[c * sample_bytes];
          break;
        }
        case PNG_COLOR_TYPE_PALETTE: {
          // An index past the PLTE entries reads as black, as in Pillow >= 10.1 (older Pillow gave
          // grey (i, i, i)).
          const int index = in[x];
          const png_color entry = index < palette_size ? palette[index] : png_color{0, 0, 0};
          out[0] = entry.red;
          out[1] = entry.green;
          out[2] = entry.blue;
          break;
        }
        default:
          fail(name, ": unsupported PNG colour type ", layout.color_type);
      }
    }
  }
  return image;
}

}  // namespace

Image decode_image_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  require(!bytes.empty(), name, ": empty file (expected a JPEG, PNG or WebP image)");
  if (starts_with(bytes, kJpegMagic)) return decode_jpeg(bytes, name);
  if (starts_with(bytes, kPngMagic)) return decode_png(bytes, name);
  if (is_webp(bytes)) return decode_webp(bytes, name, kMaxPixels);
  reject_other_file_kind(bytes.first(std::min(bytes.size(), kFileKindHeadSize)), FileKind::kUnknown, name,
                         "a JPEG, PNG or WebP image");
  fail(name, ": not a JPEG, PNG or WebP image (unrecognised leading bytes)");
}

Image decode_image(const std::filesystem::path& path) {
  const std::string name = path.string();
  const RegularFile file = RegularFile::open(path);
  file.require_at_most(kMaxImageFileBytes, "an image kiln decodes");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(file.size()));
  bytes.resize(file.read_at(0, bytes.data(), bytes.size()));
  return decode_image_bytes(bytes, name);
}

}  // namespace kiln
