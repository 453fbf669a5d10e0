// The memory a compiled model runs in: activation buffers placed in one arena
// (backends/common/arena_planner.h) and one scratchpad shared by every primitive, since primitives run one at
// a time.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "backends/common/arena_planner.h"

namespace kiln::onednn {

class Workspace {
 public:
  explicit Workspace(dnnl::engine engine) : engine_(std::move(engine)) {}

  // A new buffer of `bytes` (no step uses it yet).
  int add_buffer(std::size_t bytes);
  // Step `step` reads or writes `buffer`: extends the buffer's lifetime to cover it.
  void use(int buffer, int step);
  // A memory object over `buffer` (from `byte_offset` on) with layout `desc`; its data handle is set by
  // finalize().
  dnnl::memory memory(int buffer, const dnnl::memory::desc& desc, std::size_t byte_offset = 0);
  // The buffer a memory object from memory() lies in.
  int buffer_of(const dnnl::memory& memory) const;
  // A memory object over the shared scratchpad.
  dnnl::memory scratchpad(const dnnl::memory::desc& desc);

  // Plans the buffers' offsets, allocates the arena and the scratchpad, and binds every memory object.
  void finalize();
  std::size_t arena_bytes() const { return arena_bytes_; }
  std::size_t buffer_bytes(int buffer) const { return lifetimes_[static_cast<std::size_t>(buffer)].bytes; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using Block = std::unique_ptr<std::byte, FreeDeleter>;
  static Block allocate(std::size_t bytes);

  dnnl::engine engine_;
  std::vector<backends::BufferLifetime> lifetimes_;
  std::vector<bool> used_;
  struct Binding {
    dnnl::memory memory;
    int buffer;
    std::size_t offset;
  };
  std::vector<Binding> bound_;
  std::vector<dnnl::memory> scratch_users_;
  std::size_t scratch_bytes_ = 0;
  std::size_t arena_bytes_ = 0;
  Block arena_;
  Block scratch_;
};

}  // namespace kiln::onednn
