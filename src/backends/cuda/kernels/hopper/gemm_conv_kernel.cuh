// kiln's Hopper convolution kernel (gemm_conv_kernels.h), included by one file per operand type so that
// each compiles on its own. A block computes tiles of the output: its warpgroups are consumers, each
// computing 64 rows of a tile with wgmma steps straight from the stages and then the epilogue from its
// registers, which puts the results in shared memory for the copy engine to store; the warps after them
// are the producer, whose first thread has the copy engine fill a ring of shared-memory stages (a
// 128- or 64-byte-wide slice of K of the x tile and of the weight tile each). With one consumer the producer
// is a single warp, so that its thread slots and registers go to a second block a multiprocessor; with two it
// is a warpgroup that hands its registers to the consumers (a multiprocessor's four register files each hold
// three of the block's warps, and the consumers of a 256-column tile need 232 registers a thread, which only
// the producer's leaving makes room for). Two barriers per stage keep the ring: `full` completes when a
// stage's bytes arrived, `empty` when every consumer warp finished reading it. A layer's residual is loaded
// by each consumer's first thread into buffers of its own, a tile ahead where two fit.
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

// What a layer's epilogue adds: nothing, a residual of fp16 values, or one of E4M3 or int8 codes.
enum class ResidualKind : std::uint8_t { kNone, kHalf, kE4m3, kInt8 };

// Bytes of one residual element: an fp16 value, or a code.
constexpr int residual_bytes(ResidualKind kind) { return kind == ResidualKind::kHalf ? 2 : 1; }

// operand_scaled() for device code (a constant, where a host function cannot be called).
template <Operand kOperand>
inline constexpr bool kScaledOperand = operand_scaled(kOperand);

// Which codes the epilogue writes beside (or instead of) the fp16 values: none, E4M3 or int8.
enum class CodesKind : std::uint8_t { kNone, kE4m3, kInt8 };

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

template <int kColumns, int kConsumers, ResidualKind kResidual, int kBlocks, int kKRowBytes>
struct Tiling {
  static constexpr int kKBytes = kKRowBytes;  // K bytes a stage row holds
  static constexpr int kRows = kRowsPerConsumer * kConsumers;
  static constexpr int kStageBytes = (kRows + kColumns) * kKBytes;
  static constexpr int kStagingBytes = kConsumers * kSlots * kSlotBytes;
  // A consumer's residual buffer: a tile's 64-column chunks of 64 rows of fp16 values or codes, in
  // the store maps' swizzles. Two where the ring keeps two stages beside them, else one.
  static constexpr int kResidualBufferBytes =
      kResidual == ResidualKind::kNone ? 0 : kRowsPerConsumer * kColumns * residual_bytes(kResidual);
  static constexpr int kResidualBuffers =
      kSharedBudget / kBlocks - kStagingBytes - 2 * kConsumers * kResidualBufferBytes >= 2 * kStageBytes ? 2
                                                                                                         : 1;
  static constexpr int kResidualTileBytes = kResidualBuffers * kResidualBufferBytes;  // a consumer's place
  static constexpr int kResidualBytes = kConsumers * kResidualTileBytes;
  static constexpr int kRingBudget = kSharedBudget / kBlocks - kStagingBytes - kResidualBytes;
  static constexpr int kMaxStages = 8 * kRowBytes / kKBytes;
  static constexpr int kStages =
      kRingBudget / kStageBytes < kMaxStages ? kRingBudget / kStageBytes : kMaxStages;
  static_assert(kStages >= 2, "a ring of one stage would serialize the copies and the matrix steps");
  static constexpr int kProducerThread = kWarpgroup * kConsumers;
  static constexpr int kThreads = kProducerThread + (kConsumers > 1 ? kWarpgroup : 32);
  // The stages, the staging slots and the residual tiles, 1024-byte aligned for the swizzles (each stage
  // and each operand tile in it a multiple of the 64-byte swizzle's 512-byte pattern), then the
  // barriers; 1024 bytes of slack for aligning.
  static constexpr int kSharedBytes =
      kStages * kStageBytes + kStagingBytes + kResidualBytes + (2 * kStages + 2 * kConsumers) * 8 + 1024;
};

struct Ring {
  std::uint8_t* stages;
  std::uint8_t* staging;
  std::uint8_t* residual;
  std::uint64_t* full;
  std::uint64_t* empty;
  std::uint64_t* residual_full;  // two a consumer: one a residual buffer
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
// shifted by the tap, and the weights' columns of that tap and channel block. A grouped layer's tile lies
// within one group (gemm_conv_takes()), whose channels of x start at `x_channel0`.
struct TileSource {
  int row0, column0;
  int x_channel0 = 0;
  int image = 0, top = 0, left = 0;  // windowed layers

  __device__ TileSource(const GemmConvShape& shape, TileOrigin origin)
      : row0(origin.row0), column0(origin.column0) {
    if (shape.groups > 1) x_channel0 = column0 / (shape.channels_out / shape.groups) * shape.channels_in;
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
      tma_load_2d(a, x_map, full, x_channel0 + kb * block_k, row0);
      tma_load_2d(b, w_map, full, kb * block_k, column0);
      return;
    }
    const int channel_blocks = (shape.channels_in + block_k - 1) / block_k;
    const int tap = kb / channel_blocks, channel0 = (kb - tap * channel_blocks) * block_k;
    tma_load_im2col(a, x_map, full, x_channel0 + channel0, left, top, image,
                    static_cast<std::uint16_t>(tap % w.kernel_w),
                    static_cast<std::uint16_t>(tap / w.kernel_w));
    tma_load_2d(b, w_map, full, tap * shape.weight_tap_channels + channel0, column0);
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
                           Accumulator<kOperand> (&acc)[Wgmma<kOperand, kColumns>::kRegisters]) {
  int previous = 0;
  for (int kb = 0; kb < k_blocks; ++kb, at.advance<T>()) {
    barrier_wait(&ring.full[at.stage], at.phase);
    const std::uint8_t* a =
        ring.stages + at.stage * T::kStageBytes + consumer * kRowsPerConsumer * T::kKBytes;
    const std::uint8_t* b = ring.stages + at.stage * T::kStageBytes + T::kRows * T::kKBytes;
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < T::kKBytes / kStepBytes; ++step) {
      Wgmma<kOperand, kColumns>::step(acc, swizzled_tile_descriptor<T::kKBytes>(a + step * kStepBytes),
                                      swizzled_tile_descriptor<T::kKBytes>(b + step * kStepBytes),
                                      kb > 0 || step > 0);
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

// A consumer's residual tiles in shared memory, chunk by chunk in the store maps' layouts. With two
// buffers the next tile's residual is loaded while this tile's epilogue runs, which for layers of one or
// two K blocks is most of the tile's time; with one (where the ring would keep too few stages), while the
// tile's matrix steps run.
template <ResidualKind kResidual, int kColumns, int kBufferCount = 1>
struct ResidualTiles {
  static constexpr int kBuffers = kBufferCount;
  static constexpr int kChunkBytes = kRowsPerConsumer * kChunkColumns * residual_bytes(kResidual);
  static constexpr int kBufferBytes = kChunkBytes * (kColumns / kChunkColumns);
  std::uint8_t* place;   // the consumer's place, 1024-byte aligned
  std::uint64_t* ready;  // one barrier a buffer: complete once the buffer's bytes arrived
  __device__ std::uint8_t* buffer(int use) const { return place + (use % kBuffers) * kBufferBytes; }
  __device__ std::uint64_t* barrier(int use) const { return ready + use % kBuffers; }
  // The parity of the phase in which the buffer of the consumer's `use`-th tile completes.
  __device__ static std::uint32_t parity(int use) { return static_cast<std::uint32_t>(use / kBuffers) & 1; }
};

// A consumer's two staging slots (shared-memory addresses), taken in turn across all its chunks.
struct Staging {
  std::uint32_t slots;
  int used = 0;
  __device__ std::uint32_t next() { return slots + (used++ % kSlots) * kSlotBytes; }
};

// Where a thread's pairs of values go in a slot, for its row r of the chunk (its first; the second, r + 8,
// is 1024 bytes further for values and 512 for codes), per 16-byte group j. The swizzles permute each
// row's 16-byte groups by the row's position in its 8-row (1024-byte) or 512-byte pattern, which also
// spreads a warp's 8 rows over all the banks:
//   value: r * 128 + ((j ^ (r % 8)) << 4) + pair * 4
//   code:  r * 64 + (((j / 2) ^ ((r / 2) % 4)) << 4) + (j % 2) * 8 + pair * 2   (after the slot's values)
// The XOR touches only bits 4-6 of an offset whose other terms leave them zero, so each offset is one
// per-thread constant XOR the group's bits; slots and residual chunks are 1024-byte aligned, so adding
// their address keeps the form. Computed once per thread: each epilogue step then costs no arithmetic
// for its addresses.
struct ThreadOffsets {
  std::uint32_t values[kChunkColumns / 8];
  std::uint32_t codes[kChunkColumns / 16];
};

__device__ inline ThreadOffsets thread_offsets() {
  const int warp = (threadIdx.x % kWarpgroup) / 32, lane = threadIdx.x % 32;
  const std::uint32_t r = warp * 16 + lane / 4, pair = lane % 4;
  const std::uint32_t value_base = r * 128 + ((r % 8) << 4) + pair * 4;
  const std::uint32_t code_base = r * 64 + (((r / 2) % 4) << 4) + pair * 2;
  ThreadOffsets o;
#pragma unroll
  for (int j = 0; j < kChunkColumns / 8; ++j) o.values[j] = value_base ^ (j << 4);
#pragma unroll
  for (int j = 0; j < kChunkColumns / 16; ++j) o.codes[j] = code_base ^ (j << 4);
  return o;
}
constexpr std::uint32_t kSecondRowValues = 8 * 128, kSecondRowCodes = 8 * 64;

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

// What an epilogue step needs beside the tile: the output codes' scale and its reciprocal, the residual
// codes' scale, and whether the fp16 values are written beside the codes. The same for every tile.
struct EpilogueConstants {
  float code_scale, inverse_code_scale, residual_scale;
  bool values;
};

__device__ inline EpilogueConstants epilogue_constants(const EpilogueArgs& e) {
  return {e.out.codes.scale, __frcp_rn(e.out.codes.scale), e.out.residual_codes.scale, e.out.y != nullptr};
}

// int8_code() of two values (quantization_math.cuh), low byte `stored.x`.
__device__ inline std::uint16_t int8_codes2(float2 stored, float inverse) {
  const auto byte = [inverse](float v) { return static_cast<std::uint32_t>(int8_code(v, inverse)) & 0xffu; };
  return static_cast<std::uint16_t>(byte(stored.x) | byte(stored.y) << 8);
}

// A pair of residual values as read from its chunk: fp16 values, or E4M3 or int8 codes each read as
// half(code x scale), which is how the reference reads a quantize point's output.
template <ResidualKind kKind>
__device__ inline float2 decode_residual(std::uint32_t bits, float scale) {
  if constexpr (kKind == ResidualKind::kHalf) return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  float2 decoded;
  if constexpr (kKind == ResidualKind::kE4m3) {
    const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(bits), __NV_E4M3);
    decoded = __half22float2(*reinterpret_cast<const __half2*>(&raw));
  } else {
    decoded = {static_cast<float>(static_cast<std::int8_t>(bits & 0xffu)),
               static_cast<float>(static_cast<std::int8_t>((bits >> 8) & 0xffu))};
  }
  return __half22float2(__floats2half2_rn(decoded.x * scale, decoded.y * scale));
}

// One chunk's results into a staging slot. Each thread holds, per 8 columns j, two neighbouring columns
// of two rows 8 apart (wgmma's accumulator layout; int8's s32 sums convert to f32 here). What does not depend
// on the element (scale, residual, activation, codes) is a template constant, so the unrolled steps have no
// branch between them; the residual's loads are all issued first (shared-memory accesses are ordered asm, and
// their latencies then overlap). Rows and columns past the tensor are computed like the others (the copy
// engine filled their operands with zeros) and never stored: the store clips its box at the tensor's edges.
template <Operand kOperand, int kRegisters, ResidualKind kResidual, CodesKind kCodes, Act kAct>
__device__ void stage_chunk(const Accumulator<kOperand> (&acc)[kRegisters], const ChunkColumns& columns,
                            const ThreadOffsets& at, const EpilogueConstants& k, std::uint32_t slot,
                            std::uint32_t residual, int first_acc) {
  constexpr bool kScaled = kScaledOperand<kOperand>;
  constexpr int kSteps = kChunkColumns / 8 * 2;
  [[maybe_unused]] std::uint32_t residual_bits[kSteps];
#pragma unroll
  for (int step = 0; step < kSteps; ++step) {
    const int j = step / 2, second = step % 2;
    if constexpr (kResidual == ResidualKind::kHalf) {
      residual_bits[step] = load_shared_u32(residual + at.values[j] + second * kSecondRowValues);
    } else if constexpr (kResidual != ResidualKind::kNone) {
      residual_bits[step] =
          load_shared_u16(residual + at.codes[j / 2] + (j % 2) * 8 + second * kSecondRowCodes);
    }
  }
#pragma unroll
  for (int step = 0; step < kSteps; ++step) {
    const int j = step / 2, second = step % 2, a = first_acc + j * 4 + second * 2;
    float2 r{0.0f, 0.0f};
    if constexpr (kResidual != ResidualKind::kNone)
      r = decode_residual<kResidual>(residual_bits[step], k.residual_scale);
    const float2 v = epilogue_pair<kScaled, kResidual != ResidualKind::kNone, kAct>(
        static_cast<float>(acc[a]), static_cast<float>(acc[a + 1]), columns.scale[j], columns.bias[j], r);
    const __half2 stored = __floats2half2_rn(v.x, v.y);
    const std::uint32_t stored_bits = *reinterpret_cast<const std::uint32_t*>(&stored);
    const std::uint32_t value_at = slot + at.values[j] + second * kSecondRowValues;
    if constexpr (kCodes != CodesKind::kNone) {
      store_shared_u32_if(k.values, value_at, stored_bits);
      const float2 rounded = __half22float2(stored);
      store_shared_u16(slot + kSlotValueBytes + at.codes[j / 2] + (j % 2) * 8 + second * kSecondRowCodes,
                       kCodes == CodesKind::kE4m3 ? e4m3_codes2(rounded, k.code_scale, k.inverse_code_scale)
                                                  : int8_codes2(rounded, k.inverse_code_scale));
    } else {
      store_shared_u32(value_at, stored_bits);
    }
  }
}

// Where a consumer's epilogue of one tile reads and writes: its staging slots, the residual chunks of the
// tile (a shared-memory address) and the tile's origin.
struct TileOutput {
  std::uint32_t residual;
  int row0, column0;
};

// A consumer's 64 rows of a tile, chunk by chunk: the slot is taken once the copy engine has read what it
// held two chunks ago, filled by the whole warpgroup, then stored by the warpgroup's first thread.
template <Operand kOperand, int kColumns, int kRegisters, ResidualKind kResidual, CodesKind kCodes, Act kAct>
__device__ void write_tile_as(const Accumulator<kOperand> (&acc)[kRegisters], const EpilogueArgs& e,
                              const StoreMaps& maps, Staging& staging, const ThreadOffsets& at,
                              const EpilogueConstants& k, const TileOutput& out, int consumer) {
  constexpr int kResidualChunkBytes = ResidualTiles<kResidual, kColumns>::kChunkBytes;
  const bool leader = threadIdx.x % kWarpgroup == 0;
#pragma unroll
  for (int c = 0; c < kColumns / kChunkColumns; ++c) {
    const int chunk0 = out.column0 + c * kChunkColumns;
    if (chunk0 >= e.shape.channels_out) break;
    const ChunkColumns columns = load_chunk_columns<kScaledOperand<kOperand>>(e, chunk0);
    const std::uint32_t slot = staging.next();
    if (leader) bulk_wait_read<kSlots - 1>();
    named_barrier_sync(1 + consumer, kWarpgroup);
    stage_chunk<kOperand, kRegisters, kResidual, kCodes, kAct>(
        acc, columns, at, k, slot, out.residual + c * kResidualChunkBytes, c * kChunkColumns / 2);
    fence_async_shared();
    named_barrier_sync(1 + consumer, kWarpgroup);
    if (leader) {
      if (e.out.y != nullptr) tma_store_2d(maps.values, slot, chunk0, out.row0);
      if (kCodes != CodesKind::kNone) tma_store_2d(maps.codes, slot + kSlotValueBytes, chunk0, out.row0);
      bulk_commit();
    }
  }
}

template <Operand kOperand, int kColumns, int kRegisters, ResidualKind kResidual, CodesKind kCodes>
__device__ void write_tile_with(const Accumulator<kOperand> (&acc)[kRegisters], const EpilogueArgs& e,
                                const StoreMaps& maps, Staging& staging, const ThreadOffsets& at,
                                const EpilogueConstants& k, const TileOutput& out, int consumer) {
#define KILN_WRITE_TILE_AS(act)                                                                            \
  write_tile_as<kOperand, kColumns, kRegisters, kResidual, kCodes, act>(acc, e, maps, staging, at, k, out, \
                                                                        consumer)
  switch (e.out.act) {
    case Act::kNone:
      return KILN_WRITE_TILE_AS(Act::kNone);
    case Act::kRelu:
      return KILN_WRITE_TILE_AS(Act::kRelu);
    case Act::kSilu:
      return KILN_WRITE_TILE_AS(Act::kSilu);
    case Act::kSigmoid:
      return KILN_WRITE_TILE_AS(Act::kSigmoid);
  }
#undef KILN_WRITE_TILE_AS
}

// The codes' grid as a template constant, instantiated only where gemm_conv_epilogue_takes() lets it
// come: E4M3 layers write no int8 codes, int8 layers no E4M3 ones.
template <Operand kOperand, int kColumns, int kRegisters, ResidualKind kResidual>
__device__ void write_tile(const Accumulator<kOperand> (&acc)[kRegisters], const EpilogueArgs& e,
                           const StoreMaps& maps, Staging& staging, const ThreadOffsets& at,
                           const EpilogueConstants& k, const TileOutput& out, int consumer) {
#define KILN_WRITE_TILE_WITH(codes)                                                                    \
  write_tile_with<kOperand, kColumns, kRegisters, kResidual, codes>(acc, e, maps, staging, at, k, out, \
                                                                    consumer)
  if (e.out.codes.codes == nullptr) return KILN_WRITE_TILE_WITH(CodesKind::kNone);
  if constexpr (kOperand != Operand::kE4m3) {
    if (e.out.codes.grid == CodeGrid::kInt8) return KILN_WRITE_TILE_WITH(CodesKind::kInt8);
  }
  if constexpr (kOperand != Operand::kS8) return KILN_WRITE_TILE_WITH(CodesKind::kE4m3);
#undef KILN_WRITE_TILE_WITH
}

// The consumer's first thread: the residual of the consumer's rows of a tile, chunk by chunk, into a
// buffer that no epilogue reads any more.
template <int kColumns, int kChunkBytes>
__device__ void load_residual(const CUtensorMap* map, std::uint64_t* ready, std::uint8_t* chunks,
                              int channels_out, int row0, int column0) {
  int loaded = 0;
  for (int c = 0; c < kColumns / kChunkColumns && column0 + c * kChunkColumns < channels_out; ++c) ++loaded;
  barrier_arrive_expect(ready, static_cast<std::uint32_t>(loaded * kChunkBytes));
  for (int c = 0; c < loaded; ++c) {
    tma_load_2d(chunks + c * kChunkBytes, map, ready, column0 + c * kChunkColumns, row0);
  }
}

// The copy engine's maps of a launch: the operands' load maps, the outputs' store maps and the
// residual's load map (zero where unused).
struct LaunchMaps {
  CUtensorMap x, w, y, codes, residual;
};

// The consumer's first thread loads the residual of the consumer's `use`-th tile (tile number `tile`).
template <class T, int kColumns, class Residual>
__device__ void load_residual_of(const Residual& residual, const CUtensorMap* map, const EpilogueArgs& e,
                                 int consumer, int tile, int use) {
  const TileOrigin origin = tile_origin<T, kColumns>(tile, e.shape.channels_out);
  load_residual<kColumns, Residual::kChunkBytes>(map, residual.barrier(use), residual.buffer(use),
                                                 e.shape.channels_out,
                                                 origin.row0 + consumer * kRowsPerConsumer, origin.column0);
}

template <class T, Operand kOperand, int kColumns, ResidualKind kResidual>
__device__ void consume(const Ring& ring, const CUtensorMap* y_map, const CUtensorMap* codes_map,
                        const CUtensorMap* residual_map, const EpilogueArgs& e, int tiles, int k_blocks) {
  using Residual = ResidualTiles<kResidual, kColumns, T::kResidualBuffers>;
  constexpr bool kHasResidual = kResidual != ResidualKind::kNone;
  const int consumer = threadIdx.x / kWarpgroup;
  const bool leader = threadIdx.x % kWarpgroup == 0;
  const StoreMaps maps{y_map, codes_map};
  Staging staging{shared_address(ring.staging + consumer * kSlots * kSlotBytes)};
  const Residual residual{ring.residual + consumer * T::kResidualTileBytes,
                          &ring.residual_full[consumer * 2]};
  const ThreadOffsets at = thread_offsets();
  const EpilogueConstants constants = epilogue_constants(e);
  RingCursor cursor;
  if (kHasResidual && leader && static_cast<int>(blockIdx.x) < tiles) {
    load_residual_of<T, kColumns>(residual, residual_map, e, consumer, blockIdx.x, 0);
  }
  int use = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++use) {
    const int next = tile + gridDim.x;
    // Two buffers: the next tile's residual goes into the one the previous tile's epilogue has read.
    if (kHasResidual && Residual::kBuffers == 2 && leader && next < tiles) {
      load_residual_of<T, kColumns>(residual, residual_map, e, consumer, next, use + 1);
    }
    const TileOrigin origin = tile_origin<T, kColumns>(tile, e.shape.channels_out);
    Accumulator<kOperand> acc[Wgmma<kOperand, kColumns>::kRegisters];
    accumulate<T, kOperand, kColumns>(ring, cursor, consumer, k_blocks, acc);
    if constexpr (kHasResidual) barrier_wait(residual.barrier(use), Residual::parity(use));
    const TileOutput out{shared_address(residual.buffer(use)), origin.row0 + consumer * kRowsPerConsumer,
                         origin.column0};
    write_tile<kOperand, kColumns, Wgmma<kOperand, kColumns>::kRegisters, kResidual>(
        acc, e, maps, staging, at, constants, out, consumer);
    // One buffer: the epilogue has read it (each chunk ends with a warpgroup barrier).
    if (kHasResidual && Residual::kBuffers == 1 && leader && next < tiles) {
      load_residual_of<T, kColumns>(residual, residual_map, e, consumer, next, use + 1);
    }
  }
  if (leader) bulk_wait_all();
}

template <Operand kOperand, int kColumns, int kConsumers, ResidualKind kResidual, int kBlocks, int kKBytes>
__global__ void __launch_bounds__(Tiling<kColumns, kConsumers, kResidual, kBlocks, kKBytes>::kThreads,
                                  kBlocks)
    gemm_conv_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                     const __grid_constant__ CUtensorMap y_map, const __grid_constant__ CUtensorMap codes_map,
                     const __grid_constant__ CUtensorMap residual_map, const EpilogueArgs e) {
  using T = Tiling<kColumns, kConsumers, kResidual, kBlocks, kKBytes>;
  extern __shared__ std::uint8_t shared[];
  const Ring ring = carve_ring<T>(shared);
  constexpr int block_k = kBlockK<kOperand, kKBytes>;
  const int k_blocks =
      e.shape.window.kernel_h * e.shape.window.kernel_w * ((e.shape.channels_in + block_k - 1) / block_k);
  const int tiles =
      ((e.shape.pixels + T::kRows - 1) / T::kRows) * ((e.shape.channels_out + kColumns - 1) / kColumns);
  if (threadIdx.x == 0) {
    prefetch_tensor_map(&x_map);
    prefetch_tensor_map(&w_map);
    for (int s = 0; s < T::kStages; ++s) {
      barrier_init(&ring.full[s], 1);
      barrier_init(&ring.empty[s], 4 * kConsumers);
    }
    for (int b = 0; b < 2 * kConsumers; ++b) barrier_init(&ring.residual_full[b], 1);
    fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x < T::kProducerThread) {
    if constexpr (kConsumers > 1) claim_registers<232>();
    consume<T, kOperand, kColumns, kResidual>(ring, &y_map, &codes_map, &residual_map, e, tiles, k_blocks);
  } else {
    if constexpr (kConsumers > 1) release_registers<40>();
    if (threadIdx.x == T::kProducerThread)
      produce<T, kColumns>(ring, &x_map, &w_map, tiles, k_blocks, e.shape, block_k);
  }
}

// A persistent grid: as many blocks as fit on the GPU at once, each taking every gridDim-th tile.
template <Operand kOperand, int kColumns, int kConsumers, ResidualKind kResidual, int kBlocks, int kKBytes>
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
  const long long blocks =
      std::min<long long>(tiles, static_cast<long long>(processors) * std::max(per_processor, 1));
  kernel<<<static_cast<unsigned>(blocks), T::kThreads, T::kSharedBytes, stream>>>(m.x, m.w, m.y, m.codes,
                                                                                  m.residual, e);
  return cudaGetLastError();
}

template <Operand kOperand, int kColumns, int kConsumers, int kBlocks, int kKBytes = kRowBytes>
cudaError_t launch(const LaunchMaps& m, const EpilogueArgs& e, cudaStream_t stream) {
  if (e.out.residual != nullptr) {
    return launch_as<kOperand, kColumns, kConsumers, ResidualKind::kHalf, kBlocks, kKBytes>(m, e, stream);
  }
  // Residual codes on the operand's grid (fp16 layers: either grid; gemm_conv_epilogue_takes()).
  if (e.out.residual_codes.codes != nullptr) {
    if constexpr (kOperand != Operand::kS8) {
      if (e.out.residual_grid == CodeGrid::kE4m3) {
        return launch_as<kOperand, kColumns, kConsumers, ResidualKind::kE4m3, kBlocks, kKBytes>(m, e, stream);
      }
    }
    if constexpr (kOperand != Operand::kE4m3) {
      if (e.out.residual_grid == CodeGrid::kInt8) {
        return launch_as<kOperand, kColumns, kConsumers, ResidualKind::kInt8, kBlocks, kKBytes>(m, e, stream);
      }
    }
    return cudaErrorInvalidConfiguration;
  }
  return launch_as<kOperand, kColumns, kConsumers, ResidualKind::kNone, kBlocks, kKBytes>(m, e, stream);
}

}  // namespace gemm_conv_detail

using GemmConvMaps = gemm_conv_detail::LaunchMaps;

// Launches the kernel of `kOperand` tiled as `tile`; cudaErrorInvalidConfiguration for a tile it is not
// instantiated for. Instantiated once per operand type (gemm_conv_f16.cu, gemm_conv_e4m3.cu,
// gemm_conv_s8.cu).
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
  if (n == tile_number({64, 2, 1, kNarrowRowBytes}))
    return launch<kOperand, 64, 2, 1, kNarrowRowBytes>(m, e, stream);
  if (n == tile_number({128, 2, 1, kNarrowRowBytes}))
    return launch<kOperand, 128, 2, 1, kNarrowRowBytes>(m, e, stream);
  if (n == tile_number({256, 2, 1, kNarrowRowBytes}))
    return launch<kOperand, 256, 2, 1, kNarrowRowBytes>(m, e, stream);
  if (n == tile_number({64, 1, 2, kNarrowRowBytes}))
    return launch<kOperand, 64, 1, 2, kNarrowRowBytes>(m, e, stream);
  return cudaErrorInvalidConfiguration;
}

extern template cudaError_t launch_tile<Operand::kF16>(const GemmConvTile&, const GemmConvMaps&,
                                                       const EpilogueArgs&, cudaStream_t);
extern template cudaError_t launch_tile<Operand::kE4m3>(const GemmConvTile&, const GemmConvMaps&,
                                                        const EpilogueArgs&, cudaStream_t);
extern template cudaError_t launch_tile<Operand::kS8>(const GemmConvTile&, const GemmConvMaps&,
                                                      const EpilogueArgs&, cudaStream_t);

}  // namespace kiln::cuda::hopper
