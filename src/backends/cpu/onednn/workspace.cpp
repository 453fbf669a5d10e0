#include "backends/cpu/onednn/workspace.h"

#include <algorithm>
#include <new>

namespace kiln::onednn {
namespace {

// Cache-line alignment for every buffer: what AVX-512 loads and oneDNN's kernels want.
constexpr std::size_t kAlignment = 64;

}  // namespace

int Workspace::add_buffer(std::size_t bytes) {
  lifetimes_.push_back({bytes, 0, 0});
  used_.push_back(false);
  return static_cast<int>(lifetimes_.size()) - 1;
}

void Workspace::use(int buffer, int step) {
  const auto index = static_cast<std::size_t>(buffer);
  backends::BufferLifetime& lifetime = lifetimes_[index];
  if (!used_[index]) {
    lifetime.first = lifetime.last = step;
    used_[index] = true;
    return;
  }
  lifetime.first = std::min(lifetime.first, step);
  lifetime.last = std::max(lifetime.last, step);
}

dnnl::memory Workspace::memory(int buffer, const dnnl::memory::desc& desc, std::size_t byte_offset) {
  dnnl::memory memory(desc, engine_, DNNL_MEMORY_NONE);
  bound_.push_back({memory, buffer, byte_offset});
  return memory;
}

int Workspace::buffer_of(const dnnl::memory& memory) const {
  for (const Binding& binding : bound_) {
    if (binding.memory.get() == memory.get()) return binding.buffer;
  }
  return -1;
}

dnnl::memory Workspace::scratchpad(const dnnl::memory::desc& desc) {
  dnnl::memory memory(desc, engine_, DNNL_MEMORY_NONE);
  scratch_bytes_ = std::max(scratch_bytes_, desc.get_size());
  scratch_users_.push_back(memory);
  return memory;
}

Workspace::Block Workspace::allocate(std::size_t bytes) {
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlignment, size));
  if (p == nullptr) throw std::bad_alloc();
  return Block(p);
}

void Workspace::finalize() {
  const backends::ArenaLayout layout = backends::place_buffers(lifetimes_, kAlignment);
  arena_bytes_ = layout.total_bytes;
  arena_ = allocate(arena_bytes_);
  for (Binding& binding : bound_) {
    binding.memory.set_data_handle(arena_.get() + layout.offsets[static_cast<std::size_t>(binding.buffer)] +
                                   binding.offset);
  }
  scratch_ = allocate(scratch_bytes_);
  for (auto& memory : scratch_users_) memory.set_data_handle(scratch_.get());
}

}  // namespace kiln::onednn
