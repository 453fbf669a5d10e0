// Writes the binary seeds of the fuzz corpora (tests/fuzz/make_corpus.sh runs it): a small plan, a
// checkpoint, an array and tiny images in each encoding the decoders take. Usage: kiln_fuzz_seeds DIR
#include <webp/encode.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

// clang-format off
#include <jpeglib.h>  // needs FILE and size_t declared first
// clang-format on

#include "graph/graph.h"
#include "io/image.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "plan/plan_writer.h"

namespace {

namespace fs = std::filesystem;

kiln::Image gradient(int width, int height) {
  kiln::Image image;
  image.width = width;
  image.height = height;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      image.rgb.push_back(static_cast<std::uint8_t>(x * 255 / width));
      image.rgb.push_back(static_cast<std::uint8_t>(y * 255 / height));
      image.rgb.push_back(static_cast<std::uint8_t>((x + y) * 7));
    }
  }
  return image;
}

void write_file(const fs::path& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

void write_jpeg(const fs::path& path, const kiln::Image& image, bool progressive, bool grey) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  if (grey) jpeg_set_colorspace(&cinfo, JCS_GRAYSCALE);
  jpeg_set_quality(&cinfo, 75, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<std::uint8_t> row;
  while (cinfo.next_scanline < cinfo.image_height) {
    row.assign(image.rgb.begin() + static_cast<std::ptrdiff_t>(cinfo.next_scanline) * image.width * 3,
               image.rgb.begin() + static_cast<std::ptrdiff_t>(cinfo.next_scanline + 1) * image.width * 3);
    JSAMPROW pointer = row.data();
    jpeg_write_scanlines(&cinfo, &pointer, 1);
  }
  jpeg_finish_compress(&cinfo);
  write_file(path, buffer, size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
}

void write_webp(const fs::path& path, const kiln::Image& image, bool lossless) {
  std::uint8_t* out = nullptr;
  const int stride = static_cast<int>(image.width) * 3;
  const auto width = static_cast<int>(image.width), height = static_cast<int>(image.height);
  const std::size_t size = lossless ? WebPEncodeLosslessRGB(image.rgb.data(), width, height, stride, &out)
                                    : WebPEncodeRGB(image.rgb.data(), width, height, stride, 60.0f, &out);
  write_file(path, out, size);
  WebPFree(out);
}

// input [1, 2, 5, 5] -> conv 3x3 (4 channels, bias) -> relu -> add itself -> global pool -> flatten.
kiln::Plan small_plan() {
  kiln::Plan plan;
  plan.info.family = "timm_resnet";
  plan.info.backend = "cpu";
  kiln::Graph& graph = plan.graph;
  const kiln::ValueId x = graph.add_input("x", {1, 2, 5, 5});
  std::vector<float> weights(4 * 2 * 3 * 3);
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  const kiln::ValueId w = graph.add_constant("conv.weight", kiln::Tensor::from_f32({4, 2, 3, 3}, weights));
  const kiln::ValueId b =
      graph.add_constant("conv.bias", kiln::Tensor::from_f32({4}, {{0.1f, 0.2f, -0.3f, 0.f}}));
  kiln::ConvAttrs conv;
  conv.kernel = {3, 3};
  conv.padding = {1, 1, 1, 1};
  const kiln::ValueId c = graph.add_node(kiln::OpKind::kConv2d, "conv", {x, w, b}, conv);
  const kiln::ValueId r = graph.add_node(kiln::OpKind::kActivation, "act", {c}, kiln::ActivationAttrs{});
  const kiln::ValueId a = graph.add_node(kiln::OpKind::kAdd, "add", {r, c}, kiln::AddAttrs{});
  const kiln::ValueId p = graph.add_node(kiln::OpKind::kGlobalAvgPool, "pool", {a});
  graph.mark_output(graph.add_node(kiln::OpKind::kFlatten, "flatten", {p}));
  plan.info.layer_data["conv"] = {{"tactic", {{"api", "cudnn"}, {"algorithm", 1}, {"us", 2.5}}}};
  return plan;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kiln_fuzz_seeds DIR\n";
    return 2;
  }
  const fs::path dir = argv[1];
  for (const char* target : {"jpeg", "png", "webp", "plan_file", "safetensors", "npy"}) {
    fs::create_directories(dir / target);
  }
  const kiln::Image image = gradient(13, 9);
  write_jpeg(dir / "jpeg/baseline.jpg", image, false, false);
  write_jpeg(dir / "jpeg/progressive.jpg", image, true, false);
  write_jpeg(dir / "jpeg/grey.jpg", image, false, true);
  kiln::write_png(dir / "png/rgb.png", image);
  write_webp(dir / "webp/lossy.webp", image, false);
  write_webp(dir / "webp/lossless.webp", image, true);
  kiln::write_plan(dir / "plan_file/small.kplan", small_plan());
  kiln::write_safetensors(dir / "safetensors/small.safetensors",
                          {{"conv.weight", kiln::Tensor::from_f32({2, 2}, {{0.5f, -1.f, 2.f, 0.f}})},
                           {"conv.bias", kiln::Tensor::from_f32({2}, {{0.25f, 4.f}})},
                           {"half", kiln::Tensor(kiln::DType::kF16, {3})}},
                          {{"format", "pt"}});
  kiln::write_npy(dir / "npy/small.npy", kiln::Tensor::from_f32({2, 3}, {{1.f, 2.f, 3.f, 4.f, 5.f, 6.f}}));
  return 0;
}
