// The Hopper instructions kiln's matrix kernels are made of, one small function each: shared-memory
// barriers (mbarrier) that count arrivals and the bytes the copy engine delivers, the bulk tensor copies
// (TMA) of a tile between global and shared memory, named barriers, warpgroup matrix fences, and the
// shared-memory matrix descriptor wgmma reads its operands through. sm_90a.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace kiln::cuda::hopper {

__device__ inline std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline void barrier_init(std::uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(arrivals));
}

// Makes the barriers' initialization visible to the copy engine before any copy names them.
__device__ inline void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// One arrival that also announces `bytes` the copy engine will deliver in this phase.
__device__ inline void barrier_arrive_expect(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
}

__device__ inline void barrier_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
}

// Waits until the barrier's phase of parity `phase` has completed. A barrier starts in phase 0, so
// waiting for parity 1 on a fresh barrier returns at once (a ring's slots start empty).
__device__ inline void barrier_wait(std::uint64_t* bar, std::uint32_t phase) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait;\n}\n" ::"r"(shared_address(bar)),
      "r"(phase)
      : "memory");
}

// Copies the box of `map` at (x, y) (x the innermost coordinate, in elements) into shared memory; the
// barrier counts its bytes. Elements outside the tensor arrive as zeros.
__device__ inline void tma_load_2d(void* dst, const CUtensorMap* map, std::uint64_t* bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
      "[%2];" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(shared_address(bar)), "r"(x), "r"(y)
      : "memory");
}

// Copies shared memory (at shared-memory address `src`) laid out as `map`'s box into the tensor at (x, y),
// in this thread's current bulk group; elements outside the tensor are not written. The shared memory
// may be reused once bulk_wait_read() says the group has read it.
__device__ inline void tma_store_2d(const CUtensorMap* map, std::uint32_t src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(src), "r"(x), "r"(y)
               : "memory");
}

__device__ inline void store_shared_u32(std::uint32_t address, std::uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(address), "r"(v) : "memory");
}
// store_shared_u32() where `enabled` (a predicated store, so that a flag the warp shares puts no branch
// between the epilogue's unrolled steps).
__device__ inline void store_shared_u32_if(bool enabled, std::uint32_t address, std::uint32_t v) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.u32 p, %2, 0;\n"
      "@p st.shared.u32 [%0], %1;\n"
      "}" ::"r"(address),
      "r"(v), "r"(static_cast<std::uint32_t>(enabled))
      : "memory");
}
__device__ inline std::uint32_t load_shared_u32(std::uint32_t address) {
  std::uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(address) : "memory");
  return v;
}
__device__ inline std::uint16_t load_shared_u16(std::uint32_t address) {
  std::uint16_t v;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(address) : "memory");
  return v;
}
__device__ inline void store_shared_u16(std::uint32_t address, std::uint16_t v) {
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(address), "h"(v) : "memory");
}
__device__ inline void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most `kPending` of this thread's bulk groups still read their shared memory.
template <int kPending>
__device__ inline void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
}
// Waits until every bulk group of this thread has completed its writes.
__device__ inline void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Makes this thread's ordinary shared-memory writes visible to the copy engine (the async proxy).
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Synchronizes the `threads` threads that name barrier `id` (1..15; 0 is __syncthreads').
__device__ inline void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The im2col form for NHWC x: the box's pixels start at (w, h) of image n, walk the map's bounding box
// (its padding) row by row and image by image, and each is shifted by the window tap (tap_w, tap_h);
// `c` is the first channel. Pixels outside the tensor arrive as zeros.
__device__ inline void tma_load_im2col(void* dst, const CUtensorMap* map, std::uint64_t* bar, int c, int w, int h,
                                       int n, std::uint16_t tap_w, std::uint16_t tap_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
      "%6}], [%2], {%7, %8};" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(shared_address(bar)), "r"(c), "r"(w), "r"(h), "r"(n),
      "h"(tap_w), "h"(tap_h)
      : "memory");
}

__device__ inline void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// Orders the registers wgmma reads and writes against the warpgroup's earlier accesses.
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most `kPending` committed groups of the warpgroup are still running.
template <int kPending>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Hands registers from the producer warpgroup to the consumers (the kernel's register cap at entry
// makes room for it).
template <int kRegisters>
__device__ inline void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ inline void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegisters));
}

// The descriptor of a K-major operand tile in shared memory laid out by the copy engine with the swizzle
// of its row width: rows of 128 (or 64) bytes, groups of 8 rows 1024 (512) bytes apart (the stride offset),
// the tile aligned to that group. Advancing `p` by 32 bytes within a row selects the next K step.
template <int kRowWidth>
__device__ inline std::uint64_t swizzled_tile_descriptor(const void* p) {
  static_assert(kRowWidth == 128 || kRowWidth == 64, "the copy engine's 128- and 64-byte swizzles");
  const std::uint64_t address = shared_address(p);
  std::uint64_t d = (address & 0x3FFFF) >> 4;
  d |= std::uint64_t{1} << 16;                          // leading offset: unused by swizzled K-major layouts
  d |= std::uint64_t{(8 * kRowWidth) >> 4} << 32;       // stride offset: 8 rows
  d |= std::uint64_t{kRowWidth == 128 ? 1u : 2u} << 62;  // the 128- or 64-byte swizzle
  return d;
}

}  // namespace kiln::cuda::hopper
