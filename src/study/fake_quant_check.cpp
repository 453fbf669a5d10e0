#include "study/fake_quant_check.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/progress.h"
#include "data/image_loop.h"
#include "data/sampling.h"

namespace kiln {
namespace {

// The sampled images, preprocessed once and shared by every variant; unreadable ones are left out.
struct SampledInputs {
  std::vector<std::size_t> indices;
  std::vector<Tensor> inputs;
};

SampledInputs load_inputs(const Dataset& dataset, std::span<const std::size_t> indices,
                          const PreprocessConfig& preprocess) {
  SampledInputs sampled;
  std::ostringstream quiet;  // the study's evaluation already reported any unreadable image
  for_each_image(
      dataset, indices, preprocess,
      [&](std::size_t index, const Tensor& input) {
        sampled.indices.push_back(index);
        sampled.inputs.push_back(input);
      },
      false, nullptr, quiet);
  return sampled;
}

std::vector<float> first_output_row(const Tensor& output, std::int64_t r) {
  const auto classes = static_cast<std::size_t>(output.dim(1));
  const float* begin = output.f32().data() + static_cast<std::size_t>(r) * classes;
  return {begin, begin + classes};
}

// The engine's logits of every input, a whole engine batch at a time (a last partial batch padded).
std::vector<std::vector<float>> engine_logits(Engine& engine, std::span<const Tensor> inputs) {
  std::vector<std::vector<float>> logits;
  const std::int64_t batch = engine.batch();
  for (std::size_t start = 0; start < inputs.size(); start += static_cast<std::size_t>(batch)) {
    const Shape& image = inputs[start].shape();
    Tensor input(DType::kF32, {batch, image[0], image[1], image[2]});
    const std::size_t rows = std::min(inputs.size() - start, static_cast<std::size_t>(batch));
    for (std::size_t r = 0; r < rows; ++r) {
      std::memcpy(input.mutable_bytes() + r * inputs[start + r].nbytes(), inputs[start + r].bytes(),
                  inputs[start + r].nbytes());
    }
    const Tensor output = engine.run(input).at(0);
    require(output.rank() == 2 && output.dim(0) == batch, "the engine gave logits of ",
            shape_str(output.shape()), " for a batch of ", batch);
    for (std::size_t r = 0; r < rows; ++r)
      logits.push_back(first_output_row(output, static_cast<std::int64_t>(r)));
  }
  return logits;
}

// The plan's fake quantization of every input: the inputs dealt round-robin to one single-threaded
// engine per core, since the reference kernels use one core each.
std::vector<std::vector<float>> emulated_logits(const std::shared_ptr<const Plan>& plan,
                                                std::span<const Tensor> inputs,
                                                std::size_t& fallback_layers) {
  const std::size_t workers =
      std::max<std::size_t>(1, std::min<std::size_t>(std::thread::hardware_concurrency(), inputs.size()));
  std::vector<std::vector<float>> logits(inputs.size());
  std::vector<std::exception_ptr> failures(workers);
  std::vector<std::size_t> fallbacks(workers, 0);
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        CompileOptions options;
        options.batch = 1;
        options.threads = 1;
        Engine engine(plan, kFakeQuantBackend, options);
        fallbacks[w] = engine.fallback_layers().size();
        for (std::size_t i = w; i < inputs.size(); i += workers) {
          const Shape& image = inputs[i].shape();
          const Tensor output = engine.run(inputs[i].reshaped({1, image[0], image[1], image[2]})).at(0);
          logits[i] = first_output_row(output, 0);
        }
      } catch (...) {
        failures[w] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  fallback_layers = fallbacks.front();
  return logits;
}

FakeQuantVariant check_variant(const Fp8Engine& fp8, const Dataset& dataset, const SampledInputs& sampled) {
  const auto start = std::chrono::steady_clock::now();
  FakeQuantVariant result;
  result.variant = fp8.variant;
  const std::vector<std::vector<float>> engine = engine_logits(*fp8.engine, sampled.inputs);
  const std::vector<std::vector<float>> emulated =
      emulated_logits(fp8.plan, sampled.inputs, result.fallback_layers);
  for (std::size_t i = 0; i < sampled.inputs.size(); ++i) {
    const Sample& sample = dataset.sample(sampled.indices[i]);
    require(engine[i].size() == emulated[i].size(), fp8.variant, ": the engine gives ", engine[i].size(),
            " logits but its fake quantization ", emulated[i].size());
    if (dataset.labelled()) {
      result.engine_labels.add(engine[i], sample.label);
      result.emulation_labels.add(emulated[i], sample.label);
    }
    result.vs_emulation.add(engine[i], emulated[i], sample.name);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

FakeQuantCheck check_fake_quantization(std::span<const Fp8Engine> fp8, const Dataset& dataset,
                                       std::span<const std::size_t> held_out, std::size_t cap,
                                       const std::string& backend) {
  FakeQuantCheck check;
  check.backend = backend;
  check.emulation_backend = kFakeQuantBackend;
  check.held_out_images = held_out.size();
  check.cap = cap;
  check.labelled = dataset.labelled();
  if (fp8.empty() || cap == 0 || held_out.empty()) return check;
  std::vector<std::size_t> chosen;
  for (const std::size_t position : stride_sample(held_out.size(), std::min(cap, held_out.size())))
    chosen.push_back(held_out[position]);
  const SampledInputs sampled = load_inputs(dataset, chosen, fp8.front().plan->config.preprocess);
  require(!sampled.inputs.empty(), "the fake-quantization check could read none of its ", chosen.size(),
          " images");
  check.images = sampled.inputs.size();
  Progress progress(cat("fake quantization (", kFakeQuantBackend, ", ", check.images, " images)"),
                    fp8.size());
  for (const Fp8Engine& variant : fp8) {
    check.variants.push_back(check_variant(variant, dataset, sampled));
    progress.advance();
  }
  progress.finish();
  return check;
}

}  // namespace kiln
