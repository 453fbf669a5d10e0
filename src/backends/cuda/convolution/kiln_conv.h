// kiln's own convolution kernels as candidates raced against cuDNN's and cuBLASLt's in pick_tactic()
// (tactic.h): one base class does the taking part, and each kernel says only which variants it has, which
// of them compute the layer, and how one launches. A tactic is the variant's number (the plan's
// `algorithm`) and its time. Each kernel's candidate file also offers it for a layer (kiln_kernels.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/cuda/convolution/conv_geometry.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

struct KilnConvTactic {
  int variant = 0;
  double milliseconds = 0;
};

// Takes part in pick_tactic() (tactic.h).
class KilnConv {
 public:
  using Tactic = KilnConvTactic;

  virtual ~KilnConv() = default;
  KilnConv(const KilnConv&) = delete;
  KilnConv& operator=(const KilnConv&) = delete;

  const std::string& key() const { return key_; }
  // A stored variant applies when the kernel still computes the layer with it.
  bool restore(const TacticRecord& stored);
  // Every variant that computes the layer, in the kernel's order.
  void offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen) { variant_ = chosen.variant; }
  static TacticRecord record(const Tactic& t) { return {true, t.variant, 0, t.milliseconds, {}}; }
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) const;

 protected:
  // `key` from tactic_key(); `what` names the kernel in errors ("depthwise convolution").
  KilnConv(std::string key, std::string_view what) : key_(std::move(key)), what_(what) {}

 private:
  // The kernel's variants, in the order they are offered; a kernel without variants has one, 0.
  virtual std::vector<int> variants() const { return {0}; }
  // Whether `variant` computes the layer.
  virtual bool runs(int variant) const { return variant == 0; }
  virtual cudaError_t launch(const ConvBuffers& buffers, int variant, cudaStream_t stream) const = 0;

  std::string key_;
  std::string what_;
  int variant_ = 0;
};

}  // namespace kiln::cuda
