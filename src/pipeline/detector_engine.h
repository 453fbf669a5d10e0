// A detector run the way classifiers run: a detector plan (a file, or a checkpoint built into one in
// memory) compiled through an Engine on the chosen backend; images letterboxed in, boxes in original
// image pixels out.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "families/registry.h"
#include "io/image.h"
#include "pipeline/detector_inputs.h"
#include "runtime/engine.h"

namespace kiln::pipeline {

class DeviceLetterboxRun;

struct DetectorRun {
  Tensor decoded;  // the graph's output: [N, 4 + classes, anchors]
  // Per image, the detector's selection (up to max_det, best first) in original image pixels (for
  // letterboxed tensors given as they are: in input pixels).
  std::vector<std::vector<Detection>> detections;
  double seconds = 0;  // the engine's run alone (photos on cuda: their device letterbox too)
};

class DetectorEngine {
 public:
  // Loads `checkpoint` with its config.json (pipeline/model_loading.h) for batches of `batch` images,
  // builds it at fp32 with every pass and compiles it on `backend` (empty: the default backend).
  DetectorEngine(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                 const std::optional<std::filesystem::path>& config_path, std::int64_t batch,
                 const std::string& backend, const CompileOptions& options = {});
  // Compiles a detector plan (fails naming `name` for a classifier plan) for batches of options.batch.
  DetectorEngine(std::shared_ptr<const Plan> plan, const std::string& name, const std::string& backend,
                 const CompileOptions& options);
  ~DetectorEngine();
  DetectorEngine(DetectorEngine&&) noexcept;
  DetectorEngine& operator=(DetectorEngine&&) noexcept;

  const DetectorInfo& detector() const { return *detector_; }
  const YoloConfig& config() const { return config_; }
  const std::vector<std::string>& unused_keys() const { return unused_keys_; }
  const std::string& backend() const { return engine_->backend(); }
  const Engine& engine() const { return *engine_; }
  // `images` must be as many as the engine's batch.
  DetectorRun detect(const std::vector<Image>& images);
  // Photos and letterboxed .npy rows (pipeline/detector_inputs.h); photos' boxes in their own pixels.
  DetectorRun detect(const DetectorInputs& inputs);
  // Already letterboxed inputs [batch, 3, size, size] (RGB / 255); boxes stay in input pixels.
  DetectorRun detect_letterboxed(const Tensor& input);

 private:
  void start(std::shared_ptr<const Plan> plan, const std::string& name, const std::string& backend,
             const CompileOptions& options);
  // The boxes of the graph's outputs, and the time they took.
  DetectorRun finish(std::vector<Tensor> outputs, double seconds) const;
  // On a backend with a device and no layer on the CPU fallback, photos are letterboxed on the device
  // (device_letterbox_run.h).
  bool letterboxes_on_device() const;

  const DetectorInfo* detector_ = nullptr;
  YoloConfig config_;
  std::vector<std::string> unused_keys_;
  std::unique_ptr<Engine> engine_;
  const Device* device_ = nullptr;                  // the backend's (backends/device.h); null on a host one
  std::unique_ptr<DeviceLetterboxRun> device_run_;  // made on the first batch of photos on a device
};

}  // namespace kiln::pipeline
