// kiln's Hopper convolution kernel (gemm_conv_kernels.h), included by one file per operand type so that
// each compiles on its own. A block computes tiles of the output: its warpgroups are consumers, each
// computing 64 rows of a tile with wgmma steps straight from the stages and then the epilogue from its
// registers, which puts the results in shared memory for the copy engine to store; the warps after them
// are the producer, whose first thread has the copy engine fill a ring of shared-memory stages (a
// 128- or 64-byte-wide slice of K of the x tile and of the weight tile each). With one consumer the producer is
// a single warp, so that its thread slots and registers go to a second block a multiprocessor; with two
// it is a warpgroup that hands its registers to the consumers (a multiprocessor's four register files
// each hold three of the block's warps, and the consumers of a 256-column tile need 232 registers a
// thread, which only the producer's leaving makes room for). Two barriers per stage keep the ring: `full`
// completes when a stage's bytes arrived, `empty` when every consumer warp finished reading it.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"
#include "backends/cuda/kernels/hopper/ptx.cuh"
#include "backends/cuda/kernels/hopper/wgmma.cuh"
#include "backends/cuda/kernels/quantization_math.cuh"

namespace kiln::cuda::hopper {

struct EpilogueArgs {
  GemmConvShape shape;
  GemmConvEpilogue out;
};

namespace gemm_conv_detail {

constexpr int kWarpgroup = 128;
constexpr int kRowsPerConsumer = 64;
constexpr int kStepBytes = 32;  // K bytes per wgmma step

// The epilogue writes a tile in chunks of 64 columns through two staging slots per consumer: while the
// copy engine stores one slot's chunk, the consumer fills the other. A slot holds the chunk's fp16 values
// (64 rows of 128 bytes) and its codes (64 rows of 64 bytes), each in its store map's swizzle.
constexpr int kChunkColumns = 64;
constexpr int kSlotValueBytes = kRowsPerConsumer * kChunkColumns * 2;
constexpr int kSlotBytes = kSlotValueBytes + kRowsPerConsumer * kChunkColumns;
constexpr int kSlots = 2;

// The ring as deep as the block's share of 220 KiB of shared memory allows beside the staging slots and,
// for a layer with a residual, each consumer's residual tile (up to 1 KiB of K in flight: 8 stages of
// 128-byte rows, 16 of 64-byte ones).
constexpr int kSharedBudget = 220 * 1024;

template <int kColumns, int kConsumers, bool kResidual, int kBlocks, int kKRowBytes>
struct Tiling {
  static constexpr int kKBytes = kKRowBytes;  // K bytes a stage row holds
  static constexpr int kRows = kRowsPerConsumer * kConsumers;
  static constexpr int kStageBytes = (kRows + kColumns) * kKBytes;
  static constexpr int kStagingBytes = kConsumers * kSlots * kSlotBytes;
  // A consumer's residual tile: 64-column chunks of 64 rows x 128 bytes, in the store maps' swizzle.
  static constexpr int kResidualTileBytes = kRowsPerConsumer * kColumns * 2;
  static constexpr int kResidualBytes = kResidual ? kConsumers * kResidualTileBytes : 0;
  static constexpr int kRingBudget = kSharedBudget / kBlocks - kStagingBytes - kResidualBytes;
  static constexpr int kMaxStages = 8 * kRowBytes / kKBytes;
  static constexpr int kStages = kRingBudget / kStageBytes < kMaxStages ? kRingBudget / kStageBytes : kMaxStages;
  static_assert(kStages >= 2, "a ring of one stage would serialize the copies and the matrix steps");
  static constexpr int kProducerThread = kWarpgroup * kConsumers;
  static constexpr int kThreads = kProducerThread + (kConsumers > 1 ? kWarpgroup : 32);
  // The stages, the staging slots and the residual tiles, 1024-byte aligned for the swizzles (each stage
  // and each operand tile in it a multiple of the 64-byte swizzle's 512-byte pattern), then the
  // barriers; 1024 bytes of slack for aligning.
  static constexpr int kSharedBytes =
      kStages * kStageBytes + kStagingBytes + kResidualBytes + (2 * kStages + kConsumers) * 8 + 1024;
};

struct Ring {
  std::uint8_t* stages;
  std::uint8_t* staging;
  std::uint8_t* residual;
  std::uint64_t* full;
  std::uint64_t* empty;
  std::uint64_t* residual_full;  // one a consumer
};

template <class T>
__device__ Ring carve_ring(std::uint8_t* shared) {
  const std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(shared) + 1023) & ~std::uintptr_t{1023};
  std::uint8_t* stages = reinterpret_cast<std::uint8_t*>(base);
  std::uint8_t* staging = stages + T::kStages * T::kStageBytes;
  std::uint8_t* residual = staging + T::kStagingBytes;
  auto* barriers = reinterpret_cast<std::uint64_t*>(residual + T::kResidualBytes);
  return {stages, staging, residual, barriers, barriers + T::kStages, barriers + 2 * T::kStages};
}

// Where a tile starts: the column tiles of one row tile are neighbours in the tile order, so that their x
// rows come from L2.
struct TileOrigin {
  int row0, column0;
};

template <class T, int kColumns>
__device__ TileOrigin tile_origin(int tile, int channels_out) {
  const int column_tiles = (channels_out + kColumns - 1) / kColumns;
  return {(tile / column_tiles) * T::kRows, (tile % column_tiles) * kColumns};
}

// The ring's position: blocks pass through the stages in order across every tile of the block, and a
// stage's barriers change phase each time round.
struct RingCursor {
  int stage = 0;
  std::uint32_t phase = 0;
  template <class T>
  __device__ void advance() {
    if (++stage == T::kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

// Where a tile's K blocks come from. A pointwise layer's block kb is x's rows of the tile at channel
// kb * block_k and the weights' columns there. A windowed layer's block is one tap (r, s) and one block of
// channels: the tile's output pixels' window positions (their top-left corners: image, row, column)
// shifted by the tap, and the weights' columns of that tap and channel block.
struct TileSource {
  int row0, column0;
  int image = 0, top = 0, left = 0;  // windowed layers

  __device__ TileSource(const GemmConvShape& shape, TileOrigin origin) : row0(origin.row0), column0(origin.column0) {
    const GemmConvWindow& w = shape.window;
    if (w.batch == 0) return;
    const int per_image = w.out_height * w.out_width;
    image = row0 / per_image;
    const int within = row0 - image * per_image;
    top = (within / w.out_width) * w.stride_h - w.pad_h;
    left = (within % w.out_width) * w.stride_w - w.pad_w;
  }

  __device__ void load(std::uint8_t* a, std::uint8_t* b, const CUtensorMap* x_map, const CUtensorMap* w_map,
                       std::uint64_t* full, const GemmConvShape& shape, int kb, int block_k) const {
    const GemmConvWindow& w = shape.window;
    if (w.batch == 0) {
      tma_load_2d(a, x_map, full, kb * block_k, row0);
      tma_load_2d(b, w_map, full, kb * block_k, column0);
      return;
    }
    const int channel_blocks = (shape.channels_in + block_k - 1) / block_k;
    const int tap = kb / channel_blocks, channel0 = (kb - tap * channel_blocks) * block_k;
    tma_load_im2col(a, x_map, full, channel0, left, top, image, static_cast<std::uint16_t>(tap % w.kernel_w),
                    static_cast<std::uint16_t>(tap / w.kernel_w));
    tma_load_2d(b, w_map, full, tap * shape.channels_in + channel0, column0);
  }
};

// The producer's first thread: the x and weight slices of every K block of the block's tiles, each into
// the next free stage, running ahead of the consumers by up to the ring's depth (so the next tile's
// copies overlap this tile's epilogue).
template <class T, int kColumns>
__device__ void produce(const Ring& ring, const CUtensorMap* x_map, const CUtensorMap* w_map, int tiles,
                        int k_blocks, const GemmConvShape& shape, int block_k) {
  RingCursor at;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const TileSource source(shape, tile_origin<T, kColumns>(tile, shape.channels_out));
    for (int kb = 0; kb < k_blocks; ++kb, at.advance<T>()) {
      barrier_wait(&ring.empty[at.stage], at.phase ^ 1);
      std::uint8_t* a = ring.stages + at.stage * T::kStageBytes;
      barrier_arrive_expect(&ring.full[at.stage], T::kStageBytes);
      source.load(a, a + T::kRows * T::kKBytes, x_map, w_map, &ring.full[at.stage], shape, kb, block_k);
    }
  }
}

// Each warp's first lane arrives: a warp's wait covers its own part of the warpgroup's steps.
__device__ inline void release_stage(const Ring& ring, int stage) {
  if (threadIdx.x % 32 == 0) barrier_arrive(&ring.empty[stage]);
}

// The consumer's 64 rows x kColumns accumulators of one tile over every K block, releasing each stage
// once the matrix steps reading it have completed (one group stays in flight while the next is issued).
template <class T, Operand kOperand, int kColumns>
__device__ void accumulate(const Ring& ring, RingCursor& at, int consumer, int k_blocks,
                           float (&acc)[Wgmma<kOperand, kColumns>::kRegisters]) {
  int previous = 0;
  for (int kb = 0; kb < k_blocks; ++kb, at.advance<T>()) {
    barrier_wait(&ring.full[at.stage], at.phase);
    const std::uint8_t* a = ring.stages + at.stage * T::kStageBytes + consumer * kRowsPerConsumer * T::kKBytes;
    const std::uint8_t* b = ring.stages + at.stage * T::kStageBytes + T::kRows * T::kKBytes;
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < T::kKBytes / kStepBytes; ++step) {
      Wgmma<kOperand, kColumns>::step(acc, swizzled_tile_descriptor<T::kKBytes>(a + step * kStepBytes),
                                      swizzled_tile_descriptor<T::kKBytes>(b + step * kStepBytes), kb > 0 || step > 0);
    }
    wgmma_commit();
    wgmma_wait<1>();
    if (kb > 0) release_stage(ring, previous);
    previous = at.stage;
  }
  wgmma_wait<0>();
  release_stage(ring, previous);
}

// The epilogue of two neighbouring columns of one row: v = act(acc * scale + bias (+ residual)).
template <bool kScaled, bool kResidual, Act kAct>
__device__ inline float2 epilogue_pair(float a0, float a1, float2 scale, float2 bias, float2 residual) {
  float v0 = kScaled ? fmaf(a0, scale.x, bias.x) : a0 + bias.x;
  float v1 = kScaled ? fmaf(a1, scale.y, bias.y) : a1 + bias.y;
  if constexpr (kResidual) {
    v0 += residual.x;
    v1 += residual.y;
  }
  return {activate(v0, kAct), activate(v1, kAct)};
}

// The copy engine's view of the outputs: boxes of 64 rows by one chunk's columns, the fp16 values with
// the 128-byte swizzle and the codes with the 64-byte one (a map is unused where its output is not
// written).
struct StoreMaps {
  const CUtensorMap* values;
  const CUtensorMap* codes;
};

// A consumer's residual tile in shared memory (address), loaded by the copy engine while the tile's
// matrix steps run: `ready` completes in the phase of parity `phase` once its bytes arrived.
struct ResidualTile {
  std::uint32_t chunks = 0;
  std::uint64_t* ready = nullptr;
  std::uint32_t phase = 0;
};

// A consumer's two staging slots (shared-memory addresses), taken in turn across all its chunks.
struct Staging {
  std::uint32_t slots;
  int used = 0;
  __device__ std::uint32_t next() { return slots + (used++ % kSlots) * kSlotBytes; }
};

// Where a thread's pair of values (row `r` of the chunk, 16-byte group `j`, lane pair `pair`) goes in a
// slot: the swizzles permute each row's 16-byte groups by the row's position in its 8-row (1024-byte) or
// 512-byte pattern, which also spreads a warp's 8 rows over all the banks.
__device__ inline int value_offset(int r, int j, int pair) { return r * 128 + ((j ^ (r % 8)) << 4) + pair * 4; }
__device__ inline int code_offset(int r, int j, int pair) {
  return kSlotValueBytes + r * 64 + (((j / 2) ^ ((r / 2) % 4)) << 4) + (j % 2) * 8 + pair * 2;
}

// A thread's bias and scale pairs of one chunk: per 8 columns j, the two neighbouring columns it holds.
// Read before the chunk waits for its slot, so that the loads are in flight meanwhile; a column past the
// tensor reads the last pair (its results are computed but never stored).
struct ChunkColumns {
  float2 bias[kChunkColumns / 8];
  float2 scale[kChunkColumns / 8];
};

template <bool kScaled>
__device__ ChunkColumns load_chunk_columns(const EpilogueArgs& e, int chunk0) {
  ChunkColumns c;
  const int first_column = chunk0 + (threadIdx.x % 4) * 2;
#pragma unroll
  for (int j = 0; j < kChunkColumns / 8; ++j) {
    const int column = min(first_column + j * 8, e.shape.channels_out - 2);
    c.bias[j] = __ldg(reinterpret_cast<const float2*>(e.out.bias + column));
    c.scale[j] = kScaled ? __ldg(reinterpret_cast<const float2*>(e.out.scale + column)) : float2{1.0f, 1.0f};
  }
  return c;
}

// A thread's pair of residual values from the residual chunk in shared memory: fp16 values in the
// values' layout, or E4M3 codes in the codes' layout, each then half(code x scale) as the reference reads a
// quantize point's output.
__device__ inline float2 residual_pair(const EpilogueArgs& e, std::uint32_t chunk, int r, int j, int pair) {
  if (e.out.residual_codes.codes == nullptr) {
    const std::uint32_t bits = load_shared_u32(chunk + value_offset(r, j, pair));
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  }
  const std::uint16_t codes = load_shared_u16(chunk + code_offset(r, j, pair) - kSlotValueBytes);
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(codes, __NV_E4M3);
  const float2 decoded = __half22float2(*reinterpret_cast<const __half2*>(&raw));
  const float scale = e.out.residual_codes.scale;
  return __half22float2(__floats2half2_rn(decoded.x * scale, decoded.y * scale));
}

// One chunk's results into a staging slot. Each thread holds, per 8 columns j, two neighbouring columns
// of two rows 8 apart (wgmma's f32 accumulator layout). The branches that do not depend on the element
// (scale, residual, activation) are template constants, the residual comes from its chunk in shared
// memory (same layout as the slot), and the slot is written through shared-memory addresses. Rows and
// columns past the tensor are computed like the others, without branches (the copy engine filled their
// operands with zeros), and never stored: the store clips its box at the tensor's edges.
template <Operand kOperand, int kRegisters, bool kResidual, Act kAct>
__device__ void stage_chunk(const float (&acc)[kRegisters], const EpilogueArgs& e, const ChunkColumns& columns,
                            std::uint32_t slot, std::uint32_t residual, int first_acc) {
  constexpr bool kScaled = kOperand == Operand::kE4m3;
  const int warp = (threadIdx.x % kWarpgroup) / 32;
  const int lane = threadIdx.x % 32;
  const int pair = lane % 4;
  const int r[2] = {warp * 16 + lane / 4, warp * 16 + lane / 4 + 8};
  const bool values = e.out.y != nullptr, codes = e.out.codes.codes != nullptr;
  const float inverse_scale = __frcp_rn(e.out.codes.scale);
#pragma unroll
  for (int j = 0; j < kChunkColumns / 8; ++j) {
    const float2 bias = columns.bias[j], scale = columns.scale[j];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int at = first_acc + j * 4 + half * 2;
      float2 r_value{0.0f, 0.0f};
      if constexpr (kResidual) r_value = residual_pair(e, residual, r[half], j, pair);
      const float2 v = epilogue_pair<kScaled, kResidual, kAct>(acc[at], acc[at + 1], scale, bias, r_value);
      const __half2 stored = __floats2half2_rn(v.x, v.y);
      if (values) store_shared_u32(slot + value_offset(r[half], j, pair), *reinterpret_cast<const std::uint32_t*>(&stored));
      if (codes) {
        store_shared_u16(slot + code_offset(r[half], j, pair),
                         e4m3_codes2(__half22float2(stored), e.out.codes.scale, inverse_scale));
      }
    }
  }
}

// A consumer's 64 rows of a tile, chunk by chunk: the slot is taken once the copy engine has read what it
// held two chunks ago, filled by the whole warpgroup, then stored by the warpgroup's first thread.
template <Operand kOperand, int kColumns, int kRegisters, bool kResidual, Act kAct>
__device__ void write_tile_as(const float (&acc)[kRegisters], const EpilogueArgs& e, const StoreMaps& maps,
                              Staging& staging, const ResidualTile& residual, int consumer, int row0, int column0) {
  const bool leader = threadIdx.x % kWarpgroup == 0;
  if constexpr (kResidual) barrier_wait(residual.ready, residual.phase);
#pragma unroll
  for (int c = 0; c < kColumns / kChunkColumns; ++c) {
    const int chunk0 = column0 + c * kChunkColumns;
    if (chunk0 >= e.shape.channels_out) break;
    const ChunkColumns columns = load_chunk_columns<kOperand == Operand::kE4m3>(e, chunk0);
    const std::uint32_t slot = staging.next();
    if (leader) bulk_wait_read<kSlots - 1>();
    named_barrier_sync(1 + consumer, kWarpgroup);
    stage_chunk<kOperand, kRegisters, kResidual, kAct>(acc, e, columns, slot, residual.chunks + c * kSlotValueBytes,
                                                       c * kChunkColumns / 2);
    fence_async_shared();
    named_barrier_sync(1 + consumer, kWarpgroup);
    if (leader) {
      if (e.out.y != nullptr) tma_store_2d(maps.values, slot, chunk0, row0);
      if (e.out.codes.codes != nullptr) tma_store_2d(maps.codes, slot + kSlotValueBytes, chunk0, row0);
      bulk_commit();
    }
  }
}

template <Operand kOperand, int kColumns, int kRegisters, bool kResidual>
__device__ void write_tile(const float (&acc)[kRegisters], const EpilogueArgs& e, const StoreMaps& maps,
                           Staging& staging, const ResidualTile& residual, int consumer, int row0, int column0) {
#define KILN_WRITE_TILE_AS(act) \
  write_tile_as<kOperand, kColumns, kRegisters, kResidual, act>(acc, e, maps, staging, residual, consumer, row0, column0)
  switch (e.out.act) {
    case Act::kNone: return KILN_WRITE_TILE_AS(Act::kNone);
    case Act::kRelu: return KILN_WRITE_TILE_AS(Act::kRelu);
    case Act::kSilu: return KILN_WRITE_TILE_AS(Act::kSilu);
    case Act::kSigmoid: return KILN_WRITE_TILE_AS(Act::kSigmoid);
  }
#undef KILN_WRITE_TILE_AS
}

// The consumer's first thread: the residual of the consumer's rows of a tile, chunk by chunk, into its
// residual tile (a chunk of codes fills half of its place). The previous tile's epilogue has read it:
// each chunk ends with a warpgroup barrier.
template <int kColumns>
__device__ void load_residual(const CUtensorMap* map, const ResidualTile& tile, std::uint8_t* chunks,
                              int channels_out, int row0, int column0, bool codes) {
  int loaded = 0;
  for (int c = 0; c < kColumns / kChunkColumns && column0 + c * kChunkColumns < channels_out; ++c) ++loaded;
  const int chunk_bytes = codes ? kSlotValueBytes / 2 : kSlotValueBytes;
  barrier_arrive_expect(tile.ready, static_cast<std::uint32_t>(loaded * chunk_bytes));
  for (int c = 0; c < loaded; ++c) {
    tma_load_2d(chunks + c * kSlotValueBytes, map, tile.ready, column0 + c * kChunkColumns, row0);
  }
}

// The copy engine's maps of a launch: the operands' load maps, the outputs' store maps and the
// residual's load map (zero where unused).
struct LaunchMaps {
  CUtensorMap x, w, y, codes, residual;
};

template <class T, Operand kOperand, int kColumns, bool kResidual>
__device__ void consume(const Ring& ring, const CUtensorMap* y_map, const CUtensorMap* codes_map,
                        const CUtensorMap* residual_map, const EpilogueArgs& e, int tiles, int k_blocks) {
  const int consumer = threadIdx.x / kWarpgroup;
  const StoreMaps maps{y_map, codes_map};
  Staging staging{shared_address(ring.staging + consumer * kSlots * kSlotBytes)};
  std::uint8_t* residual_chunks = ring.residual + consumer * T::kResidualTileBytes;
  ResidualTile residual{shared_address(residual_chunks), &ring.residual_full[consumer], 0};
  RingCursor at;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, residual.phase ^= 1) {
    const TileOrigin origin = tile_origin<T, kColumns>(tile, e.shape.channels_out);
    const int row0 = origin.row0 + consumer * kRowsPerConsumer;
    if (kResidual && threadIdx.x % kWarpgroup == 0) {
      load_residual<kColumns>(residual_map, residual, residual_chunks, e.shape.channels_out, row0, origin.column0,
                              e.out.residual_codes.codes != nullptr);
    }
    float acc[Wgmma<kOperand, kColumns>::kRegisters];
    accumulate<T, kOperand, kColumns>(ring, at, consumer, k_blocks, acc);
    write_tile<kOperand, kColumns, Wgmma<kOperand, kColumns>::kRegisters, kResidual>(
        acc, e, maps, staging, residual, consumer, row0, origin.column0);
  }
  if (threadIdx.x % kWarpgroup == 0) bulk_wait_all();
}

template <Operand kOperand, int kColumns, int kConsumers, bool kResidual, int kBlocks, int kKBytes>
__global__ void __launch_bounds__(Tiling<kColumns, kConsumers, kResidual, kBlocks, kKBytes>::kThreads, kBlocks)
    gemm_conv_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                     const __grid_constant__ CUtensorMap y_map, const __grid_constant__ CUtensorMap codes_map,
                     const __grid_constant__ CUtensorMap residual_map, const EpilogueArgs e) {
  using T = Tiling<kColumns, kConsumers, kResidual, kBlocks, kKBytes>;
  extern __shared__ std::uint8_t shared[];
  const Ring ring = carve_ring<T>(shared);
  constexpr int block_k = kBlockK<kOperand, kKBytes>;
  const int k_blocks =
      e.shape.window.kernel_h * e.shape.window.kernel_w * ((e.shape.channels_in + block_k - 1) / block_k);
  const int tiles = ((e.shape.pixels + T::kRows - 1) / T::kRows) *
                    ((e.shape.channels_out + kColumns - 1) / kColumns);
  if (threadIdx.x == 0) {
    prefetch_tensor_map(&x_map);
    prefetch_tensor_map(&w_map);
    for (int s = 0; s < T::kStages; ++s) {
      barrier_init(&ring.full[s], 1);
      barrier_init(&ring.empty[s], 4 * kConsumers);
    }
    for (int c = 0; c < kConsumers; ++c) barrier_init(&ring.residual_full[c], 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x < T::kProducerThread) {
    if constexpr (kConsumers > 1) claim_registers<232>();
    consume<T, kOperand, kColumns, kResidual>(ring, &y_map, &codes_map, &residual_map, e, tiles, k_blocks);
  } else {
    if constexpr (kConsumers > 1) release_registers<40>();
    if (threadIdx.x == T::kProducerThread) produce<T, kColumns>(ring, &x_map, &w_map, tiles, k_blocks, e.shape, block_k);
  }
}

// A persistent grid: as many blocks as fit on the GPU at once, each taking every gridDim-th tile.
template <Operand kOperand, int kColumns, int kConsumers, bool kResidual, int kBlocks, int kKBytes>
cudaError_t launch_as(const LaunchMaps& m, const EpilogueArgs& e, cudaStream_t stream) {
  using T = Tiling<kColumns, kConsumers, kResidual, kBlocks, kKBytes>;
  const auto kernel = gemm_conv_kernel<kOperand, kColumns, kConsumers, kResidual, kBlocks, kKBytes>;
  if (const cudaError_t status =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes);
      status != cudaSuccess) {
    return status;
  }
  const long long tiles = static_cast<long long>((e.shape.channels_out + kColumns - 1) / kColumns) *
                          ((e.shape.pixels + T::kRows - 1) / T::kRows);
  int device = 0, processors = 0, per_processor = 0;
  if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) return status;
  if (const cudaError_t status = cudaDeviceGetAttribute(&processors, cudaDevAttrMultiProcessorCount, device);
      status != cudaSuccess) {
    return status;
  }
  if (const cudaError_t status =
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_processor, kernel, T::kThreads, T::kSharedBytes);
      status != cudaSuccess) {
    return status;
  }
  const long long blocks = std::min<long long>(tiles, static_cast<long long>(processors) * std::max(per_processor, 1));
  kernel<<<static_cast<unsigned>(blocks), T::kThreads, T::kSharedBytes, stream>>>(m.x, m.w, m.y, m.codes,
                                                                                  m.residual, e);
  return cudaGetLastError();
}

template <Operand kOperand, int kColumns, int kConsumers, int kBlocks, int kKBytes = kRowBytes>
cudaError_t launch(const LaunchMaps& m, const EpilogueArgs& e, cudaStream_t stream) {
  return e.out.residual != nullptr || e.out.residual_codes.codes != nullptr
             ? launch_as<kOperand, kColumns, kConsumers, true, kBlocks, kKBytes>(m, e, stream)
             : launch_as<kOperand, kColumns, kConsumers, false, kBlocks, kKBytes>(m, e, stream);
}

}  // namespace gemm_conv_detail

using GemmConvMaps = gemm_conv_detail::LaunchMaps;

// Launches the kernel of `kOperand` tiled as `tile`; cudaErrorInvalidConfiguration for a tile it is not
// instantiated for. Instantiated once per operand type (gemm_conv_f16.cu, gemm_conv_e4m3.cu).
template <Operand kOperand>
cudaError_t launch_tile(const GemmConvTile& tile, const GemmConvMaps& m, const EpilogueArgs& e,
                        cudaStream_t stream) {
  using gemm_conv_detail::launch;
  const int n = tile_number(tile);
  if (n == tile_number({64, 1, 1})) return launch<kOperand, 64, 1, 1>(m, e, stream);
  if (n == tile_number({128, 1, 1})) return launch<kOperand, 128, 1, 1>(m, e, stream);
  if (n == tile_number({256, 1, 1})) return launch<kOperand, 256, 1, 1>(m, e, stream);
  if (n == tile_number({64, 2, 1})) return launch<kOperand, 64, 2, 1>(m, e, stream);
  if (n == tile_number({128, 2, 1})) return launch<kOperand, 128, 2, 1>(m, e, stream);
  if (n == tile_number({256, 2, 1})) return launch<kOperand, 256, 2, 1>(m, e, stream);
  if (n == tile_number({64, 1, 2})) return launch<kOperand, 64, 1, 2>(m, e, stream);
  if (n == tile_number({128, 1, 2})) return launch<kOperand, 128, 1, 2>(m, e, stream);
  if (n == tile_number({64, 2, 1, kNarrowRowBytes})) return launch<kOperand, 64, 2, 1, kNarrowRowBytes>(m, e, stream);
  if (n == tile_number({128, 2, 1, kNarrowRowBytes})) return launch<kOperand, 128, 2, 1, kNarrowRowBytes>(m, e, stream);
  if (n == tile_number({256, 2, 1, kNarrowRowBytes})) return launch<kOperand, 256, 2, 1, kNarrowRowBytes>(m, e, stream);
  if (n == tile_number({64, 1, 2, kNarrowRowBytes})) return launch<kOperand, 64, 1, 2, kNarrowRowBytes>(m, e, stream);
  return cudaErrorInvalidConfiguration;
}

extern template cudaError_t launch_tile<Operand::kF16>(const GemmConvTile&, const GemmConvMaps&, const EpilogueArgs&,
                                                       cudaStream_t);
extern template cudaError_t launch_tile<Operand::kE4m3>(const GemmConvTile&, const GemmConvMaps&,
                                                        const EpilogueArgs&, cudaStream_t);

}  // namespace kiln::cuda::hopper
