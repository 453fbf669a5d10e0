// What preprocessing costs per photo on the host and on the GPU: JPEG/PNG decoding (host, both paths),
// timm's eval transform on the host (preprocess_image) and on the device (DevicePreprocessor: the image's
// upload, the two resize passes and the normalisation, to the end of the stream), and YOLO's letterbox
// both ways. Host clock around each call, the median of --reps after one warm-up. Prints JSON.
//
//   preprocess_bench PHOTO... [--size S] [--letterbox L] [--reps N]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/device_preprocess.h"
#include "families/yolov10/letterbox.h"
#include "io/image.h"

namespace {

using Clock = std::chrono::steady_clock;

double median_ms(int reps, const std::function<void()>& call) {
  call();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto start = Clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> photos;
  std::int64_t size = 224, letterbox_size = 640;
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--size" && i + 1 < argc) {
      size = std::stol(argv[++i]);
    } else if (arg == "--letterbox" && i + 1 < argc) {
      letterbox_size = std::stol(argv[++i]);
    } else if (arg == "--reps" && i + 1 < argc) {
      reps = std::stoi(argv[++i]);
    } else {
      photos.push_back(arg);
    }
  }
  if (photos.empty() || reps < 1) {
    std::fprintf(stderr, "usage: preprocess_bench PHOTO... [--size S] [--letterbox L] [--reps N]\n");
    return 2;
  }
  try {
    kiln::PreprocessConfig config;
    config.input_size = size;
    kiln::cuda::DevicePreprocessor device;
    kiln::cuda::DeviceBuffer out(
        static_cast<std::size_t>(3 * std::max(size, letterbox_size) * std::max(size, letterbox_size)) *
        sizeof(float));
    auto* device_out = static_cast<float*>(out.data());
    std::printf("{\"size\": %lld, \"letterbox\": %lld, \"reps\": %d, \"photos\": [\n",
                static_cast<long long>(size), static_cast<long long>(letterbox_size), reps);
    for (std::size_t p = 0; p < photos.size(); ++p) {
      const kiln::Image image = kiln::decode_image(photos[p]);
      const kiln::Letterbox box = kiln::letterbox(image, letterbox_size);
      const kiln::cuda::LetterboxPlacement placement{letterbox_size, box.scaled_width, box.scaled_height,
                                                     box.left,       box.top,          kiln::kLetterboxGrey};
      const double decode = median_ms(reps, [&] { (void)kiln::decode_image(photos[p]); });
      const double host_eval = median_ms(reps, [&] { (void)kiln::preprocess_image(image, config); });
      const double device_eval = median_ms(reps, [&] {
        device.eval_transform(image, config, device_out, nullptr);
        kiln::cuda::check(cudaStreamSynchronize(nullptr), "eval transform");
      });
      const double host_letterbox =
          median_ms(reps, [&] { (void)kiln::letterbox_tensor(kiln::letterbox(image, letterbox_size)); });
      const double device_letterbox = median_ms(reps, [&] {
        device.letterbox(image, placement, device_out, nullptr);
        kiln::cuda::check(cudaStreamSynchronize(nullptr), "letterbox");
      });
      std::printf(
          "  {\"photo\": \"%s\", \"width\": %lld, \"height\": %lld, \"decode_ms\": %.3f, "
          "\"host_eval_ms\": %.3f, \"device_eval_ms\": %.3f, \"host_letterbox_ms\": %.3f, "
          "\"device_letterbox_ms\": %.3f}%s\n",
          photos[p].c_str(), static_cast<long long>(image.width), static_cast<long long>(image.height),
          decode, host_eval, device_eval, host_letterbox, device_letterbox, p + 1 < photos.size() ? "," : "");
    }
    std::printf("]}\n");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "preprocess_bench: %s\n", error.what());
    return 1;
  }
  return 0;
}
