// The table of kiln's own convolution kernels raced for a layer (kiln_conv.h), in the order they are
// offered. Each entry's offer function lives in the kernel's candidate file and says whether the kernel
// runs the layer at all (shape, precision, GPU, options) and on which buffers (weights re-laid out as the
// kernel reads them). A new kernel is its kernel file, its header, its candidate file and a line here.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "backends/cuda/convolution/conv_layer.h"
#include "backends/cuda/convolution/kiln_conv.h"
#include "backends/cuda/cuda_options.h"

namespace kiln::cuda {

// What the program building a layer gives kiln's kernels.
struct KilnConvRequest {
  const ConvLayer& layer;
  Elem elem;             // the program's storage precision
  std::string_view gpu;  // the GPU's name, as tactic keys carry it
  const CudaOptions& options;
  // A host tensor uploaded as `elem`, kept alive as long as the program; its device address.
  std::function<const void*(const Tensor&, Elem)> upload;
  // Host KRSC weights (f32 values, or a quantized layer's code values) uploaded as the layer holds its
  // weights: fp16 values, E4M3 or int8 codes; kept alive as long as the program.
  std::function<const void*(const Tensor&)> upload_weights;
};

// One of kiln's kernels configured for a layer, and the buffers it runs on.
struct KilnConvOffer {
  std::shared_ptr<KilnConv> conv;
  ConvBuffers buffers;
};

using OfferKilnConv = std::optional<KilnConvOffer> (*)(const KilnConvRequest& request);

struct KilnConvKernel {
  const char* api;      // as plans store it (kApiKiln*, stored_tactic.h)
  bool views;           // reads and writes channel views (conv_geometry.h)
  OfferKilnConv offer;  // nothing when the kernel does not run the layer
};

std::span<const KilnConvKernel> kiln_conv_kernels();
// The kernel a plan names, or null.
const KilnConvKernel* find_kiln_conv_kernel(std::string_view api);

}  // namespace kiln::cuda
