// Writes what the library tests compare against, computed with kiln's own classes in this process: a
// tiny plan (the ResNeSt golden checkpoint, batch 2) and the same plan recorded for cuda, an input batch,
// Engine's outputs on every CPU backend, Engine's top-5 for a photo (and the photo's pixels), two photos
// (their files and pixels) with the batch the host makes of them, and the detector's boxes for a photo.
//   make_fixture OUT_DIR DATA_DIR
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "eval/top_k.h"
#include "io/image.h"
#include "io/npy.h"
#include "pipeline/detector_engine.h"
#include "pipeline/input_batch.h"
#include "pipeline/model_loading.h"
#include "plan/plan_writer.h"
#include "runtime/engine.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

constexpr std::int64_t kBatch = 2;
// The detector golden finds Fashion-MNIST items, which the photos lack: its scores on them are low (see
// tests/cli/cli_test.cpp).
constexpr float kMinScore = 0.005f;

void write_floats(const fs::path& path, const Tensor& tensor) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(tensor.bytes()), static_cast<std::streamsize>(tensor.nbytes()));
}

void write_top5(const fs::path& path, const Plan& plan, const Tensor& logits) {
  const auto names = pipeline::class_names(plan.config);
  std::ofstream out(path);
  out << std::setprecision(9);
  const auto classes = static_cast<std::size_t>(logits.dim(1));
  for (const RankedClass& ranked : top_k_classes(logits.f32().subspan(0, classes), 5)) {
    const auto index = static_cast<std::size_t>(ranked.index);
    out << ranked.index << " " << ranked.probability << " "
        << (index < names.size() ? names[index] : cat("class ", index)) << "\n";
  }
}

// A photo's decoded pixels (STEM.rgb) and size (STEM.size: width height).
void write_pixels(const fs::path& out, const std::string& stem, const Image& image) {
  std::ofstream(out / (stem + ".rgb"), std::ios::binary)
      .write(reinterpret_cast<const char*>(image.rgb.data()), static_cast<std::streamsize>(image.rgb.size()));
  std::ofstream(out / (stem + ".size")) << image.width << " " << image.height << "\n";
}

// Two photos of other formats and sizes filling the batch: each file copied, its pixels, and the batch
// the host path makes of them (photos_input.f32), which image runs of the library must equal.
void write_photo_batch(const fs::path& out, const fs::path& data, const Plan& plan) {
  const std::int64_t size = plan.config.preprocess.input_size;
  Tensor batch(DType::kF32, {kBatch, 3, size, size});
  std::int64_t slot = 0;
  for (const std::string name : {"dog.jpg", "chelsea.png"}) {
    const fs::path photo = data / "photos" / name;
    fs::copy_file(photo, out / name, fs::copy_options::overwrite_existing);
    const Image image = decode_image(photo);
    write_pixels(out, photo.stem().string(), image);
    const Tensor pixels = preprocess_image(image, plan.config.preprocess);
    std::copy_n(pixels.f32().data(), pixels.numel(), batch.mutable_data<float>() + slot++ * pixels.numel());
  }
  write_floats(out / "photos_input.f32", batch);
}

void write_classifier(const fs::path& out, const fs::path& data) {
  const fs::path checkpoint = data / "golden" / "resnest_tiny" / "model.safetensors";
  auto plan =
      std::make_shared<const Plan>(pipeline::build_in_memory("timm_resnest", checkpoint, std::nullopt));
  write_plan(out / "plan.kplan", *plan);
  Plan for_cuda = *plan;  // the same plan as recorded for another backend
  for_cuda.info.backend = "cuda";
  write_plan(out / "plan_cuda.kplan", for_cuda);
  const Tensor input = read_npy(data / "golden" / "resnest_tiny" / "input.npy");
  write_floats(out / "input.f32", input);
  CompileOptions options;
  options.batch = kBatch;
  for (const auto backend : backend_names()) {
    if (backend == "cuda") continue;
    Engine engine(plan, std::string(backend), options);
    write_floats(out / cat("logits_", backend, ".f32"), engine.run(input).at(0));
  }
  // A photo classified the way the library classifies: row 0 of a zero batch on the default backend.
  const fs::path photo = data / "photos" / "dog.jpg";
  const Image image = decode_image(photo);
  const Tensor pixels = preprocess_image(image, plan->config.preprocess);
  const std::int64_t size = plan->config.preprocess.input_size;
  Tensor batch(DType::kF32, {kBatch, 3, size, size});
  std::fill_n(batch.mutable_data<float>(), batch.numel(), 0.0f);
  std::copy_n(pixels.f32().data(), pixels.numel(), batch.mutable_data<float>());
  write_floats(out / "dog_input.f32", batch);
  Engine engine(plan, default_backend(), options);
  write_top5(out / "dog_top5.txt", *plan, engine.run(batch).at(0));
  write_photo_batch(out, data, *plan);
}

void write_detections(const fs::path& out, const fs::path& data) {
  const fs::path yolo = data / "golden" / "yolov10n";
  pipeline::DetectorEngine detector(*find_detector("yolov10"), yolo / "model.safetensors",
                                    yolo / "config.json", 1, default_backend());
  const pipeline::DetectorRun run = detector.detect({decode_image(data / "photos" / "dog.jpg")});
  std::ofstream text(out / "dog_boxes.txt");
  text << std::setprecision(9);
  for (const Detection& d : run.detections.at(0)) {
    if (d.score >= kMinScore)
      text << d.label << " " << d.score << " " << d.x1 << " " << d.y1 << " " << d.x2 << " " << d.y2 << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: make_fixture OUT_DIR DATA_DIR\n";
    return 2;
  }
  try {
    const fs::path out = argv[1];
    fs::create_directories(out);
    write_classifier(out, argv[2]);
    write_detections(out, argv[2]);
  } catch (const std::exception& error) {
    std::cerr << "make_fixture: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
